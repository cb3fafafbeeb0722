"""Tekton: a ``Task`` (tekton.dev/v1) of two steps, ``run`` then ``gate`` (see :mod:`.steps`).

Its results are what the steps write to ``/tekton/results`` (Tekton's results folder): the
experiment id, the primary metric and its median, the failed runs and the gate's verdict, a few
bytes each (results travel in the termination message: 4 KiB for a step's results). The claim and
the spec come as workspaces (``home``: the runs' claim; ``spec``: optional, the spec's ConfigMap);
the Task's labels and annotations are given to its pods (Tekton copies them to the TaskRun and its
pod), so they reach the store and get no Istio sidecar.

``experiment-id`` defaults to the TaskRun's uid: parameters are substituted before the context
variables (pkg/reconciler/taskrun/taskrun.go, ``ApplyParameters`` then ``ApplyContexts``); in a
Pipeline, pass ``$(context.pipelineRun.uid)``.
"""

from __future__ import annotations

from typing import Any

from .. import deploy
from . import steps

NAME = "kubebench"
RESULTS = "/tekton/results"
_RESULTS = {"experiment-id": "The experiment id (its results are in the store and the dashboard).",
            "primary-metric": "The primary metric's name.",
            "primary-median": "The best trial's median of the primary metric.",
            "runs-failed": "Runs that failed or timed out.",
            "verdict": "The gate's verdict: unchanged, improved, regressed, inconclusive or nothing-to-compare."}


def _step(o: steps.StepOptions, name: str, args: list[str]) -> dict[str, Any]:
    return {"name": name, "image": o.image, "command": ["kubebench"], "args": args, "env": steps.env(o),
            "computeResources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
            "securityContext": steps.security()}


def task(o: steps.StepOptions) -> dict[str, Any]:
    """The Task ``kubebench``."""
    run = steps.run_args("$(params.spec)", "$(params.experiment-id)", "$(params.commit)", RESULTS)
    gate = steps.check_args("$(params.experiment-id)", RESULTS)
    return {
        "apiVersion": "tekton.dev/v1", "kind": "Task",
        "metadata": {"name": NAME, "namespace": o.namespace, "labels": dict(steps.POD_LABELS),
                     "annotations": dict(steps.POD_ANNOTATIONS)},
        "spec": {
            "description": "Run a kubebench spec on the cluster, then fail on a significant regression (kubebench check).",
            "params": [
                {"name": "spec", "type": "string", "default": steps.DEFAULT_SPEC,
                 "description": "The spec's path (default: in the workspace spec, the spec ConfigMap of deploy manifests --spec)."},
                {"name": "experiment-id", "type": "string", "default": "$(context.taskRun.uid)",
                 "description": "The experiment to run or resume; in a Pipeline pass $(context.pipelineRun.uid)."},
                {"name": "commit", "type": "string", "description": "The commit measured: the experiment's label commit=…"}],
            "results": [{"name": n, "type": "string", "description": d} for n, d in _RESULTS.items()],
            "workspaces": [{"name": "home", "mountPath": deploy.HOME_MOUNT,
                            "description": "The runs' claim (kubebench of deploy manifests)."},
                           {"name": "spec", "mountPath": deploy.SPEC_MOUNT, "readOnly": True, "optional": True,
                            "description": "The spec's folder (a ConfigMap)."}],
            "steps": [_step(o, "run", run), _step(o, "gate", gate)],
        },
    }
