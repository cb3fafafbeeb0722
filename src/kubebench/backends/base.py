"""What every backend implements (submit, status, logs, cancel) and the wait loop they share."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ..paths import RunPaths
from ..spec.base import PluginConfig

JobPhase = Literal["running", "succeeded", "failed"]
Final = Literal["succeeded", "failed", "timeout", "cancelled"]

if TYPE_CHECKING:
    from ..render.job import RenderedJob


@dataclass(frozen=True)
class JobStatus:
    """A backend's view of a job at one moment."""

    phase: JobPhase
    exit_code: int | None = None
    reason: str = ""
    #: A failure of where the job ran (evicted, node lost), not of the job: ``retries`` apply.
    infrastructure: bool = False


@dataclass(frozen=True)
class Outcome:
    """How a job ended."""

    state: Final
    exit_code: int | None
    reason: str
    #: The job failed for its infrastructure, not for itself (see ``BenchmarkSpec.retries``).
    infrastructure: bool = False
    #: What the backend had to clean up after the job (recorded on the run as ``leftover_warning``).
    warning: str = ""


class Backend(ABC):
    """A place jobs run. Subclasses implement the four verbs; the wait loop is shared."""

    Config: ClassVar[type[PluginConfig]]
    #: Wait-loop polling: first interval, growth factor and cap, in seconds.
    poll_first: ClassVar[float] = 0.005
    poll_factor: ClassVar[float] = 1.5
    poll_max: ClassVar[float] = 1.0

    def __init__(self, config: PluginConfig) -> None:
        self.config = config
        self._interrupted = threading.Event()

    @abstractmethod
    def job_paths(self, local: RunPaths) -> RunPaths:
        """The run's folders as the job sees them, given where kubebench sees them."""

    @abstractmethod
    def submit(self, job: RenderedJob, paths: RunPaths) -> Any:
        """Start the job; return a handle for the other verbs."""

    @abstractmethod
    def status(self, handle: Any) -> JobStatus:
        """The job's current phase (cheap; called by the wait loop)."""

    @abstractmethod
    def logs(self, handle: Any, paths: RunPaths) -> None:
        """Make sure each replica's log is in ``paths.output`` as ``<replica-type>-<index>.log``."""

    @abstractmethod
    def cancel(self, handle: Any) -> None:
        """Stop everything the job started; safe to call on a finished job."""

    def finished(self, handle: Any) -> str | None:
        """Called once the job has ended by itself; backends clean up what is left over here, and
        say what they found still running (a warning recorded on the run), if anything."""

    def provenance(self, handle: Any) -> dict[str, Any]:
        """Where the job ran, added to the run's provenance (Kubernetes: ``node``, ``image``); may be empty."""
        return {}

    def prepare(self, manifest: dict[str, Any], paths: RunPaths) -> dict[str, Any]:
        """Add what this backend needs to a rendered manifest (in place); ``paths`` as the job sees them."""
        return manifest

    def interrupt(self) -> None:
        """Make every ``wait`` in progress, in any thread, cancel its job and raise KeyboardInterrupt."""
        self._interrupted.set()

    def abort(self) -> None:
        """Stop every job in flight at once, without waiting (a second Ctrl-C): best effort, called
        from a signal handler just before the process exits, so it must not block or take locks."""

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Stop what a killed runner left running for these runs (their jobs as rendered now), so that
        nothing of an earlier attempt writes into a run's folder once it is redone."""

    def sleep(self, seconds: float) -> None:
        """Sleep (between two attempts of a run); an interrupt ends it with KeyboardInterrupt."""
        if self._interrupted.wait(seconds):
            raise KeyboardInterrupt

    def pause(self, handle: Any, seconds: float) -> None:
        """Sleep between two status checks; backends told of changes may wake up earlier."""
        time.sleep(seconds)

    def close(self) -> None:
        """Release what the backend holds (connections, watches) once an experiment is done."""

    def wait(self, handle: Any, timeout: float) -> Outcome:
        """Wait until the job ends or ``timeout`` seconds pass (then cancel it: state ``timeout``).

        Polls with exponential backoff, so short jobs are seen finishing at once and long ones
        cost few calls. On an interrupt (Ctrl-C) the job is cancelled before the error goes on.
        """
        deadline = time.monotonic() + timeout
        interval = self.poll_first
        try:
            while True:
                if self._interrupted.is_set():
                    raise KeyboardInterrupt
                status = self.status(handle)
                if status.phase != "running":
                    warning = self.finished(handle) or ""
                    return Outcome(status.phase, status.exit_code, status.reason, status.infrastructure, warning)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.cancel(handle)
                    return Outcome("timeout", None, f"timed out after {_seconds(timeout)}")
                self.pause(handle, min(interval, remaining))
                interval = min(interval * self.poll_factor, self.poll_max)
        except BaseException:
            self.cancel(handle)
            raise


def _seconds(value: float) -> str:
    return f"{value:g}s" if value < 120 else f"{value / 60:g}m"
