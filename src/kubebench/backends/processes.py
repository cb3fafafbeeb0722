"""A job's replicas as process groups of this machine: what every job kind of the local backend
shares. Each kind has its driver (:class:`LocalDriver`: how its jobs start and how their status
reads); stopping a job, its logs and what it left running are the same for all of them.
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Generic, Self, TypeVar

from ..errors import BackendError, InfrastructureError
from ..redact import job_environment
from ..timeline import Boundary
from . import orphans
from .base import JobStatus
from .reasons import exit_code, exit_reason

if TYPE_CHECKING:
    from ..paths import RunPaths
    from ..render.job import RenderedJob
    from ..render.kinds import ReplicaGroup

LOCALHOST = "127.0.0.1"
#: Errors of starting a process that say the machine is out of something, not that the job is wrong.
INFRASTRUCTURE_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})
#: The resolution of kubebench's own clock readings (``time.time``).
_CLOCK = 1e-6


@dataclass(frozen=True)
class ReplicaLaunch:
    """One process to start: which replica it is, its argv and its extra environment."""

    type: str
    index: int
    argv: tuple[str, ...]
    env: dict[str, str]

    @property
    def name(self) -> str:
        """``<replica-type>-<index>``, also the name of its log file."""
        return f"{self.type}-{self.index}"


@dataclass(eq=False)
class LocalJob:
    """Handle of a running local job; ``driver``: its kind's, which answers the job verbs for it."""

    driver: LocalDriver[Self]
    processes: list[tuple[ReplicaLaunch, subprocess.Popen]] = field(default_factory=list)
    logs: list[IO[bytes]] = field(default_factory=list)
    #: The run's folder and id, as in its replicas' environment: what finds what they left running.
    run_folder: str = ""
    run_id: str = ""
    #: Processes found still running, and stopped, once the replicas were (``pid 123 (sleep)``).
    escaped: list[str] = field(default_factory=list)
    #: When the job was submitted, and each replica's process spawned and seen ended (unix seconds).
    submitted_at: float = field(default_factory=time.time)
    spawned: dict[str, float] = field(default_factory=dict)
    exited: dict[str, float] = field(default_factory=dict)


J = TypeVar("J", bound=LocalJob)


class LocalDriver(ABC, Generic[J]):
    """One job kind on this machine: ``submit`` and ``status`` are the kind's own; ``collect``,
    ``cancel``, ``finished`` and ``release`` stop and close process groups, as every kind's do.

    ``live`` is the backend's set of jobs started and not yet stopped (for ``abort``).
    """

    def __init__(self, kill_grace: float, live: set[LocalJob]) -> None:
        self.kill_grace, self.live = kill_grace, live

    @abstractmethod
    def submit(self, job: RenderedJob, paths: RunPaths) -> J:
        """Start the job's processes (what starts first is the kind's); its handle."""

    @abstractmethod
    def status(self, handle: J) -> JobStatus:
        """The job's phase, from its processes."""

    def collect(self, handle: J) -> list[str]:
        """Logs are written in place; only close the files."""
        close_logs(handle)
        return []

    def release(self, handle: J) -> None:
        """Nothing: an ended job's processes were stopped once it ended (``finished``)."""

    def cancel(self, handle: J) -> None:
        """SIGTERM every replica's process group, then SIGKILL what is left after the grace."""
        groups = [p.pid for _, p in handle.processes]
        signal_groups(groups, signal.SIGTERM)
        deadline = time.monotonic() + self.kill_grace
        for _, process in handle.processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        signal_groups(groups, signal.SIGKILL)
        for launch, process in handle.processes:
            process.wait()
            handle.exited.setdefault(launch.name, time.time())
        if groups:  # and what left the replicas' groups (a daemon started with setsid)
            handle.escaped += orphans.stop_escaped(handle.run_folder, handle.run_id, min(groups), set(groups))
        close_logs(handle)
        self.live.discard(handle)

    def finished(self, handle: J) -> str | None:
        """Stop the other replicas of a failed job, and anything a replica left behind; say what
        had left the replicas' process groups and was still running (it would skew the next runs)."""
        self.cancel(handle)
        if not handle.escaped:
            return None
        more = len(handle.escaped) - 5
        shown = ", ".join(handle.escaped[:5]) + (f" and {more} more" if more > 0 else "")
        return f"stopped {len(handle.escaped)} process(es) still running after the job ended: {shown}"

    def timeline(self, handle: J) -> list[Boundary]:
        """Submitted, each replica's process spawned and seen ended (kubebench's clock)."""
        found = [Boundary("submitted", handle.submitted_at, "observed", _CLOCK, "", "submit called")]
        found += [Boundary("started", t, "observed", _CLOCK, name, "process spawned") for name, t in handle.spawned.items()]
        found += [Boundary("exited", t, "observed", _CLOCK, name, "process seen ended") for name, t in handle.exited.items()]
        return found

    def track(self, handle: J) -> J:
        """Count ``handle`` among the jobs in flight (from here on, ``abort`` kills it)."""
        self.live.add(handle)
        return handle

    def start(self, handle: J, launch: ReplicaLaunch, output: Path, workdir: Path) -> None:
        """Start one replica in its own process group, logging to ``output/<type>-<index>.log``."""
        log: IO[bytes] = open(output / f"{launch.name}.log", "wb")
        handle.logs.append(log)
        process = subprocess.Popen(
            launch.argv,
            env={**job_environment(os.environ), **launch.env},  # no token, no store credentials
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so that it can be stopped whole
        )
        handle.spawned[launch.name] = time.time()
        handle.processes.append((launch, process))


