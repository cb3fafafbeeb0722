"""What each job kind looks like as a manifest: building it from the shorthand, finding its replicas
(type, count, pod template) again, and decorating its pods — the one place that knows the layouts.

Each family builds its own kinds, following its operator's semantics (see
docs/kubernetes-conformance.md): :mod:`.kubeflow` the Kubeflow v1 jobs (PyTorchJob, TFJob, JAXJob,
XGBoostJob, MPIJob), :mod:`.trainjob` Trainer v2's TrainJob, :mod:`.serving` ``kind: Serving``; the
plain ones (a batch/v1 Indexed Job, local processes) are here. What they share, the container, pod
template and deadline, is :mod:`.pods`.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..rules import replica_rank
from . import kubeflow, serving, trainjob
from .pods import JobShape, active_deadline, container as _make_container, pod as _pod
from .trainjob import TRAINER_NODE, policy_of

Manifest = dict[str, Any]
LABEL_PREFIX = "kubebench.io/"


@dataclass(frozen=True)
class ReplicaGroup:
    """Replicas of one type: ``template`` is the pod template (``{"spec": {"containers": […]}}``)."""

    type: str
    count: int
    template: dict[str, Any]


_REPLICA_FIELDS = kubeflow.REPLICA_FIELDS
_CONTAINER_NAMES = {**kubeflow.CONTAINER_NAMES, "Job": "main", "Process": "main", "Serving": serving.LOAD}


#: The kinds whose replicas may start several processes (ranks) each: torchrun's and mpirun's.
MULTI_PROCESS_KINDS = ("PyTorchJob", "MPIJob", "TrainJob")


def takes_processes(kind: str, runtime: str) -> bool:
    """Whether a replica of ``kind`` (a TrainJob: on ``runtime``) may start several ranks."""
    return kind in MULTI_PROCESS_KINDS and (kind != "TrainJob" or policy_of(runtime) == "torch")


def processes_per_replica(manifest: Manifest) -> int:
    """The ranks each replica of ``manifest`` starts, as its operator is told: a PyTorchJob's
    ``nprocPerNode``, a TrainJob's ``numProcPerNode``, an MPIJob's ``slotsPerWorker``; 1 otherwise
    (and when the field is not a number, e.g. ``auto``)."""
    spec = manifest.get("spec") or {}
    value = {"PyTorchJob": spec.get("nprocPerNode"), "MPIJob": spec.get("slotsPerWorker"),
             "TrainJob": (spec.get("trainer") or {}).get("numProcPerNode")}.get(str(manifest.get("kind")))
    return int(str(value)) if str(value).isdigit() and int(str(value)) > 0 else 1


def build_manifest(job: JobShape, name: str, labels: dict[str, str], timeout: float) -> Manifest:
    """The manifest of the shorthand job, in the form its Kubernetes operator expects."""
    container = _make_container(job, _CONTAINER_NAMES.get(job.kind, "main"))
    deadline = active_deadline(timeout)
    builders = {
        **kubeflow.BUILDERS,
        "Process": _process,
        "TrainJob": trainjob.build,
        "Job": _batch_job,
        "Serving": _serving,
    }
    api_version, kind, spec = builders[job.kind](job, container, deadline)
    metadata = {"name": name, "labels": dict(labels)}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def _process(job: JobShape, container: dict[str, Any], deadline: int) -> tuple[str, str, dict[str, Any]]:
    return "kubebench/v1", "Process", {"replicas": job.workers, "template": _pod(container, job)}


def _batch_job(job: JobShape, container: dict[str, Any], deadline: int) -> tuple[str, str, dict[str, Any]]:
    spec = {
        "completionMode": "Indexed",
        "completions": job.workers,
        "parallelism": job.workers,
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "template": _pod(container, job),
    }
    return "batch/v1", "Job", spec


def _serving(job: JobShape, container: dict[str, Any], deadline: int) -> tuple[str, str, dict[str, Any]]:
    if job.server is None:
        raise SpecError("kind: Serving needs `server:`")
    spec = serving.serving_spec(job.server, container, job.workers, deadline, lambda c: _pod(c, job))
    return "kubebench/v1", "Serving", spec


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
        return [trainjob.node_pod(manifest.setdefault("spec", {}))]
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


def _merge_env(existing: list[dict[str, Any]] | None, env: dict[str, str]) -> list[dict[str, Any]]:
    kept = [e for e in existing or [] if e.get("name") not in env]
    return kept + [{"name": k, "value": v} for k, v in env.items()]


def mount_claim(manifest: Manifest, volume: str, claim: str, mount_path: str,
                folders: tuple[tuple[str, str, bool], ...] = ()) -> Manifest:
    """Mount the PersistentVolumeClaim ``claim`` in every container of every pod: whole at
    ``mount_path``, or only ``folders`` — ``(mount path, sub path on the claim, read only)`` each."""
    mounts = [{"name": volume, "mountPath": path, "subPath": sub, **({"readOnly": True} if read_only else {})}
              for path, sub, read_only in folders] or [{"name": volume, "mountPath": mount_path}]
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == volume for v in volumes):
            volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": claim}})
        for container in _mounting_containers(manifest, spec):
            existing = container.setdefault("volumeMounts", [])
            if not any(m.get("name") == volume for m in existing):
                existing += copy.deepcopy(mounts)
    return manifest


def mount_config_map(manifest: Manifest, volume: str, config_map: str, path: str) -> Manifest:
    """Mount the ConfigMap ``config_map`` read-only at ``path`` in every container of every pod, and
    make ``path`` the working directory of the containers that set none (a TrainJob's patch cannot:
    its command runs there through ``sh``, see :func:`.trainjob.run_in`)."""
    if manifest.get("kind") == "TrainJob":
        trainjob.run_in(manifest.setdefault("spec", {}), path)
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == volume for v in volumes):
            volumes.append({"name": volume, "configMap": {"name": config_map}})
        for container in _mounting_containers(manifest, spec):
            mounts = container.setdefault("volumeMounts", [])
            if not any(m.get("name") == volume for m in mounts):
                mounts.append({"name": volume, "mountPath": path, "readOnly": True})
            if manifest.get("kind") != "TrainJob":
                container.setdefault("workingDir", path)
    return manifest


def set_template_annotations(manifest: Manifest, annotations: dict[str, str]) -> Manifest:
    """Add ``annotations`` to every pod template that does not set them itself."""
    for template in pod_templates(manifest):
        found = template.setdefault("metadata", {}).setdefault("annotations", {})
        for key, value in annotations.items():
            found.setdefault(key, value)
    return manifest


def _mounting_containers(manifest: Manifest, pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    if manifest.get("kind") != "TrainJob":
        containers: list[dict[str, Any]] = pod_spec.get("initContainers", []) + pod_spec.get("containers", [])
        return containers
    # In a runtime patch a container entry names the runtime's container and only adds to it.
    containers = pod_spec.setdefault("containers", [])
    node = next((c for c in containers if c.get("name") == TRAINER_NODE), None)
    if node is None:
        node = {"name": TRAINER_NODE}
        containers.append(node)
    return [node]


SHM_VOLUME = "kubebench-shm"


def mount_shm(manifest: Manifest, size: str | None = None) -> Manifest:
    """A memory-backed ``/dev/shm`` in every container of every pod that mounts none there (the
    container runtime's 64 MiB breaks NCCL and DataLoader workers)."""
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        containers = _mounting_containers(manifest, spec)
        if any(m.get("mountPath") == "/dev/shm" for c in containers for m in c.get("volumeMounts") or []):
            continue
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == SHM_VOLUME for v in volumes):
            volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", **({"sizeLimit": size} if size else {})}})
        for container in containers:
            container.setdefault("volumeMounts", []).append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    return manifest


