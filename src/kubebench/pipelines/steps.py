"""What every pipeline step of kubebench gets, whichever engine runs it: its image and command, the
store's URL (a Secret's key ``url``: by default the Secret of ``kubebench deploy manifests``), the
runs' claim mounted where ``KUBEBENCH_HOME`` points, and the labels that let it reach the store
(the NetworkPolicy of ``deploy manifests`` admits kubebench's own pods only).

The step runs ``kubebench run SPEC --backend kubernetes --id ID --label commit=SHA --outputs DIR``,
then ``kubebench check ID --first-ok --outputs DIR``: a failed run fails the first, a significant
regression the second; the first experiment of a series passes its gate (nothing to compare with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import deploy

#: Where the step writes its outputs (Argo output parameters read them from there).
OUTPUTS = "/tmp/kubebench-outputs"
#: The labels and annotations of a step's pod: reaches the store; no Istio sidecar (a Kubeflow
#: profile namespace injects one, and a Job's pod with a sidecar never ends).
POD_LABELS = {"app.kubernetes.io/name": deploy.NAME, "app.kubernetes.io/part-of": deploy.NAME,
              "app.kubernetes.io/component": "pipeline-step"}
POD_ANNOTATIONS = dict(deploy.ISTIO_OPT_OUT)
#: Where the spec is by default: the spec ConfigMap of ``deploy manifests --spec`` mounted there.
DEFAULT_SPEC = f"{deploy.SPEC_MOUNT}/benchmark.yaml"


@dataclass(frozen=True)
class StepOptions:
    """What ``kubebench deploy kfp-component | argo-template | tekton-task`` is asked for."""

    image: str = deploy.DEFAULT_IMAGE
    #: kubebench's namespace (the store's Service and the claim are there; the steps run there too)
    namespace: str = deploy.NAME
    #: a Secret whose key ``url`` is the store's SQLAlchemy URL (default: the one of ``deploy manifests``)
    store_secret: str = deploy.STORE_SECRET
    claim: str = deploy.NAME
    service_account: str = deploy.NAME


def env(o: StepOptions) -> list[dict[str, Any]]:
    """The step container's environment (Kubernetes ``EnvVar`` form): the store's URL from its Secret,
    never a plain value (it holds the password)."""
    return [{"name": "KUBEBENCH_HOME", "value": deploy.HOME_MOUNT}, deploy.store_env(o.store_secret)]


def security() -> dict[str, Any]:
    """PodSecurity ``restricted``, as every pod of ``deploy manifests``."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"}}


def run_args(spec: str, experiment_id: str, commit: str, outputs: str) -> list[str]:
    """``kubebench run`` of a step (the arguments after ``kubebench``)."""
    return ["run", spec, "--backend", "kubernetes", "--id", experiment_id, "--label", f"commit={commit}",
            "--outputs", outputs]


def check_args(experiment_id: str, outputs: str) -> list[str]:
    """``kubebench check`` of a step: the experiment against those before it in its series."""
    return ["check", experiment_id, "--first-ok", "--outputs", outputs]
