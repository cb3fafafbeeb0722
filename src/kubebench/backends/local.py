"""The embedded default: every replica of a job runs as a local process, with the environment
that Kubeflow's operator would give its pod, so the same rendered job runs on Kubernetes unchanged.

Each job kind has its driver (see :mod:`.processes`): :class:`ReplicaJobs` for the operators' kinds
(every replica started at once), :class:`~.serving.ServingJobs` for ``kind: Serving``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import BackendError
from ..paths import RunPaths
from ..render.kinds import processes_per_replica, replica_groups
from ..spec.base import PluginConfig
from ..timeline import Boundary
from . import orphans
from .base import Backend, JobStatus, ProcessTelemetry
from .local_env import operator_env
from .processes import (
    LocalDriver,
    LocalJob,
    ReplicaLaunch,
    container_env,
    ended,
    kill_all,
    local_argv,
    main_container,
    start_error,
    visible_gpus,
)
from .serving import ServingJobs

if TYPE_CHECKING:
    from ..render.job import RenderedJob


class LocalConfig(PluginConfig):
    """Options of ``backend: {kind: local}``."""

    kind: Literal["local"] = "local"
    #: Seconds between SIGTERM and SIGKILL when a job is stopped.
    kill_grace: float = 3.0


class ReplicaJobs(LocalDriver[LocalJob]):
    """The operators' kinds (PyTorchJob, TFJob, JAXJob, XGBoostJob, MPIJob, TrainJob, Job, Process): every
    replica at once, with its operator's environment (:mod:`.local_env`)."""

    def submit(self, job: RenderedJob, paths: RunPaths) -> LocalJob:
        """Start every replica in its own process group, logging to ``output/<type>-<index>.log``."""
        launches = plan_launches(job.manifest, Path(paths.config))
        handle = self.track(LocalJob(self, run_folder=str(paths.run), run_id=paths.run_id))
        try:
            for launch in launches:
                self.start(handle, launch, Path(paths.output), job.workdir)
        except OSError as e:
            self.cancel(handle)
            raise start_error(e, f"{launch.name} ({launch.argv[0]})") from e
        except BaseException:  # Ctrl-C between two starts: no replica may outlive its job
            self.cancel(handle)
            raise
        return handle

    def status(self, handle: LocalJob) -> JobStatus:
        """Failed as soon as one replica fails; succeeded when all have exited 0."""
        return ended(handle)


