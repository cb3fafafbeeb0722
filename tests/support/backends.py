"""The suite's one scripted backend: fault injection at the backend boundary.

:class:`ScriptedBackend` is the local backend with its job verbs scripted: nothing is started, each
``wait`` answers what the test says, each verb can be made to raise, and what the runner asked of it
(submit, cancel, release, provenance, reclaim, the sleep between attempts) is recorded, not done."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from kubebench.backends.base import Outcome
from kubebench.backends.local import LocalBackend, LocalConfig
from kubebench.paths import RunPaths

SUCCEEDED = Outcome("succeeded", 0, "")


class ScriptedBackend(LocalBackend):
    """Starts nothing; its handle is a name: ``handle``, else ``job-<N>`` for the N-th submit.

    - ``wait`` calls ``after_wait(paths)``, then answers the next of ``waits`` (an :class:`Outcome`,
      or an exception it raises), then success;
    - ``collect`` writes ``log`` as worker-0's log, puts a folder where ``run.json`` goes when
      ``block_record``, and returns ``warnings``;
    - ``submit``, ``cancel``, ``release`` and ``reclaim`` raise the error given for them (after
      recording the call, but for ``submit``);
    - ``provenance`` answers ``provenance``, else ``{"job": handle}``; ``telemetry`` is None.
    """

    def __init__(self, *waits: Outcome | BaseException, handle: str | None = None,
                 submit: BaseException | None = None, cancel: BaseException | None = None,
                 release: BaseException | None = None, reclaim: BaseException | None = None,
                 warnings: tuple[str, ...] = (), log: str = "", block_record: bool = False,
                 after_wait: Callable[[RunPaths], object] | None = None,
                 provenance: dict[str, Any] | None = None) -> None:
        super().__init__(LocalConfig())
        self.waits, self.handle, self.after_wait = list(waits), handle, after_wait
        self.errors = {"submit": submit, "cancel": cancel, "release": release, "reclaim": reclaim}
        self.warnings, self.log, self.block_record, self.answer = list(warnings), log, block_record, provenance
        self.submitted: list[str] = []
        self.cancelled: list[Any] = []
        self.released: list[Any] = []
        self.asked: list[Any] = []
        self.reclaimed: list[list[str]] = []
        self.slept: list[float] = []
        self.paths: RunPaths | None = None

    def _fail(self, verb: str) -> None:
        error = self.errors[verb]
        if error is not None:
            raise error

    def submit(self, job, paths) -> str:
        self._fail("submit")
        self.submitted.append(self.handle or f"job-{len(self.submitted) + 1}")
        self.paths = paths
        return self.submitted[-1]

    def telemetry(self, handle):
        return None

    def wait(self, handle, timeout: float) -> Outcome:
        if self.after_wait is not None:
            self.after_wait(self.paths)
        answer = self.waits.pop(0) if self.waits else SUCCEEDED
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def collect(self, handle, paths) -> list[str]:
        if self.log:
            (Path(paths.output) / "worker-0.log").write_text(self.log, encoding="utf-8")
        if self.block_record:  # run.json cannot be written: a folder is in its place
            (Path(paths.run) / "run.json").mkdir()
        return list(self.warnings)

    def cancel(self, handle) -> None:
        self.cancelled.append(handle)
        self._fail("cancel")

    def release(self, handle) -> None:
        self.released.append(handle)
        self._fail("release")

    def provenance(self, handle) -> dict:
        self.asked.append(handle)
        return dict(self.answer) if self.answer is not None else {"job": handle}

    def timeline(self, handle) -> list:
        """No moments: nothing ran (the workload's marks, if any, come from the run's logs)."""
        return []

    def reclaim(self, leftovers) -> None:
        self.reclaimed.append([str(paths.run) for _, paths in leftovers])
        self._fail("reclaim")

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
