"""What every backend implements and the wait loop they share.

A backend runs a rendered job and answers for everything that depends on where it ran, so that
nothing else tells backends apart. Its :class:`JobVerbs` are what it does with one job:
``submit`` → ``status`` (polled by the shared :meth:`Backend.wait`) → ``collect`` (the replicas' logs into the run's ``output/``) → ``release`` (what the ended job
still holds), plus ``cancel``, where the job's telemetry comes from (:class:`ProcessTelemetry` or
:class:`PodTelemetry`) and where it ran (``provenance``). Its :class:`Lifecycle` hooks are what it
does once per experiment, around the jobs (the spec's folder, preflight checks, setup and teardown).

The run's clock starts when the job is admitted, not when it is submitted: a job waiting in a queue
(Kueue) is ``queued``, and the time it waited is reported apart (``Outcome.queued_seconds``).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar, Union

from ..errors import Cancelled
from ..paths import RunPaths
from ..spec.base import PluginConfig

JobPhase = Literal["queued", "running", "succeeded", "failed"]
Final = Literal["succeeded", "failed", "timeout", "cancelled"]
#: A backend's handle of one job it started (``LocalJob``, ``KubeJob``).
H = TypeVar("H")
#: A backend's options, as the spec's ``backend:`` gives them (``LocalConfig``, ``KubernetesConfig``).
C = TypeVar("C", bound=PluginConfig)

if TYPE_CHECKING:
    from ..render.job import RenderedJob
    from ..timeline import Boundary


@dataclass(frozen=True)
class JobStatus:
    """A backend's view of a job at one moment (``queued``: waiting to be admitted, not yet started)."""

    phase: JobPhase
    exit_code: int | None = None
    reason: str = ""
    #: A failure of where the job ran (evicted, node lost, preempted), not of the job: ``retries`` apply.
    infrastructure: bool = False


@dataclass(frozen=True)
class Outcome:
    """How a job ended."""

    state: Final
    exit_code: int | None
    reason: str
    #: The job failed for its infrastructure, not for itself (see ``BenchmarkSpec.retries``).
    infrastructure: bool = False
    #: Seconds the job waited to be admitted before the run's clock started; None if it never waited.
    queued_seconds: float | None = None
    #: What the backend had to clean up after the job (recorded on the run as ``leftover_warning``).
    warning: str = ""


@dataclass(frozen=True)
class Check:
    """One finding of ``kubebench doctor``: ``ok``, ``warn`` (runs may still work) or ``fail``."""

    name: str
    state: Literal["ok", "warn", "fail"]
    detail: str = ""


@dataclass(frozen=True)
class ProcessTelemetry:
    """The job's replicas are processes of this machine: sample them."""

    pids: tuple[int, ...]


@dataclass(frozen=True)
class PodTelemetry:
    """The job's replicas are pods: read their series (cAdvisor, DCGM) from Prometheus."""

    namespace: str
    #: Regular expression matching the names of the job's pods.
    pods: str


TelemetrySource = Union[ProcessTelemetry, PodTelemetry]


class Lifecycle:
    """What a backend does once per experiment, around its jobs: the runner calls ``give_spec``,
    ``check`` (or ``doctor``), ``begin`` under the experiment's lock, ``reclaim`` for runs a killed
    runner left, and ``close`` at the end; ``interrupt`` and ``abort`` come from a cancel."""

    def __init__(self) -> None:
        self._interrupted = threading.Event()

    def give_spec(self, spec_file: Path) -> None:
        """The spec's file, before any job is rendered: a backend whose jobs run on other machines
        gives them its folder (Kubernetes: a ConfigMap, their working directory). A SpecError when
        the folder cannot go with them."""

    def check(self, manifests: list[dict[str, Any]]) -> None:
        """Before anything runs: can jobs like these (one per trial) run here at all? Raises
        PreflightError, so that an experiment stops once instead of failing every run."""

    def doctor(self, manifests: list[dict[str, Any]], local: RunPaths) -> list[Check]:
        """Everything that must hold for jobs like these to run here, each checked (``kubebench doctor``);
        ``local``: a run's folders as kubebench sees them."""
        return [Check("backend", "ok", "jobs run as processes of this machine")]

    def begin(self, experiment_id: str) -> None:
        """Once the experiment's lock is held, before its first job: set up what all its jobs share
        (Kubernetes: the spec folder's ConfigMap); ``close`` undoes it."""

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Stop what a killed runner left running for these runs (their jobs as rendered now), so that
        nothing of an earlier attempt writes into a run's folder once it is redone."""

    def interrupt(self) -> None:
        """Make every ``wait`` in progress, in any thread, cancel its job and raise :class:`Cancelled`."""
        self._interrupted.set()

    def abort(self) -> None:
        """Stop every job in flight at once, without waiting (a second Ctrl-C): best effort, called
        from a signal handler just before the process exits, so it must not block or take locks."""

    def sleep(self, seconds: float) -> None:
        """Sleep (between two attempts of a run); an interrupt ends it with :class:`Cancelled`."""
        if self._interrupted.wait(seconds):
            raise Cancelled

    def close(self) -> None:
        """Release what the backend holds (connections, watches) once an experiment is done."""


