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
from ...render.trainjob import RUNTIME_POLICIES, TRAINER_NODE
from .api import Api, Resource

TRAINING_RUNTIMES = Resource("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime")
#: Trainer's built-in runtimes.
BUILT_IN = frozenset(RUNTIME_POLICIES)
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


#: Where Trainer's built-in runtimes come from (v2.3: its Helm chart installs none by default, nor does
#: its ``manager`` overlay; the ``runtimes`` overlay does).
INSTALL_RUNTIMES = ('kubectl apply --server-side -k "https://github.com/kubeflow/trainer.git/manifests/overlays/runtimes'
                    '?ref=v2.3.0", or helm upgrade kubeflow-trainer … --set runtimes.torchDistributed.enabled=true')


def named(manifest: dict[str, Any]) -> str:
    """``<Kind> <name>`` of the runtime a TrainJob runs on (for a gang-scheduled one: the
    ClusterTrainingRuntime kubebench makes its TrainingRuntime of)."""
    found = wanted(manifest)
    if found is not None:
        return f"ClusterTrainingRuntime {found[1]['base']}"
    ref = (manifest.get("spec") or {}).get("runtimeRef") or {}
    return f"{ref.get('kind') or 'ClusterTrainingRuntime'} {ref.get('name', '')}"


def missing(api: Api, namespace: str, manifest: dict[str, Any]) -> str | None:
    """Why the TrainJob ``manifest`` cannot run: the runtime it names is not on the cluster, and how to
    install it (Trainer's webhook refuses a TrainJob whose runtime does not exist); None when it is
    there, or when kubebench may not read runtimes (the webhook then says it at create)."""
    kind, _, name = named(manifest).partition(" ")
    try:
        found = api.get_cluster(CLUSTER_TRAINING_RUNTIMES, name) if kind == "ClusterTrainingRuntime" \
            else api.get(TRAINING_RUNTIMES, namespace, name)
    except BackendError:
        return None  # e.g. 403: not allowed to read runtimes
    if found is not None:
        return None
    where = "" if kind == "ClusterTrainingRuntime" else f" in namespace {namespace}"
    hint = f"install Trainer's built-in runtimes ({INSTALL_RUNTIMES})" if name in BUILT_IN \
        else "create it (kubectl get clustertrainingruntimes lists those there are)"
    return (f"{kind} {name!r} not found{where}: every TrainJob runs on a runtime, which must exist before it is "
            f"created; {hint}, or name one the cluster has in job.runtime")
