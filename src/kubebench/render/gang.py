"""``job.gang`` and ``job.topology`` in each kind's own field (pure; see :mod:`kubebench.spec.gang`).

- PyTorchJob, TFJob, JAXJob, XGBoostJob, MPIJob (both APIs): ``spec.runPolicy.schedulingPolicy``
  ``{minAvailable, queue, priorityClass, scheduleTimeoutSeconds}`` (kubeflow/trainer v1.9.4
  ``common_types.go``; mpi-operator v0.8 the same). ``schedulerName`` is left to the operator, which
  fills it with its gang scheduler's; what a template sets itself is kept.
- TrainJob: Trainer reads gang scheduling from the runtime (``podGroupPolicy``), with ``minMember``
  always every node (Trainer v2.3 ``trainingruntime_types.go``). A TrainJob on a runtime of the
  cluster's own (``job.runtime``) is taken to have it; on the default one, it runs on a namespaced
  TrainingRuntime ``kb-rt-<experiment>-<scheduler>``, which the Kubernetes backend makes from the
  default runtime plus ``podGroupPolicy`` (what it needs is in the annotation ``kubebench.io/gang-runtime``).
  Volcano's queue is the TrainJob's annotation ``scheduling.volcano.sh/queue-name``.
- every kind: ``kubebench.io/gang-scheduler`` on the job, so that the backend knows which PodGroup to
  follow; ``job.topology`` as Kueue's pod-template annotation ``kueue.x-k8s.io/podset-required-topology``
  (or ``-preferred-topology``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from ..rules import DEFAULT_RUNTIME
from . import kinds, kubeflow, trainjob

GANG_ANNOTATION = "kubebench.io/gang-scheduler"
RUNTIME_ANNOTATION = "kubebench.io/gang-runtime"
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
TOPOLOGY_ANNOTATIONS = {"required": "kueue.x-k8s.io/podset-required-topology",
                        "preferred": "kueue.x-k8s.io/podset-preferred-topology"}
TRAINER_GROUP = "trainer.kubeflow.org"


@dataclass(frozen=True)
class GangShape:
    """``job.gang`` with its values filled in for one trial."""

    scheduler: str
    min_available: int | None = None
    queue: str | None = None
    priority_class: str | None = None
    schedule_timeout: int | None = None


def runtime_name(experiment_id: str, scheduler: str) -> str:
    """The TrainingRuntime kubebench makes for an experiment's gang-scheduled TrainJobs."""
    short = "volcano" if scheduler == "volcano" else "coscheduling"
    return f"kb-rt-{experiment_id}"[: 253 - len(short) - 1].rstrip("-.") + f"-{short}"


def apply(manifest: dict[str, Any], gang: GangShape | None, topology: dict[str, str] | None,
          experiment_id: str) -> dict[str, Any]:
    """``manifest`` with the job's gang scheduling and topology in place (edited in place, returned)."""
    if topology:
        (where, level), = topology.items()
        kinds.set_template_annotations(manifest, {TOPOLOGY_ANNOTATIONS[where]: level})
    if gang is None:
        return manifest
    kind, spec = manifest.get("kind"), manifest.setdefault("spec", {})
    manifest.setdefault("metadata", {}).setdefault("annotations", {})[GANG_ANNOTATION] = gang.scheduler
    if kind in kubeflow.REPLICA_FIELDS:
        _scheduling_policy(spec, gang, sum(g.count for g in kinds.replica_groups(manifest)))
    elif kind == "TrainJob":
        _trainjob(manifest, gang, experiment_id)
    else:
        raise SpecError(f"job.gang: kind {kind} has no gang scheduling here (PyTorchJob, TFJob, JAXJob, XGBoostJob, "
                        "MPIJob and TrainJob have)")
    return manifest


def _scheduling_policy(spec: dict[str, Any], gang: GangShape, replicas: int) -> None:
    if gang.min_available is not None and gang.min_available > replicas:
        raise SpecError(f"job.gang.min_available: {gang.min_available} is more than the job's {replicas} pods: "
                        "its PodGroup could never be complete")
    policy = spec.setdefault("runPolicy", {}).setdefault("schedulingPolicy", {})
    for key, value in (("minAvailable", gang.min_available), ("queue", gang.queue),
                       ("priorityClass", gang.priority_class), ("scheduleTimeoutSeconds", gang.schedule_timeout)):
        if value is not None:
            policy.setdefault(key, value)


def _trainjob(manifest: dict[str, Any], gang: GangShape, experiment_id: str) -> None:
    spec = manifest["spec"]
    nodes = int((spec.get("trainer") or {}).get("numNodes") or 1)
    if gang.min_available is not None and gang.min_available != nodes:
        raise SpecError(f"job.gang.min_available: a TrainJob's PodGroup always holds all its {nodes} nodes "
                        "(Trainer's podGroupPolicy has no minMember): leave it out")
    notes = manifest["metadata"]["annotations"]
    if gang.queue is not None:
        if gang.scheduler != "volcano":
            raise SpecError("job.gang.queue: a queue is Volcano's (scheduler: volcano)")
        notes.setdefault(VOLCANO_QUEUE_ANNOTATION, gang.queue)
    ref = spec.setdefault("runtimeRef", {})
    if (ref.get("name") or DEFAULT_RUNTIME) != DEFAULT_RUNTIME or ref.get("kind") == "TrainingRuntime":
        return  # a runtime of the cluster's own: its podGroupPolicy is its own (kubebench doctor checks it)
    policy = {"volcano": {}} if gang.scheduler == "volcano" else {"coscheduling": (
        {"scheduleTimeoutSeconds": gang.schedule_timeout} if gang.schedule_timeout is not None else {})}
    notes[RUNTIME_ANNOTATION] = json.dumps({"base": DEFAULT_RUNTIME, "podGroupPolicy": policy,
                                            **({"priorityClass": gang.priority_class} if gang.priority_class else {})},
                                           sort_keys=True)
    spec["runtimeRef"] = {"apiGroup": TRAINER_GROUP, "kind": "TrainingRuntime",
                          "name": runtime_name(experiment_id, gang.scheduler)}
    trainjob.node_pod(spec)  # the runtime patch stays where kubebench's pods are reached


def scheduler_of(manifest: dict[str, Any]) -> str | None:
    """The gang scheduler a rendered job asks for: kubebench's annotation, else what its pod templates
    say (``schedulerName: volcano``, scheduler-plugins' PodGroup label); None without gang scheduling."""
    found = ((manifest.get("metadata") or {}).get("annotations") or {}).get(GANG_ANNOTATION)
    if found:
        return str(found)
    for template in kinds.pod_templates(_copy(manifest)):
        if (template.get("spec") or {}).get("schedulerName") == "volcano":
            return "volcano"
        if "scheduling.x-k8s.io/pod-group" in ((template.get("metadata") or {}).get("labels") or {}):
            return "scheduler-plugins"
    return None


def _copy(manifest: dict[str, Any]) -> dict[str, Any]:
    import copy

    return copy.deepcopy(manifest)  # pod_templates makes a TrainJob's runtime patch where it has none
