"""What a run's provenance says of its cluster, read once per runner: the API server's version
(``/version``'s ``gitVersion``) and the versions of the operators that run jobs (their controller
Deployment's image tag), so that the same spec run on two clusters shows where they differ.

Each operator's controller is read where its release installs it (kustomize overlays at the tags
named); one that is not there, or that kubebench may not read (``get deployments`` in that
namespace: the Role of ``deploy manifests`` does not grant it), is left out.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from ...errors import BackendError
from .api import DEPLOYMENTS

if TYPE_CHECKING:
    from .api import Api

#: (namespace, Deployment, container) of each operator's controller → its provenance key:
#: kubeflow/trainer v1.9.4 ``manifests/overlays/standalone`` (image tag ``v1-93c5489``), v2.3.0
#: ``manifests/overlays/manager``; kubeflow/mpi-operator v0.8.0 ``deploy/v2beta1/mpi-operator.yaml``;
#: kubernetes-sigs/kueue ``config/default`` and kubernetes-sigs/jobset ``config/default``.
OPERATORS: dict[str, tuple[str, str, str]] = {
    "training-operator": ("kubeflow", "training-operator", "training-operator"),
    "trainer": ("kubeflow-system", "kubeflow-trainer-controller-manager", "manager"),
    "mpi-operator": ("mpi-operator", "mpi-operator", "mpi-operator"),
    "kueue": ("kueue-system", "kueue-controller-manager", "manager"),
    "jobset": ("jobset-system", "jobset-controller-manager", "manager"),
}


def image_tag(image: str) -> str:
    """``ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.3.0`` → ``v2.3.0`` (a digest when pinned by one)."""
    name, _, digest = image.partition("@")
    if digest:
        return digest
    repository, _, tag = name.rpartition(":")
    return tag if repository and "/" not in tag else "latest"


def operator_version(deployment: dict[str, Any], container: str) -> str | None:
    """The tag of the controller's image (the named container, else the first)."""
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    chosen = next((c for c in containers if c.get("name") == container), containers[0] if containers else None)
    return image_tag(str(chosen["image"])) if chosen and chosen.get("image") else None


class ClusterInfo:
    """The cluster's part of every run's provenance, read on first use (None fields are left out)."""

    def __init__(self, api: Callable[[], Api]) -> None:
        self._api, self._lock = api, threading.Lock()
        self._found: dict[str, Any] | None = None

    def provenance(self) -> dict[str, Any]:
        """``kubernetes`` (the server's version) and ``operators`` (name → version)."""
        with self._lock:
            if self._found is None:
                self._found = self._read()
            return dict(self._found)

    def _read(self) -> dict[str, Any]:
        api = self._api()
        found: dict[str, Any] = {}
        try:
            version = api.version() or {}
        except BackendError:
            version = {}
        if version.get("gitVersion"):
            found["kubernetes"] = str(version["gitVersion"])
        operators = {}
        for key, (namespace, name, container) in OPERATORS.items():
            try:
                deployment = api.get(DEPLOYMENTS, namespace, name)
            except BackendError:  # not allowed to read it there
                continue
            tag = operator_version(deployment, container) if deployment else None
            if tag:
                operators[key] = tag
        if operators:
            found["operators"] = operators
        return found
