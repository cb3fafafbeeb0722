"""What each job kind looks like as a manifest: building it from the shorthand, finding its replicas
(type, count, pod template) again, and decorating its pods — the one place that knows the layouts.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..rules import replica_rank
from . import serving

Manifest = dict[str, Any]
LABEL_PREFIX = "kubebench.io/"
#: The `manager` of the TrainJob runtime patch through which kubebench reaches the pods.
PATCH_MANAGER = "kubebench.io/kubebench"
#: Name of the replicated job and of the container of Kubeflow Trainer's torch runtimes.
TRAINER_NODE = "node"
MPI_API_VERSIONS = ("kubeflow.org/v2beta1", "kubeflow.org/v1")


@dataclass(frozen=True)
class ReplicaGroup:
    """Replicas of one type: ``template`` is the pod template (``{"spec": {"containers": […]}}``)."""

    type: str
    count: int
    template: dict[str, Any]


@dataclass(frozen=True)
class JobShape:
    """The concrete values of the job shorthand once a trial's parameters are filled in."""

    kind: str
    workers: int
    image: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    resources: tuple[tuple[str, str], ...]
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[dict[str, Any], ...] = ()
    mpi_api_version: str = MPI_API_VERSIONS[0]
    #: ``kind: Serving``: the server; ``workers`` then counts load-generator replicas.
    server: serving.ServerShape | None = None


_REPLICA_FIELDS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}
_CONTAINER_NAMES = {"PyTorchJob": "pytorch", "TFJob": "tensorflow", "MPIJob": "mpi", "Job": "main", "Process": "main",
                    "Serving": serving.LOAD}


