"""The embedded default: every replica of a job runs as a local process, with the environment
that Kubeflow's operator would give its pod, so the same rendered job runs on Kubernetes unchanged.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

from ..errors import BackendError, InfrastructureError
from ..paths import RunPaths
from ..redact import job_environment
from ..render.kinds import ReplicaGroup, replica_groups
from ..spec.base import PluginConfig
from . import orphans
from .base import Backend, JobStatus, ProcessTelemetry
from .reasons import exit_code, exit_reason

LOCALHOST = "127.0.0.1"
#: Errors of starting a process that say the machine is out of something, not that the job is wrong.
_INFRASTRUCTURE_ERRNOS = frozenset({errno.EAGAIN, errno.ENOMEM, errno.EMFILE, errno.ENFILE})

if TYPE_CHECKING:
    from ..render.job import RenderedJob


class LocalConfig(PluginConfig):
    """Options of ``backend: {kind: local}``."""

    kind: Literal["local"] = "local"
    #: Seconds between SIGTERM and SIGKILL when a job is stopped.
    kill_grace: float = 3.0


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
    """Handle of a running local job."""

    processes: list[tuple[ReplicaLaunch, subprocess.Popen]] = field(default_factory=list)
    logs: list[IO[bytes]] = field(default_factory=list)
    #: The run's folder and id, as in its replicas' environment: what finds what they left running.
    run_folder: str = ""
    run_id: str = ""
    #: Processes found still running, and stopped, once the replicas were (``pid 123 (sleep)``).
    escaped: list[str] = field(default_factory=list)


class LocalBackend(Backend[LocalJob, LocalConfig]):
    """Runs replicas as process groups on this machine; stops them all on cancel or timeout."""

    Config = LocalConfig
    # Polling a child is one cheap waitpid: poll often so short runs are seen ending at once.
    poll_first = 0.001
    poll_factor = 1.25
    poll_max = 0.1

    def __init__(self, config: LocalConfig) -> None:
        super().__init__(config)
        # Jobs started and not yet stopped, for abort(). Only set operations (atomic under the GIL)
        # touch it: abort() runs in a signal handler that may interrupt any of them.
        self._live: set[LocalJob] = set()

    def job_paths(self, local: RunPaths) -> RunPaths:
        """Local processes see the same folders as kubebench."""
        return local

    def submit(self, job: RenderedJob, paths: RunPaths) -> LocalJob:
        """Start every replica in its own process group, logging to ``output/<type>-<index>.log``."""
        if job.manifest.get("kind") == "Serving":
            return self._submit_serving(job, paths)
        launches = plan_launches(job.manifest, Path(paths.config))
        handle = LocalJob(run_folder=str(paths.run), run_id=paths.run_id)
        self._live.add(handle)
        try:
            for launch in launches:
                log = open(Path(paths.output) / f"{launch.name}.log", "wb")
                handle.logs.append(log)
                process = subprocess.Popen(
                    launch.argv,
                    env={**job_environment(os.environ), **launch.env},  # no token, no store credentials
                    cwd=job.workdir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, so that it can be stopped whole
                )
                handle.processes.append((launch, process))
        except OSError as e:
            self.cancel(handle)
            error = InfrastructureError if e.errno in _INFRASTRUCTURE_ERRNOS else BackendError
            raise error(f"cannot start {launch.name} ({launch.argv[0]}): {e.strerror or e}") from e
        except BaseException:  # Ctrl-C between two starts: no replica may outlive its job
            self.cancel(handle)
            raise
        return handle

    def _submit_serving(self, job: RenderedJob, paths: RunPaths) -> LocalJob:
        """``kind: Serving``: servers now, the load generator once they are ready (see :mod:`.serving`)."""
        from .serving import ServingJob, submit_serving

        handle = ServingJob(run_folder=str(paths.run), run_id=paths.run_id)
        self._live.add(handle)
        try:
            return submit_serving(job.manifest, Path(paths.output), job.workdir, handle)
        except OSError as e:
            self.cancel(handle)
            error = InfrastructureError if e.errno in _INFRASTRUCTURE_ERRNOS else BackendError
            raise error(f"cannot start the server: {e.strerror or e}") from e
        except BaseException:
            self.cancel(handle)
            raise

    def status(self, handle: LocalJob) -> JobStatus:
        """Failed as soon as one replica fails; succeeded when all have exited 0."""
        from .serving import ServingJob  # here: .serving builds on this module

        if isinstance(handle, ServingJob):  # servers, readiness, then its load generator
            return handle.status()
        running = False
        for launch, process in handle.processes:
            code = process.poll()
            if code is None:
                running = True
            elif code != 0:
                return JobStatus("failed", exit_code(code), f"{launch.name} {exit_reason(code)}")
        return JobStatus("running") if running else JobStatus("succeeded", 0)

    def collect(self, handle: LocalJob, paths: RunPaths) -> list[str]:
        """Logs are written in place; only close the files."""
        _close_logs(handle)
        return []

    def telemetry(self, handle: LocalJob) -> ProcessTelemetry:
        """The replicas' processes, sampled on this machine."""
        return ProcessTelemetry(tuple(process.pid for _, process in handle.processes))

    def cancel(self, handle: LocalJob) -> None:
        """SIGTERM every replica's process group, then SIGKILL what is left after the grace."""
        groups = [p.pid for _, p in handle.processes]
        _signal_groups(groups, signal.SIGTERM)
        deadline = time.monotonic() + self.config.kill_grace
        for _, process in handle.processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        _signal_groups(groups, signal.SIGKILL)
        for _, process in handle.processes:
            process.wait()
        if groups:  # and what left the replicas' groups (a daemon started with setsid)
            handle.escaped += orphans.stop_escaped(handle.run_folder, handle.run_id, min(groups), set(groups))
        _close_logs(handle)
        self._live.discard(handle)

    def finished(self, handle: LocalJob) -> str | None:
        """Stop the other replicas of a failed job, and anything a replica left behind; say what
        had left the replicas' process groups and was still running (it would skew the next runs)."""
        self.cancel(handle)
        if not handle.escaped:
            return None
        more = len(handle.escaped) - 5
        shown = ", ".join(handle.escaped[:5]) + (f" and {more} more" if more > 0 else "")
        return f"stopped {len(handle.escaped)} process(es) still running after the job ended: {shown}"

    def abort(self) -> None:
        """SIGKILL the process group of every replica started and not yet stopped; wait for none."""
        for handle in list(self._live):
            _signal_groups([p.pid for _, p in list(handle.processes)], signal.SIGKILL)

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Kill the processes a killed runner left running in these runs (see :mod:`.orphans`)."""
        orphans.stop({str(paths.run) for _, paths in leftovers})


def _close_logs(handle: LocalJob) -> None:
    for log in handle.logs:
        log.close()


def _signal_groups(groups: list[int], sig: signal.Signals) -> None:
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass  # the whole group has already exited


def plan_launches(manifest: dict, config_dir: Path) -> list[ReplicaLaunch]:
    """The processes that emulate the operator of ``manifest``'s kind on this machine."""
    kind = manifest.get("kind")
    groups = replica_groups(manifest)
    replicas = [(g, i) for g in groups for i in range(g.count)]
    operator_env = _operator_env(kind, replicas, config_dir)
    launches = []
    for rank, (group, index) in enumerate(replicas):
        if kind == "MPIJob" and group.type == "worker":
            continue  # an MPI worker only hosts the ranks that mpirun starts (on a cluster: sshd)
        container = _main_container(group)
        argv = tuple(container.get("command") or ()) + tuple(container.get("args") or ())
        if not argv:
            raise BackendError(f"{group.type}-{index}: no command; the local backend cannot run an image's entrypoint")
        env = {**_container_env(container), **operator_env(rank, group.type, index)}
        env |= {"KUBEBENCH_REPLICA_TYPE": group.type, "KUBEBENCH_REPLICA_INDEX": str(index)}
        launches.append(ReplicaLaunch(group.type, index, _local_argv(argv), env))
    return launches


