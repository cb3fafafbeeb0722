"""Argo Workflows: a ``WorkflowTemplate`` (argoproj.io/v1alpha1) of two container steps, ``run`` then
``gate`` (see :mod:`.steps`). The experiment id is the Workflow's uid (``argo retry`` keeps it, so a
retried workflow resumes its experiment; ``argo resubmit`` starts a new one); ``commit`` labels the
experiment. The run step's outputs (experiment id, primary metric and median, failed runs) and the
gate's verdict are the template's output parameters, read from files (``valueFrom.path``).

Submitted with ``argo submit --from workflowtemplate/kubebench -p spec=… -p commit=$SHA``, or used
from another workflow by ``templateRef``.
"""

from __future__ import annotations

from typing import Any

from .. import deploy
from . import steps

NAME = "kubebench"
UID = "{{workflow.uid}}"
_RUN_OUTPUTS = ("experiment-id", "primary-metric", "primary-median", "runs-failed")


def _param(name: str) -> str:
    return f"{{{{workflow.parameters.{name}}}}}"


def _container(o: steps.StepOptions, args: list[str]) -> dict[str, Any]:
    return {"image": o.image, "command": ["kubebench"], "args": args, "env": steps.env(o),
            "volumeMounts": [{"name": "home", "mountPath": deploy.HOME_MOUNT}]
            + [{"name": "spec", "mountPath": deploy.SPEC_MOUNT, "readOnly": True}],
            "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
            "securityContext": steps.security()}


def _outputs(names: tuple[str, ...]) -> dict[str, Any]:
    return {"parameters": [{"name": n, "valueFrom": {"path": f"{steps.OUTPUTS}/{n}"}} for n in names]}


def workflow_template(o: steps.StepOptions) -> dict[str, Any]:
    """The WorkflowTemplate ``kubebench``."""
    run = {"name": "run", "container": _container(o, steps.run_args(_param("spec"), UID, _param("commit"), steps.OUTPUTS)),
           "outputs": _outputs(_RUN_OUTPUTS)}
    gate = {"name": "gate", "container": _container(o, steps.check_args(UID, steps.OUTPUTS)), "outputs": _outputs(("verdict",))}
    main = {"name": "benchmark", "steps": [[{"name": "run", "template": "run"}], [{"name": "gate", "template": "gate"}]],
            "outputs": {"parameters": [
                *({"name": n, "valueFrom": {"parameter": f"{{{{steps.run.outputs.parameters.{n}}}}}"}} for n in _RUN_OUTPUTS),
                {"name": "verdict", "valueFrom": {"parameter": "{{steps.gate.outputs.parameters.verdict}}"}}]}}
    spec_map = {"name": deploy.SPEC_CONFIGMAP, "optional": True}
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "WorkflowTemplate",
        "metadata": {"name": NAME, "namespace": o.namespace, "labels": dict(steps.POD_LABELS)},
        "spec": {
            "entrypoint": "benchmark",
            "serviceAccountName": o.service_account,
            "arguments": {"parameters": [
                {"name": "spec", "value": steps.DEFAULT_SPEC,
                 "description": "The spec's path in the step's container (default: the spec ConfigMap of deploy manifests --spec)."},
                {"name": "commit", "description": "The commit measured: the experiment's label commit=…"}]},
            "podMetadata": {"labels": dict(steps.POD_LABELS), "annotations": dict(steps.POD_ANNOTATIONS)},
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": o.claim}},
                        {"name": "spec", "configMap": spec_map}],
            "templates": [main, run, gate],
        },
    }
