"""The Kubeflow v1 job kinds from the shorthand: PyTorchJob, TFJob, JAXJob and XGBoostJob
(training-operator v1.9) and MPIJob (mpi-operator's v2beta1, or training-operator's v1), each in the
layout its operator expects (see docs/kubernetes-conformance.md):

- no ``runPolicy.backoffLimit``: with one, training-operator ≤ v1.9.3 deletes every pod before it
  marks the job Failed (kubeflow/trainer#3419); ``restartPolicy: Never`` alone fails the job at the
  first failed replica;
- the container is named as the operator's webhook requires of one of them (``pytorch``,
  ``tensorflow``, ``jax``, ``xgboost``; ``mpi`` by convention), and its port is left to the
  operator's defaulter (``jaxjob-port`` 6666, ``xgboostjob-port`` 9999 …), from which it derives the
  coordinator's or master's address;
- PyTorchJob and XGBoostJob: rank 0 is the one Master (the XGBoost webhook requires exactly one),
  ranks 1…N-1 are Workers; TFJob and JAXJob: N Workers (a JAXJob has no other replica type);
- MPIJob v2beta1 (mpi-operator): the launcher is created once the workers are Ready
  (``launcherCreationPolicy: WaitForWorkersReady``: their hostnames resolve only then) and the
  workers run an SSH server (``/usr/sbin/sshd -De``, as the Dockerfile's ``mpi`` target does); v1
  (training-operator) workers sleep, as its launcher execs into them. ``cleanPodPolicy: Running``
  stops the workers, which never end by themselves, once the launcher has. The launcher runs no
  rank (mpi-operator's ``runLauncherAsWorker`` is off): it asks for a small CPU and memory only;
- several processes per replica (``job.processes_per_replica``): a PyTorchJob starts them through
  ``torchrun --nproc-per-node`` with ``nprocPerNode`` set (the operator counts it in ``WORLD_SIZE``),
  an MPIJob through ``slotsPerWorker`` and ``mpirun -np workers × slots``.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from .pods import MPI_API_VERSIONS, JobShape, replica, run_policy, torchrun

REPLICA_FIELDS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}
CONTAINER_NAMES = {"PyTorchJob": "pytorch", "TFJob": "tensorflow", "MPIJob": "mpi", "JAXJob": "jax", "XGBoostJob": "xgboost"}
#: What an MPI worker runs: mpi-operator v2 reaches the ranks over SSH; training-operator v1 execs.
MPI_WORKER_COMMANDS = {"kubeflow.org/v2beta1": ["/usr/sbin/sshd", "-De"], "kubeflow.org/v1": ["sleep", "infinity"]}
Built = tuple[str, str, dict[str, Any]]
#: An MPIJob launcher's requests: mpirun and one SSH client per worker.
LAUNCHER_REQUESTS = {"cpu": "250m", "memory": "256Mi"}


def _master_and_workers(job: JobShape, container: dict[str, Any]) -> dict[str, Any]:
    replicas = {"Master": replica(1, container, job)}
    if job.workers > 1:
        replicas["Worker"] = replica(job.workers - 1, container, job)
    return replicas


def pytorch(job: JobShape, container: dict[str, Any], deadline: int) -> Built:
    """PyTorchJob: a Master (rank 0) and N-1 Workers, each starting ``job.processes`` ranks through
    torchrun (``nprocPerNode``: the operator gives it as ``PET_NPROC_PER_NODE`` and counts it in
    ``WORLD_SIZE``; its default, ``auto``, would leave the number to torchrun)."""
    container = {**container, "command": torchrun(job.command, job.processes)}
    spec = {"nprocPerNode": str(job.processes), "pytorchReplicaSpecs": _master_and_workers(job, container),
            "runPolicy": run_policy(deadline)}
    return "kubeflow.org/v1", "PyTorchJob", spec


def tfjob(job: JobShape, container: dict[str, Any], deadline: int) -> Built:
    """TFJob: N Workers (MultiWorkerMirroredStrategy; worker 0 is the chief)."""
    replicas = {"Worker": replica(job.workers, container, job)}
    return "kubeflow.org/v1", "TFJob", {"tfReplicaSpecs": replicas, "runPolicy": run_policy(deadline)}


def jaxjob(job: JobShape, container: dict[str, Any], deadline: int) -> Built:
    """JAXJob: N Workers, worker 0 the coordinator; it succeeds once every worker has."""
    replicas = {"Worker": replica(job.workers, container, job)}
    return "kubeflow.org/v1", "JAXJob", {"jaxReplicaSpecs": replicas, "runPolicy": run_policy(deadline)}


def xgboostjob(job: JobShape, container: dict[str, Any], deadline: int) -> Built:
    """XGBoostJob: the Master (rank 0, where the tracker runs) and N-1 Workers; it succeeds with its master."""
    spec = {"xgbReplicaSpecs": _master_and_workers(job, container), "runPolicy": run_policy(deadline)}
    return "kubeflow.org/v1", "XGBoostJob", spec


def mpijob(job: JobShape, container: dict[str, Any], deadline: int) -> Built:
    """MPIJob: the launcher runs mpirun; the workers host the ranks mpirun starts (both operators),
    ``job.processes`` on each (``slotsPerWorker``, the slots of each worker in the hostfile). The
    launcher runs no rank: it asks for a little CPU and memory only, never the workers' GPUs."""
    if job.mpi_api_version not in MPI_API_VERSIONS:
        raise SpecError(f"job.mpi_api_version: {job.mpi_api_version!r} is not one of {', '.join(MPI_API_VERSIONS)}")
    ranks = job.workers * job.processes
    launcher = {k: v for k, v in container.items() if k != "resources"}
    launcher |= {"command": ["mpirun", "-np", str(ranks), *job.command], "resources": launcher_resources()}
    worker = {**container, "command": list(MPI_WORKER_COMMANDS[job.mpi_api_version])}
    spec: dict[str, Any] = {"slotsPerWorker": job.processes, "runPolicy": run_policy(deadline, "Running")}
    if job.mpi_api_version == "kubeflow.org/v2beta1":
        # mpi-operator passes runPolicy.backoffLimit to the launcher Job (default 6 retries of mpirun).
        spec["runPolicy"]["backoffLimit"] = 0
        spec["launcherCreationPolicy"] = "WaitForWorkersReady"
    spec["mpiReplicaSpecs"] = {"Launcher": replica(1, launcher, job), "Worker": replica(job.workers, worker, job)}
    return job.mpi_api_version, "MPIJob", spec


def launcher_resources() -> dict[str, Any]:
    """What an MPIJob launcher asks for: mpirun and its SSH clients (mpi-operator hides the node's
    GPUs from it, ``NVIDIA_VISIBLE_DEVICES=""``, unless it runs as a worker)."""
    return {"requests": dict(LAUNCHER_REQUESTS)}


BUILDERS = {"PyTorchJob": pytorch, "TFJob": tfjob, "JAXJob": jaxjob, "XGBoostJob": xgboostjob, "MPIJob": mpijob}