def build_manifest(job: JobShape, name: str, labels: dict[str, str], timeout: float) -> Manifest:
    """The manifest of the shorthand job, in the form its Kubernetes operator expects."""
    container = _container(job)
    deadline = max(1, math.ceil(timeout))
    builders = {
        "Process": _process,
        "PyTorchJob": _pytorch,
        "TFJob": _tfjob,
        "MPIJob": _mpijob,
        "TrainJob": _trainjob,
        "Job": _batch_job,
        "Serving": _serving,
    }
    api_version, kind, spec = builders[job.kind](job, container, deadline)
    metadata = {"name": name, "labels": dict(labels)}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def _container(job: JobShape) -> dict[str, Any]:
    container: dict[str, Any] = {"name": _CONTAINER_NAMES.get(job.kind, "main"), "image": job.image}
    container["command"] = list(job.command)
    if job.env:
        container["env"] = [{"name": k, "value": v} for k, v in job.env]
    if job.resources:
        amounts = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in job.resources}
        container["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    return container


def _scheduling(job: JobShape) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if job.node_selector:
        spec["nodeSelector"] = dict(job.node_selector)
    if job.tolerations:
        spec["tolerations"] = copy.deepcopy(list(job.tolerations))
    return spec


def _pod(container: dict[str, Any], job: JobShape) -> dict[str, Any]:
    # A copy per replica type: shared objects would become YAML aliases and share later edits.
    spec = {"restartPolicy": "Never", "containers": [copy.deepcopy(container)], **_scheduling(job)}
    return {"spec": spec}


def _replica(count: int, container: dict[str, Any], job: JobShape) -> dict[str, Any]:
    return {"replicas": count, "restartPolicy": "Never", "template": _pod(container, job)}


def _run_policy(deadline: int) -> dict[str, Any]:
    return {"activeDeadlineSeconds": deadline, "backoffLimit": 0, "cleanPodPolicy": "None"}


def _process(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    return "kubebench/v1", "Process", {"replicas": job.workers, "template": _pod(container, job)}


def _pytorch(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    # Kubeflow's layout: rank 0 is the Master, ranks 1…N-1 are Workers.
    replicas = {"Master": _replica(1, container, job)}
    if job.workers > 1:
        replicas["Worker"] = _replica(job.workers - 1, container, job)
    return "kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": replicas, "runPolicy": _run_policy(deadline)}


def _tfjob(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    replicas = {"Worker": _replica(job.workers, container, job)}
    return "kubeflow.org/v1", "TFJob", {"tfReplicaSpecs": replicas, "runPolicy": _run_policy(deadline)}


def _mpijob(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    # Both operators: the launcher runs mpirun; workers run the image's default (an SSH server for
    # mpi-operator v2beta1, a sleep for the training operator's v1) and host the ranks mpirun starts.
    if job.mpi_api_version not in MPI_API_VERSIONS:
        raise SpecError(f"job.mpi_api_version: {job.mpi_api_version!r} is not one of {', '.join(MPI_API_VERSIONS)}")
    launcher = {**container, "command": ["mpirun", "-np", str(job.workers), *job.command]}
    worker = {k: v for k, v in container.items() if k != "command"}
    spec = {
        "slotsPerWorker": 1,
        "runPolicy": _run_policy(deadline),
        "mpiReplicaSpecs": {"Launcher": _replica(1, launcher, job), "Worker": _replica(job.workers, worker, job)},
    }
    return job.mpi_api_version, "MPIJob", spec


def _trainjob(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    trainer: dict[str, Any] = {"image": job.image, "command": list(job.command), "numNodes": job.workers}
    if "env" in container:
        trainer["env"] = container["env"]
    if "resources" in container:
        trainer["resourcesPerNode"] = container["resources"]
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer,
                            "activeDeadlineSeconds": deadline}
    scheduling = _scheduling(job)
    if scheduling:
        _trainjob_pod(spec)["spec"].update(scheduling)
    return "trainer.kubeflow.org/v1alpha1", "TrainJob", spec


def _batch_job(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    spec = {
        "completionMode": "Indexed",
        "completions": job.workers,
        "parallelism": job.workers,
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "template": _pod(container, job),
    }
    return "batch/v1", "Job", spec


def _serving(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    if job.server is None:
        raise SpecError("kind: Serving needs `server:`")
    spec = serving.serving_spec(job.server, container, job.workers, deadline, lambda c: _pod(c, job))
    return "kubebench/v1", "Serving", spec


def _trainjob_pod(spec: dict[str, Any]) -> dict[str, Any]:
    """The pod template of the trainer's nodes in kubebench's runtime patch (created if missing).

    Kubeflow Trainer v2 reaches a TrainJob's pods only through ``runtimePatches``; the trainer's
    container there is the one named ``node``.
    """
    patches = spec.setdefault("runtimePatches", [])
    patch = next((p for p in patches if p.get("manager") == PATCH_MANAGER), None)
    if patch is None:
        patch = {"manager": PATCH_MANAGER}
        patches.append(patch)
    jobs = patch.setdefault("trainingRuntimeSpec", {}).setdefault("template", {}).setdefault("spec", {})
    replicated = jobs.setdefault("replicatedJobs", [])
    node = next((j for j in replicated if j.get("name") == TRAINER_NODE), None)
    if node is None:
        node = {"name": TRAINER_NODE}
        replicated.append(node)
    pod = node.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
    pod.setdefault("spec", {})
    return pod


def replica_groups(manifest: Manifest) -> list[ReplicaGroup]:
    """Every replica type of a manifest with its count and pod template, in rank order."""
    kind, spec = manifest.get("kind"), manifest.get("spec") or {}
    if kind in _REPLICA_FIELDS:
        specs = spec.get(_REPLICA_FIELDS[kind]) or {}
        order = sorted(specs, key=replica_rank)
        return [ReplicaGroup(t.lower(), int(specs[t].get("replicas", 1)), specs[t].get("template") or {}) for t in order]
    if kind == "Process":
        return [ReplicaGroup("worker", int(spec.get("replicas", 1)), spec.get("template") or {})]
    if kind == "Serving":  # the load generator first: its log holds the run's metrics
        return [ReplicaGroup(role, int((spec.get(role) or {}).get("replicas", 1)), (spec.get(role) or {}).get("template") or {})
                for role in (serving.LOAD, serving.SERVER)]
    if kind == "Job":
        count = int(spec.get("completions") or spec.get("parallelism") or 1)
        return [ReplicaGroup("worker", count, spec.get("template") or {})]
    if kind == "TrainJob":
        trainer = spec.get("trainer") or {}
        container = {"name": TRAINER_NODE, **{k: trainer[k] for k in ("image", "command", "args", "env") if k in trainer}}
        return [ReplicaGroup(TRAINER_NODE, int(trainer.get("numNodes", 1)), {"spec": {"containers": [container]}})]
    raise SpecError(f"job kind {kind!r} is not supported; supported: {', '.join(supported_kinds())}")


def supported_kinds() -> list[str]:
    """Manifest kinds kubebench can run."""
    return sorted({*_REPLICA_FIELDS, "Process", "Job", "TrainJob", "Serving"})


def pod_templates(manifest: Manifest) -> list[dict[str, Any]]:
    """The manifest's own pod templates (to edit in place); a TrainJob's is its runtime patch."""
    if manifest.get("kind") == "TrainJob":
        return [_trainjob_pod(manifest.setdefault("spec", {}))]
    return [group.template for group in replica_groups(manifest)]


def inject(manifest: Manifest, env: dict[str, str], labels: dict[str, str]) -> Manifest:
    """Add ``env`` to every container of every replica and ``labels`` to the job and its pods."""
    manifest.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    if manifest.get("kind") == "TrainJob":
        trainer = manifest.setdefault("spec", {}).setdefault("trainer", {})
        trainer["env"] = _merge_env(trainer.get("env"), env)
    else:
        for group in replica_groups(manifest):
            for container in group.template.get("spec", {}).get("containers", []):
                container["env"] = _merge_env(container.get("env"), env)
    for template in pod_templates(manifest):
        template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return manifest


def _merge_env(existing: list[dict] | None, env: dict[str, str]) -> list[dict]:
    kept = [e for e in existing or [] if e.get("name") not in env]
    return kept + [{"name": k, "value": v} for k, v in env.items()]


def mount_claim(manifest: Manifest, volume: str, claim: str, mount_path: str) -> Manifest:
    """Mount the PersistentVolumeClaim ``claim`` at ``mount_path`` in every container of every pod."""
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == volume for v in volumes):
            volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim}})
        for container in _mounting_containers(manifest, spec):
            mounts = container.setdefault("volumeMounts", [])
            if not any(m.get("name") == volume for m in mounts):
                mounts.append({"name": volume, "mountPath": mount_path})
    return manifest


def _mounting_containers(manifest: Manifest, pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    if manifest.get("kind") != "TrainJob":
        return pod_spec.get("initContainers", []) + pod_spec.get("containers", [])
    # In a runtime patch a container entry names the runtime's container and only adds to it.
    containers = pod_spec.setdefault("containers", [])
    node = next((c for c in containers if c.get("name") == TRAINER_NODE), None)
    if node is None:
        node = {"name": TRAINER_NODE}
        containers.append(node)
    return [node]


def set_pod_defaults(manifest: Manifest, fields: dict[str, Any]) -> Manifest:
    """Set pod spec ``fields`` (e.g. ``serviceAccountName``) in every pod the job does not set them in."""
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        for key, value in fields.items():
            spec.setdefault(key, copy.deepcopy(value))
    return manifest


def ensure_deadline(manifest: Manifest, seconds: float) -> Manifest:
    """Give the job an active deadline where it has none, so that no job can run forever."""
    deadline = max(1, math.ceil(seconds))
    kind, spec = manifest.get("kind"), manifest.setdefault("spec", {})
    if kind in _REPLICA_FIELDS:
        spec.setdefault("runPolicy", {}).setdefault("activeDeadlineSeconds", deadline)
    elif kind in ("Job", "TrainJob", "Serving"):
        spec.setdefault("activeDeadlineSeconds", deadline)
    return manifest