def start_error(e: OSError, what: str) -> BackendError:
    """The error of a process that could not start: the machine's (retried) or the job's."""
    error = InfrastructureError if e.errno in INFRASTRUCTURE_ERRNOS else BackendError
    return error(f"cannot start {what}: {e.strerror or e}")


def ended(handle: LocalJob, types: frozenset[str] | None = None) -> JobStatus:
    """Failed as soon as one replica (of ``types``, default all) fails; succeeded when all have exited 0."""
    running = False
    for launch, process in handle.processes:
        if types is not None and launch.type not in types:
            continue
        code = process.poll()
        if code is None:
            running = True
            continue
        handle.exited.setdefault(launch.name, time.time())
        if code != 0:
            return JobStatus("failed", exit_code(code), f"{launch.name} {exit_reason(code)}")
    return JobStatus("running") if running else JobStatus("succeeded", 0)


def kill_all(handles: set[LocalJob]) -> None:
    """SIGKILL the process group of every replica of ``handles``; wait for none."""
    for handle in list(handles):
        signal_groups([p.pid for _, p in list(handle.processes)], signal.SIGKILL)


def close_logs(handle: LocalJob) -> None:
    """Close the replicas' log files (their processes keep their own descriptors)."""
    for log in handle.logs:
        log.close()


def signal_groups(groups: list[int], sig: signal.Signals) -> None:
    """Send ``sig`` to each process group of ``groups``; one that has exited whole is skipped."""
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass  # the whole group has already exited


def main_container(group: ReplicaGroup) -> dict:
    """The first container of a replica group's pod template (the one the local backend runs)."""
    containers = group.template.get("spec", {}).get("containers") or []
    if not containers:
        raise BackendError(f"replica type {group.type!r} has no containers")
    return containers[0]


def container_env(container: dict) -> dict[str, str]:
    """A container's ``env`` as a mapping (values as given; ``valueFrom`` has no local meaning)."""
    return {e["name"]: str(e.get("value", "")) for e in container.get("env") or [] if "name" in e}


def local_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """A container's command as this machine runs it."""
    # The image's `python` is this interpreter locally, so that workloads see kubebench's packages.
    if argv[0] in ("python", "python3"):
        return (sys.executable, *argv[1:])
    if argv[0] == "torchrun":  # this interpreter's torchrun, which runs a script or module with it
        argv = (sys.executable, "-m", "torch.distributed.run", *argv[1:])
    if argv[0] in ("mpirun", "mpiexec") or "--no-python" in argv:
        # A launcher's program is the first bare `python` after its options (`mpirun -np 2 python …`,
        # `torchrun --no-python python …`).
        first = next((i for i, a in enumerate(argv) if a in ("python", "python3")), None)
        if first is not None:
            return (*argv[:first], sys.executable, *argv[first + 1:])
    return argv


def visible_gpus() -> list[str]:
    """The GPUs processes started here may use: ``CUDA_VISIBLE_DEVICES`` when set, else every GPU
    NVML sees (none without a driver or nvidia-ml-py)."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [d.strip() for d in given.split(",") if d.strip()]
    try:
        import pynvml
    except ImportError:
        return []
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError):
        return []
    try:
        return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except pynvml.NVMLError:
        return []
    finally:
        pynvml.nvmlShutdown()


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind((LOCALHOST, 0))
        return s.getsockname()[1]
