"""How a download shows its progress: a bar on a terminal (rich, on stderr), a log line elsewhere."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, Protocol

log = logging.getLogger("kubebench")


class Meter(Protocol):
    """Told of a download's bytes as they arrive."""

    def start(self, name: str, total: int | None, done: int) -> None: ...
    def advance(self, count: int) -> None: ...
    def finish(self) -> None: ...


class LogMeter:
    """One log line when a download starts (or resumes) and one when it ends, with its rate."""

    def __init__(self) -> None:
        self.name, self.done, self.started, self.first = "", 0, 0.0, 0

    def start(self, name: str, total: int | None, done: int) -> None:
        self.name, self.done, self.first, self.started = name, done, done, time.monotonic()
        size = f"{total:,} bytes" if total is not None else "size unknown"
        resumed = f", resuming at {done:,}" if done else ""
        log.info("dataset %s: downloading (%s%s)", name, size, resumed)

    def advance(self, count: int) -> None:
        self.done += count

    def finish(self) -> None:
        seconds = max(time.monotonic() - self.started, 1e-9)
        log.info("dataset %s: %s bytes in %.1f s (%.1f MB/s)", self.name, f"{self.done:,}", seconds,
                 (self.done - self.first) / seconds / 1e6)


class BarMeter(LogMeter):
    """A progress bar on stderr (rich), gone once the download ends."""

    def __init__(self) -> None:
        super().__init__()
        self._bar: Any = None
        self._task: Any = None

    def start(self, name: str, total: int | None, done: int) -> None:
        from rich.markup import escape
        from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

        super().start(name, total, done)
        self._bar = Progress(*Progress.get_default_columns(), DownloadColumn(), TransferSpeedColumn(),
                             transient=True, console=_stderr())
        self._bar.start()
        self._task = self._bar.add_task(f"dataset {escape(name)}", total=total, completed=done)

    def advance(self, count: int) -> None:
        super().advance(count)
        if self._bar is not None:
            self._bar.advance(self._task, count)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        super().finish()


def _stderr():
    from ..present.text import SafeConsole

    return SafeConsole(stderr=True)


def announce(text: str) -> None:
    """A line about the data step: on stderr when it is a terminal (someone waits for it), else logged."""
    if sys.stderr.isatty():
        _stderr().print(text, highlight=False)
    else:
        log.info("%s", text)


def meter() -> Meter:
    """A bar on a terminal, log lines elsewhere."""
    return BarMeter() if sys.stderr.isatty() else LogMeter()