def add_env_default(manifest: Manifest, env: dict[str, str]) -> Manifest:
    """Add ``env`` to every replica's containers that do not set these variables themselves."""
    if manifest.get("kind") == "TrainJob":
        trainer = manifest.setdefault("spec", {}).setdefault("trainer", {})
        names = {e.get("name") for e in trainer.get("env") or []}
        trainer["env"] = (trainer.get("env") or []) + [{"name": k, "value": v} for k, v in env.items() if k not in names]
        return manifest
    for group in replica_groups(manifest):
        for container in group.template.get("spec", {}).get("containers", []):
            names = {e.get("name") for e in container.get("env") or []}
            added = [{"name": k, "value": v} for k, v in env.items() if k not in names]
            if added:
                container["env"] = (container.get("env") or []) + added
    return manifest


def set_security(manifest: Manifest, pod: dict[str, Any], container: dict[str, Any]) -> Manifest:
    """Give every pod ``pod`` as its ``securityContext`` and every container (init containers too)
    ``container`` as its, where they set none (a TrainJob: in its runtime patch, which may carry both)."""
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        if pod:
            spec.setdefault("securityContext", copy.deepcopy(pod))
        for box in _mounting_containers(manifest, spec) if container else []:
            box.setdefault("securityContext", copy.deepcopy(container))
    return manifest


def set_template_labels(manifest: Manifest, labels: dict[str, str]) -> Manifest:
    """Add ``labels`` to every pod template (every operator copies them onto the pods)."""
    for template in pod_templates(manifest):
        template.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return manifest


def set_pod_defaults(manifest: Manifest, fields: dict[str, Any]) -> Manifest:
    """Set pod spec ``fields`` (e.g. ``serviceAccountName``) in every pod the job does not set them in."""
    for template in pod_templates(manifest):
        spec = template.setdefault("spec", {})
        for key, value in fields.items():
            spec.setdefault(key, copy.deepcopy(value))
    return manifest


def ensure_deadline(manifest: Manifest, seconds: float) -> Manifest:
    """Give the job an active deadline where it has none (later than the run's timeout ``seconds``,
    see :func:`active_deadline`), which its operator enforces if the runner dies. Not every operator
    does so from the job's start: mpi-operator gives it to an MPIJob's launcher only, which may never
    be created; the Kubernetes backend gives such a job a deadline of its own (``backends.kube.keeper``)."""
    deadline = active_deadline(seconds)
    kind, spec = manifest.get("kind"), manifest.setdefault("spec", {})
    if kind in _REPLICA_FIELDS:
        spec.setdefault("runPolicy", {}).setdefault("activeDeadlineSeconds", deadline)
    elif kind in ("Job", "TrainJob", "Serving"):
        spec.setdefault("activeDeadlineSeconds", deadline)
    return manifest


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def valid_labels(manifest: Manifest) -> Manifest:
    """kubebench's labels as the API server accepts them (≤ 63 characters, alphanumeric at both ends):
    a cut id loses its trailing separators; an id that cannot be a label is refused here, clearly."""
    labels = manifest.get("metadata", {}).get("labels") or {}
    fixed = {}
    for key, value in labels.items():
        if not key.startswith(LABEL_PREFIX):
            continue
        valid = str(value)[:63].rstrip("-_.")
        if not _LABEL_VALUE.fullmatch(valid):
            raise SpecError(f"{value!r} ({key}) cannot be a Kubernetes label value: use letters, digits, '-', '_' "
                            "and '.', starting and ending with a letter or digit (e.g. kubebench run --id bench-1)")
        if valid != value:
            fixed[key] = valid
    if fixed:
        labels.update(fixed)
        set_template_labels(manifest, fixed)
    return manifest