class JobVerbs(ABC, Generic[H]):
    """What a backend does with one job, handle ``H``: ``prepare`` its manifest, ``submit`` it, then
    ``status`` (polled by :meth:`Backend.wait`), ``collect`` its logs, ``release`` it; ``cancel`` on
    the way out. A backend that runs several job kinds gives each its own driver behind these verbs."""

    @abstractmethod
    def job_paths(self, local: RunPaths) -> RunPaths:
        """The run's folders as the job sees them, given where kubebench sees them."""

    def prepare(self, manifest: dict[str, Any], paths: RunPaths) -> dict[str, Any]:
        """``manifest`` with what this backend needs added (``paths``: as the job sees them), as a
        new manifest: the one given is left as it is."""
        return manifest

    def objects(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """What submitting ``manifest`` creates (``kubebench render`` prints it): the manifest itself,
        unless the backend carries it out as other objects."""
        return [manifest]

    @abstractmethod
    def submit(self, job: RenderedJob, paths: RunPaths) -> H:
        """Start the job (``paths``: the run's folders as kubebench sees them); return its handle."""

    @abstractmethod
    def status(self, handle: H) -> JobStatus:
        """The job's current phase (cheap; called by the wait loop)."""

    @abstractmethod
    def collect(self, handle: H, paths: RunPaths) -> list[str]:
        """Make sure each replica's log is in ``paths.output`` as ``<replica-type>-<index>.log``.

        Never fails the run: what could not be read is returned as warnings, recorded on the run.
        """

    def release(self, handle: H) -> None:
        """Free what the ended job still holds, once its logs are collected (Kubernetes: delete it)."""

    @abstractmethod
    def cancel(self, handle: H) -> None:
        """Stop everything the job started; safe to call on a finished job."""

    def finished(self, handle: H) -> str | None:
        """Called once the job has ended by itself; backends clean up what is left over here, and
        say what they found still running (a warning recorded on the run), if anything."""

    def timed_out(self, handle: H) -> None:
        """Stop a job that ran past its timeout (its logs are collected afterwards)."""
        self.cancel(handle)

    def pause(self, handle: H, seconds: float) -> None:
        """Sleep between two status checks; backends told of changes may wake up earlier."""
        time.sleep(seconds)

    @property
    def queue_timeout(self) -> float | None:
        """Seconds a job may wait to be admitted before its run times out; None: as long as it takes."""
        return None

    def telemetry(self, handle: H) -> TelemetrySource | None:
        """Where the job's resource usage can be read from; None when nowhere."""
        return None

    def provenance(self, handle: H) -> dict[str, Any]:
        """Where the job ran, for the run's provenance: by default this machine (host, CPU, GPUs …)."""
        from ..provenance import machine

        return dict(machine())

    def notes(self, handle: H) -> dict[str, str]:
        """What the run's info should say about how its job ran (a warning such as ``gang_warning``)."""
        return {}

    def timeline(self, handle: H) -> list[Boundary]:
        """The moments of the job this backend knows (submitted, scheduled, started, exited, deleted …;
        see :mod:`kubebench.timeline`), once it is released: the workload's own marks are read from
        its logs apart. Never fails the run: what cannot be read is left out."""
        return []


class Backend(Lifecycle, JobVerbs[H], Generic[H, C]):
    """A place jobs run: the experiment's :class:`Lifecycle` and the :class:`JobVerbs` of its jobs.
    Subclasses implement the verbs; the wait loop is shared.

    Typed over its job handle ``H`` and its options ``C`` (the class it names as ``Config``).
    """

    Config: ClassVar[type[PluginConfig]]
    #: Wait-loop polling: first interval, growth factor and cap, in seconds.
    poll_first: ClassVar[float] = 0.005
    poll_factor: ClassVar[float] = 1.5
    poll_max: ClassVar[float] = 1.0

    def __init__(self, config: C) -> None:
        super().__init__()
        self.config: C = config

    def wait(self, handle: H, timeout: float) -> Outcome:
        """Wait until the job ends or ``timeout`` seconds pass after its admission (then stop it:
        state ``timeout``); a job still queued after ``queue_timeout`` times out too.

        Polls with exponential backoff, so short jobs are seen finishing at once and long ones
        cost few calls. On an interrupt (Ctrl-C, a cancel) the job is cancelled before the error goes on.
        """
        submitted, interval = time.monotonic(), self.poll_first
        deadline: float | None = None
        queued: float | None = None
        try:
            while True:
                if self._interrupted.is_set():
                    raise Cancelled
                status, now = self.status(handle), time.monotonic()
                if status.phase == "queued":  # the run's clock starts at admission
                    deadline, queued = None, now - submitted
                    limit = self.queue_timeout
                    if limit is not None and queued >= limit:
                        self.timed_out(handle)
                        why = f": {status.reason}" if status.reason else ""
                        return Outcome("timeout", None, f"still queued after {_seconds(limit)}{why}", queued_seconds=queued)
                    remaining = (limit - queued) if limit is not None else interval
                else:
                    if deadline is None:  # admitted: the run's clock starts now
                        deadline = now + timeout
                        queued = None if queued is None else now - submitted
                    if status.phase != "running":
                        warning = self.finished(handle) or ""
                        return Outcome(status.phase, status.exit_code, status.reason, status.infrastructure,
                                       queued_seconds=queued, warning=warning)
                    remaining = deadline - now
                    if remaining <= 0:
                        self.timed_out(handle)
                        return Outcome("timeout", None, f"timed out after {_seconds(timeout)}", queued_seconds=queued)
                self.pause(handle, min(interval, remaining))
                interval = min(interval * self.poll_factor, self.poll_max)
        except BaseException:
            self.cancel(handle)
            raise


def _seconds(value: float) -> str:
    return f"{value:g}s" if value < 120 else f"{value / 60:g}m"