def _main_container(group: ReplicaGroup) -> dict:
    containers = group.template.get("spec", {}).get("containers") or []
    if not containers:
        raise BackendError(f"replica type {group.type!r} has no containers")
    return containers[0]


def _container_env(container: dict) -> dict[str, str]:
    return {e["name"]: str(e.get("value", "")) for e in container.get("env") or [] if "name" in e}


def _local_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    # The image's `python` is this interpreter locally, so that workloads see kubebench's packages.
    if argv[0] in ("python", "python3"):
        return (sys.executable, *argv[1:])
    if argv[0] in ("mpirun", "mpiexec"):
        # An MPI launcher's program is the first bare `python` after its options (`mpirun -np 2 python …`).
        first = next((i for i, a in enumerate(argv) if a in ("python", "python3")), None)
        if first is not None:
            return (*argv[:first], sys.executable, *argv[first + 1:])
    return argv


def _operator_env(kind: str | None, replicas: list[tuple[ReplicaGroup, int]], config_dir: Path):
    world = len(replicas)
    if kind in ("PyTorchJob", "TrainJob"):
        port = free_port()
        return lambda rank, _t, _i: _torch_env(kind, rank, world, port)
    if kind == "TFJob":
        ports = {(g.type, i): free_port() for g, i in replicas}
        cluster: dict[str, list[str]] = {}
        for (rtype, _), port in ports.items():
            cluster.setdefault(rtype, []).append(f"{LOCALHOST}:{port}")
        return lambda _r, rtype, index: {
            "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": rtype, "index": index}, "environment": "cloud"})
        }
    if kind == "MPIJob":
        mpi = _mpi_env(replicas, config_dir)
        return lambda _r, _t, _i: mpi
    if kind == "Job":
        return lambda _r, _t, index: {"JOB_COMPLETION_INDEX": str(index)}
    return lambda _r, _t, _i: {}


def _torch_env(kind: str, rank: int, world: int, port: int) -> dict[str, str]:
    env = {
        "MASTER_ADDR": LOCALHOST,
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(world),
        "RANK": str(rank),
        # All replicas share this host: distinct local ranks pick distinct GPUs.
        "LOCAL_RANK": str(rank),
        "LOCAL_WORLD_SIZE": str(world),
    }
    if kind == "TrainJob":
        env |= {"PET_NNODES": str(world), "PET_NPROC_PER_NODE": "1", "PET_NODE_RANK": str(rank),
                "PET_MASTER_ADDR": LOCALHOST, "PET_MASTER_PORT": str(port)}
    return env


def _mpi_env(replicas: list[tuple[ReplicaGroup, int]], config_dir: Path) -> dict[str, str]:
    slots = sum(1 for g, _ in replicas if g.type == "worker")
    hostfile = config_dir / "hostfile"
    hostfile.write_text(f"localhost slots={slots}\n")
    return {
        "OMPI_MCA_orte_default_hostfile": str(hostfile),
        "OMPI_MCA_hwloc_base_binding_policy": "none",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind((LOCALHOST, 0))
        return s.getsockname()[1]
