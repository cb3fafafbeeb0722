"""What a run's provenance says of its cluster, read once per runner: the API server's version
(``/version``'s ``gitVersion``) and the versions of the operators that run jobs (their controller
Deployment's image tag), so that the same spec run on two clusters shows where they differ.

Each operator's controller is read where its release installs it (kustomize overlays at the tags
named); one that is not there, or that kubebench may not read (``get deployments`` in that
namespace: the Role of ``deploy manifests`` does not grant it), is left out.
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any, Callable

from ...errors import BackendError
from .api import DEPLOYMENTS, Resource

if TYPE_CHECKING:
    from .api import Api

#: Where each operator's controller is, as its release installs it: (namespace, Deployment, container),
#: the first found wins. kubeflow/trainer v1.9.4 ``manifests/overlays/standalone`` (image tag
#: ``v1-93c5489``) and v2.3.0 ``manifests/overlays/manager`` (which installs JobSet in its namespace
#: too); kubeflow/mpi-operator v0.8.0 ``deploy/v2beta1/mpi-operator.yaml``; kubernetes-sigs/kueue and
#: kubernetes-sigs/jobset ``config/default``.
OPERATORS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "training-operator": (("kubeflow", "training-operator", "training-operator"),),
    "trainer": (("kubeflow-system", "kubeflow-trainer-controller-manager", "manager"),),
    "jobset": (("kubeflow-system", "jobset-controller-manager", "manager"), ("jobset-system", "jobset-controller-manager", "manager")),
    "mpi-operator": (("mpi-operator", "mpi-operator", "mpi-operator"),),
    "kueue": (("kueue-system", "kueue-controller-manager", "manager"),),
}


def operators_of(resource: Resource, queued: bool) -> tuple[str, ...]:
    """The operators that run a job of ``resource`` (and Kueue when it is queued); none for a batch Job."""
    found: tuple[str, ...] = ()
    if resource.group == "kubeflow.org":
        found = ("mpi-operator",) if resource.version == "v2beta1" else ("training-operator",)
    elif resource.group == "trainer.kubeflow.org":
        found = ("trainer", "jobset")
    return found + (("kueue",) if queued else ())


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


def _deployment(api: Api, namespace: str, name: str) -> dict | None:
    return api.get(DEPLOYMENTS, namespace, name)


class ClusterInfo:
    """The cluster's part of every run's provenance, each part read once (absent fields are left out)."""

    def __init__(self, api: Callable[[], Api]) -> None:
        self._api, self._lock = api, threading.Lock()
        #: the API server's ``/version`` when the pre-flight check has read it (no second read)
        self.server: dict[str, Any] | None = None
        self._versions: dict[str, str | None] = {}

    def provenance(self, resource: Resource, queued: bool = False) -> dict[str, Any]:
        """``kubernetes`` (the server's version) and ``operators`` (name → version) of the operators that
        run jobs of ``resource``."""
        with self._lock:
            if self.server is None:
                self.server = self._read(self._read_version) or {}
            operators = {}
            for name in operators_of(resource, queued):
                if name not in self._versions:
                    self._versions[name] = self._operator(name)
                if self._versions[name]:
                    operators[name] = self._versions[name]
        found: dict[str, Any] = {"kubernetes": str(self.server["gitVersion"])} if self.server.get("gitVersion") else {}
        return found | ({"operators": operators} if operators else {})

    def _operator(self, name: str) -> str | None:
        for namespace, deployment, container in OPERATORS[name]:
            found = self._read(functools.partial(_deployment, namespace=namespace, name=deployment))
            if found:
                return operator_version(found, container)
        return None

    @staticmethod
    def _read_version(api: Api) -> dict | None:
        return api.version()

    def _read(self, read: Callable[[Api], dict | None]) -> dict | None:
        try:
            return read(self._api())
        except BackendError:  # not allowed to read it (the API server's answer is kept as an error)
            return None
