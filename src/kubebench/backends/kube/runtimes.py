"""The TrainingRuntime a gang-scheduled TrainJob runs on (see :mod:`kubebench.render.gang`): made
once per experiment from the default ClusterTrainingRuntime, with ``podGroupPolicy`` (and the
PodGroup's priority class on the nodes' pods), in the runs' namespace; deleted when the experiment
is done. Trainer reads gang scheduling from the runtime only (v2.3 ``trainingruntime_types.go``), and
a TrainJob may name a namespaced ``TrainingRuntime`` of its namespace (``runtimeRef.kind``)."""

from __future__ import annotations

import copy
import json
from typing import Any

from ...errors import BackendError
from ...render.gang import RUNTIME_ANNOTATION
from ...render.trainjob import TRAINER_NODE
from .api import Api, Resource

TRAINING_RUNTIMES = Resource("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime")
CLUSTER_TRAINING_RUNTIMES = Resource("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes",
                                     "ClusterTrainingRuntime")


def wanted(manifest: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(name, what it is made of)`` of the runtime a rendered TrainJob needs kubebench to make; None if none."""
    notes = (manifest.get("metadata") or {}).get("annotations") or {}
    ref = (manifest.get("spec") or {}).get("runtimeRef") or {}
    if manifest.get("kind") != "TrainJob" or RUNTIME_ANNOTATION not in notes or ref.get("kind") != "TrainingRuntime":
        return None
    return str(ref["name"]), json.loads(notes[RUNTIME_ANNOTATION])


def runtime(name: str, base: dict[str, Any], wanted: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """The TrainingRuntime ``name``: ``base``'s spec with the gang's ``podGroupPolicy``."""
    spec = copy.deepcopy(base.get("spec") or {})
    spec["podGroupPolicy"] = wanted["podGroupPolicy"]
    priority = wanted.get("priorityClass")
    if priority:
        for job in ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []:
            if job.get("name") == TRAINER_NODE:
                pod = job.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
                pod.setdefault("spec", {})["priorityClassName"] = priority
    return {"apiVersion": TRAINING_RUNTIMES.api_version, "kind": "TrainingRuntime",
            "metadata": {"name": name, "labels": dict(labels)}, "spec": spec}


def ensure(api: Api, namespace: str, manifest: dict[str, Any], labels: dict[str, str]) -> str | None:
    """Make the TrainingRuntime the TrainJob ``manifest`` runs on, if kubebench makes it and it is
    not there yet; its name (None when the TrainJob needs none). A BackendError names the missing base."""
    found = wanted(manifest)
    if found is None:
        return None
    name, made_of = found
    if api.get(TRAINING_RUNTIMES, namespace, name) is not None:
        return name
    base = api.get_cluster(CLUSTER_TRAINING_RUNTIMES, made_of["base"])
    if base is None:
        raise BackendError(f"ClusterTrainingRuntime {made_of['base']!r} not found: a gang-scheduled TrainJob runs on a "
                           "copy of it with podGroupPolicy (install Trainer's runtimes, or name a runtime of your own "
                           "that has podGroupPolicy in job.runtime)")
    api.create(TRAINING_RUNTIMES, namespace, runtime(name, base, made_of, labels))  # None: made meanwhile
    return name
