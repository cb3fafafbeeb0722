"""What each job kind looks like as a manifest: building it from the shorthand, and finding its
replicas (type, count, pod template) again — the one place that knows the kinds' layouts.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError

Manifest = dict[str, Any]
LABEL_PREFIX = "kubebench.io/"


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


_REPLICA_FIELDS = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}
_CONTAINER_NAMES = {"PyTorchJob": "pytorch", "TFJob": "tensorflow", "MPIJob": "mpi", "Job": "main", "Process": "main"}


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


def _pod(container: dict[str, Any]) -> dict[str, Any]:
    # A copy per replica type: shared objects would become YAML aliases and share later edits.
    return {"spec": {"restartPolicy": "Never", "containers": [copy.deepcopy(container)]}}


def _replica(count: int, container: dict[str, Any]) -> dict[str, Any]:
    return {"replicas": count, "restartPolicy": "Never", "template": _pod(container)}


def _run_policy(deadline: int) -> dict[str, Any]:
    return {"activeDeadlineSeconds": deadline, "backoffLimit": 0, "cleanPodPolicy": "None"}


def _process(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    return "kubebench/v1", "Process", {"replicas": job.workers, "template": _pod(container)}


def _pytorch(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    # Kubeflow's layout: rank 0 is the Master, ranks 1…N-1 are Workers.
    replicas = {"Master": _replica(1, container)}
    if job.workers > 1:
        replicas["Worker"] = _replica(job.workers - 1, container)
    return "kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": replicas, "runPolicy": _run_policy(deadline)}


def _tfjob(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    replicas = {"Worker": _replica(job.workers, container)}
    return "kubeflow.org/v1", "TFJob", {"tfReplicaSpecs": replicas, "runPolicy": _run_policy(deadline)}


def _mpijob(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    # mpi-operator v2: the launcher runs mpirun; workers run the image's default (an SSH server)
    # and receive the ranks mpirun starts on them.
    launcher = {**container, "command": ["mpirun", "-np", str(job.workers), *job.command]}
    worker = {k: v for k, v in container.items() if k != "command"}
    spec = {
        "slotsPerWorker": 1,
        "runPolicy": _run_policy(deadline),
        "mpiReplicaSpecs": {"Launcher": _replica(1, launcher), "Worker": _replica(job.workers, worker)},
    }
    return "kubeflow.org/v2beta1", "MPIJob", spec


def _trainjob(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    trainer: dict[str, Any] = {"image": job.image, "command": list(job.command), "numNodes": job.workers}
    if "env" in container:
        trainer["env"] = container["env"]
    if "resources" in container:
        trainer["resourcesPerNode"] = container["resources"]
    spec = {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer}
    return "trainer.kubeflow.org/v1alpha1", "TrainJob", spec


def _batch_job(job: JobShape, container: dict, deadline: int) -> tuple[str, str, dict]:
    spec = {
        "completionMode": "Indexed",
        "completions": job.workers,
        "parallelism": job.workers,
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "template": _pod(container),
    }
    return "batch/v1", "Job", spec


def replica_groups(manifest: Manifest) -> list[ReplicaGroup]:
    """Every replica type of a manifest with its count and pod template, in rank order."""
    kind, spec = manifest.get("kind"), manifest.get("spec") or {}
    if kind in _REPLICA_FIELDS:
        specs = spec.get(_REPLICA_FIELDS[kind]) or {}
        order = sorted(specs, key=_replica_order)
        return [ReplicaGroup(t.lower(), int(specs[t].get("replicas", 1)), specs[t].get("template") or {}) for t in order]
    if kind == "Process":
        return [ReplicaGroup("worker", int(spec.get("replicas", 1)), spec.get("template") or {})]
    if kind == "Job":
        count = int(spec.get("completions") or spec.get("parallelism") or 1)
        return [ReplicaGroup("worker", count, spec.get("template") or {})]
    if kind == "TrainJob":
        trainer = spec.get("trainer") or {}
        container = {"name": "node", **{k: trainer[k] for k in ("image", "command", "args", "env") if k in trainer}}
        return [ReplicaGroup("node", int(trainer.get("numNodes", 1)), {"spec": {"containers": [container]}})]
    raise SpecError(f"job kind {kind!r} is not supported; supported: {', '.join(supported_kinds())}")


def _replica_order(replica_type: str) -> int:
    order = ["Master", "Chief", "Launcher", "Worker", "PS", "Evaluator"]
    return order.index(replica_type) if replica_type in order else len(order)


def supported_kinds() -> list[str]:
    """Manifest kinds kubebench can run."""
    return sorted({*_REPLICA_FIELDS, "Process", "Job", "TrainJob"})


def inject(manifest: Manifest, env: dict[str, str], labels: dict[str, str]) -> Manifest:
    """Add ``env`` to every container of every replica and ``labels`` to the job and its pods."""
    manifest.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    if manifest.get("kind") == "TrainJob":
        trainer = manifest.setdefault("spec", {}).setdefault("trainer", {})
        trainer["env"] = _merge_env(trainer.get("env"), env)
        return manifest
    for group in replica_groups(manifest):
        group.template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        for container in group.template.get("spec", {}).get("containers", []):
            container["env"] = _merge_env(container.get("env"), env)
    return manifest


def _merge_env(existing: list[dict] | None, env: dict[str, str]) -> list[dict]:
    kept = [e for e in existing or [] if e.get("name") not in env]
    return kept + [{"name": k, "value": v} for k, v in env.items()]