class LocalBackend(Backend[LocalJob, LocalConfig]):
    """Runs replicas as process groups on this machine; stops them all on cancel or timeout.

    The job verbs go to the driver of the job's kind (``kinds``, else :class:`ReplicaJobs`), which
    its handle carries from ``submit`` on."""

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
        self.replicas = ReplicaJobs(config.kill_grace, self._live)
        #: The driver of each job kind that is not run as :class:`ReplicaJobs` runs it.
        self.kinds: dict[str, LocalDriver[Any]] = {"Serving": ServingJobs(config.kill_grace, self._live)}

    def job_paths(self, local: RunPaths) -> RunPaths:
        """Local processes see the same folders as kubebench."""
        return local

    def driver_of(self, manifest: dict[str, Any]) -> LocalDriver[Any]:
        """The driver of ``manifest``'s kind."""
        return self.kinds.get(str(manifest.get("kind")), self.replicas)

    def submit(self, job: RenderedJob, paths: RunPaths) -> LocalJob:
        """Start the job as its kind's driver does."""
        return self.driver_of(job.manifest).submit(job, paths)

    def status(self, handle: LocalJob) -> JobStatus:
        """The job's phase, as its kind's driver reads it from its processes."""
        return handle.driver.status(handle)

    def collect(self, handle: LocalJob, paths: RunPaths) -> list[str]:
        """Logs are written in place (see ``LocalDriver.collect``)."""
        return handle.driver.collect(handle)

    def release(self, handle: LocalJob) -> None:
        """What the ended job still holds (see ``LocalDriver.release``)."""
        handle.driver.release(handle)

    def cancel(self, handle: LocalJob) -> None:
        """Stop every process group of the job (see ``LocalDriver.cancel``)."""
        handle.driver.cancel(handle)

    def finished(self, handle: LocalJob) -> str | None:
        """Stop what is left of the ended job (see ``LocalDriver.finished``)."""
        return handle.driver.finished(handle)

    def timeline(self, handle: LocalJob) -> list[Boundary]:
        """Submitted, each replica's process spawned and seen ended (see ``LocalDriver.timeline``)."""
        return handle.driver.timeline(handle)

    def telemetry(self, handle: LocalJob) -> ProcessTelemetry:
        """The replicas' processes, sampled on this machine."""
        return ProcessTelemetry(tuple(process.pid for _, process in handle.processes))

    def abort(self) -> None:
        """SIGKILL the process group of every replica started and not yet stopped; wait for none."""
        kill_all(self._live)

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Kill the processes a killed runner left running in these runs (see :mod:`.orphans`)."""
        orphans.stop({str(paths.run) for _, paths in leftovers})


def plan_launches(manifest: dict, config_dir: Path,
                  devices: Callable[[], list[str]] = visible_gpus) -> list[ReplicaLaunch]:
    """The processes that emulate the operator of ``manifest``'s kind on this machine. Replicas that
    start several ranks through torchrun each see their own GPUs (``CUDA_VISIBLE_DEVICES``), as pods
    do, when this machine has enough of them (``devices()``: the GPUs it shows)."""
    kind = manifest.get("kind")
    groups = replica_groups(manifest)
    replicas = [(g, i) for g in groups for i in range(g.count)]
    given = operator_env(manifest, replicas, config_dir)
    slices = _own_gpus(manifest, given, len(replicas), devices) if kind in ("PyTorchJob", "TrainJob") else []
    launches = []
    for rank, (group, index) in enumerate(replicas):
        if kind == "MPIJob" and group.type == "worker":
            continue  # an MPI worker only hosts the ranks that mpirun starts (on a cluster: sshd)
        container = main_container(group)
        argv = tuple(container.get("command") or ()) + tuple(container.get("args") or ())
        if not argv:
            raise BackendError(f"{group.type}-{index}: no command; the local backend cannot run an image's entrypoint")
        env = {**container_env(container), **given(rank, group.type, index)}
        env |= {"KUBEBENCH_REPLICA_TYPE": group.type, "KUBEBENCH_REPLICA_INDEX": str(index)}
        if slices:
            env["CUDA_VISIBLE_DEVICES"] = slices[rank]
        launches.append(ReplicaLaunch(group.type, index, local_argv(argv), env))
    return launches


def _own_gpus(manifest: dict, given: Callable[[int, str, int], dict[str, str]], replicas: int,
              devices: Callable[[], list[str]]) -> list[str]:
    """Each replica's GPUs when its ranks are torchrun's: ``processes_per_replica`` of them, or under
    ``PET_NPROC_PER_NODE=auto`` (a pod's every GPU) an equal share of this machine's."""
    per_replica = processes_per_replica(manifest)
    if per_replica > 1:
        return device_slices(replicas, per_replica, devices())
    if replicas > 1 and given(0, "", 0).get("PET_NPROC_PER_NODE") == "auto":
        found = devices()
        share = len(found) // replicas
        return [",".join(found[r * share:(r + 1) * share]) for r in range(replicas)] if share else []
    return []


def device_slices(replicas: int, per_replica: int, devices: list[str]) -> list[str]:
    """``CUDA_VISIBLE_DEVICES`` of each replica: ``per_replica`` of ``devices`` each, in rank order;
    none when one process each (they pick ``cuda:LOCAL_RANK``) or when there are too few to share out."""
    if per_replica < 2 or len(devices) < replicas * per_replica:
        return []
    return [",".join(devices[r * per_replica:(r + 1) * per_replica]) for r in range(replicas)]
