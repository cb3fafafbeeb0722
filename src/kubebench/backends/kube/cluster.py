"""The cluster as the Kubernetes backend and its job kinds' drivers share it: the backend's options,
the API client (connected on first use), the namespace jobs go to, the cluster's Kubernetes version,
which kinds of object the cluster serves (asked once each), and the nodes read for provenance."""

from __future__ import annotations

import threading

from ...errors import BackendError
from ...render import versions
from . import kueue, objects
from .api import Api, Resource, current_namespace
from .config import KubernetesConfig
from .provenance import NodeCache


class Cluster:
    """One backend's connection to its cluster (thread-safe: runs in flight share it)."""

    def __init__(self, config: KubernetesConfig) -> None:
        self.config = config
        self._lock = threading.RLock()
        self._api: Api | None = None
        self._namespace: str | None = None
        self._served: dict[Resource, str | None] = {}  # resource → why it cannot be used (None: it can)
        self.nodes = NodeCache(lambda: self.api)
        self._workloads: list[Resource | None] = []  # Kueue's Workloads, once looked up
        #: The cluster's Kubernetes version: given, else read from the API server once (``check``).
        self.version = versions.parse(config.kubernetes_version) if config.kubernetes_version else None

    @property
    def namespace(self) -> str:
        """The namespace jobs go to (see ``KubernetesConfig.namespace``)."""
        with self._lock:
            if self._namespace is None:
                self._namespace = current_namespace(self.config)
            return self._namespace

    @property
    def api(self) -> Api:
        """The API client, connected on first use."""
        with self._lock:
            if self._api is None:
                self._api = Api(self.config)
            return self._api

    def served(self, resources: list[Resource]) -> None:
        """Record ``resources`` as served (the preflight checks found them)."""
        with self._lock:
            self._served.update({r: None for r in resources})

    def check_served(self, resource: Resource) -> None:
        """Once per kind: is it served here? (an operator not installed, an MPIJob version not served)"""
        with self._lock:
            known = resource in self._served
        if not known:
            why = objects.not_served(self.api, resource)
            with self._lock:
                self._served[resource] = why
        if self._served[resource]:
            raise BackendError(self._served[resource])

    def workloads(self) -> Resource | None:
        """Kueue's Workloads at the newest version the cluster serves (looked up once); None without Kueue."""
        with self._lock:
            if not self._workloads:
                try:
                    self._workloads.append(kueue.resource(self.api, "workloads", "Workload"))
                except BackendError:
                    self._workloads.append(None)
            return self._workloads[0]

    def close(self) -> None:
        """Close the API client's connections (a later call connects again)."""
        with self._lock:
            if self._api is not None:
                self._api.close()
                self._api = None
