"""MLPerf-style logging: ``:::MLLOG {json}`` lines in the format of the mlperf-logging package
(``mlperf_logging.mllog``), written without needing that package in the job's image.

Each line is ``:::MLLOG `` followed by a JSON object with, in this order, ``namespace``, ``time_ms``
(milliseconds since the epoch), ``event_type`` (``POINT_IN_TIME``, ``INTERVAL_START`` or
``INTERVAL_END``), ``key``, ``value`` and ``metadata`` (the caller's ``file`` and ``lineno`` plus
the event's own fields, e.g. ``epoch_num``). Key names follow ``mlperf_logging.mllog.constants``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any

PREFIX = ":::MLLOG "


class MLLogger:
    """Writes MLPerf log events to ``stream`` (stdout by default); a disabled logger writes nothing,
    so that every rank can call it and only rank 0's lines appear.
    """

    def __init__(self, stream: IO[str] | None = None, namespace: str = "", enabled: bool = True,
                 clock: Callable[[], float] = time.time) -> None:
        self.stream = stream
        self.namespace = namespace
        self.enabled = enabled
        self.clock = clock

    def event(self, key: str, value: Any = None, metadata: dict[str, Any] | None = None) -> None:
        """A point in time (hyper-parameters, results)."""
        self._emit("POINT_IN_TIME", key, value, metadata)

    def start(self, key: str, value: Any = None, metadata: dict[str, Any] | None = None) -> None:
        """The start of an interval, e.g. ``run_start``, or ``epoch_start`` with ``{"epoch_num": 1}``."""
        self._emit("INTERVAL_START", key, value, metadata)

    def end(self, key: str, value: Any = None, metadata: dict[str, Any] | None = None) -> None:
        """The end of an interval, e.g. ``run_stop`` with ``metadata={"status": "success"}``."""
        self._emit("INTERVAL_END", key, value, metadata)

    def _emit(self, event_type: str, key: str, value: Any, metadata: dict[str, Any] | None) -> None:
        if not self.enabled:
            return
        caller = sys._getframe(2)  # the workload's line that logged the event
        record = {
            "namespace": self.namespace,
            "time_ms": int(self.clock() * 1000),
            "event_type": event_type,
            "key": key,
            "value": value,
            "metadata": {"file": caller.f_code.co_filename, "lineno": caller.f_lineno, **(metadata or {})},
        }
        print(PREFIX + json.dumps(record), file=self.stream or sys.stdout, flush=True)
