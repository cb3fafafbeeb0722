"""Where a Kubernetes run ran, from its pods and their nodes (not from the machine kubebench runs on).

From the pods: the node (``spec.nodeName``), the image and the digest the kubelet pulled
(``containerStatuses[].imageID``), the GPUs each asked for. From the node (when kubebench may read
nodes): the GPU product and memory (GPU feature discovery's ``nvidia.com/gpu.*`` labels), the
instance type, the node's OS, kernel, architecture and kubelet. Fields that differ between the
replicas list each value once, in rank order.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

from ...errors import BackendError
from . import status as st

if TYPE_CHECKING:
    from .api import Api

#: Node labels recorded, by the provenance field they fill.
NODE_LABELS = {"gpu_product": "nvidia.com/gpu.product", "instance_type": "node.kubernetes.io/instance-type",
               "zone": "topology.kubernetes.io/zone"}
#: ``status.nodeInfo`` fields recorded.
NODE_INFO = {"os": "osImage", "kernel": "kernelVersion", "cpu_arch": "architecture", "kubelet": "kubeletVersion"}


def pod_provenance(pods: list[dict[str, Any]], main: frozenset[str], node_of: Callable[[str], dict | None]) -> dict[str, Any]:
    """Provenance of a run from its pods; ``node_of(name)`` reads a node (None when it cannot)."""
    pods = sorted(pods, key=st.rank)
    data: dict[str, Any] = {}
    nodes = _once(p.get("spec", {}).get("nodeName") for p in pods)
    if nodes:
        data["node"] = ", ".join(nodes)
    images, digests = _images(pods, main)
    if images:
        data["image"] = ", ".join(images)
    if digests:
        data["image_digest"] = ", ".join(digests)
    found = [n for n in (node_of(name) for name in nodes) if n]
    for key, label in NODE_LABELS.items():
        values = _once(((n.get("metadata") or {}).get("labels") or {}).get(label) for n in found)
        if values:
            data[key] = ", ".join(values)
    for key, field in NODE_INFO.items():
        values = _once(((n.get("status") or {}).get("nodeInfo") or {}).get(field) for n in found)
        if values:
            data[key] = ", ".join(values)
    gpus = _gpus(pods, {n["metadata"]["name"]: n for n in found})
    if gpus:
        data["gpus"] = gpus
    return data


def _once(values: Any) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values if v))


def _images(pods: list[dict[str, Any]], main: frozenset[str]) -> tuple[list[str], list[str]]:
    images, digests = [], []
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            if status.get("name") in main or not main:
                images.append(status.get("image"))
                digest = str(status.get("imageID") or "").rpartition("@")[2]
                digests.append(digest)
    return _once(images), _once(digests)


def _gpus(pods: list[dict[str, Any]], nodes: dict[str, dict]) -> list[dict[str, Any]]:
    """The GPUs the run's pods were given: one entry per GPU, as the local provenance lists them."""
    gpus = []
    for pod in pods:
        labels = ((nodes.get(pod.get("spec", {}).get("nodeName")) or {}).get("metadata") or {}).get("labels") or {}
        for container in (pod.get("spec") or {}).get("containers") or []:
            limits = (container.get("resources") or {}).get("limits") or {}
            count = int(float(limits.get("nvidia.com/gpu", 0) or 0))
            memory = labels.get("nvidia.com/gpu.memory")  # MiB
            gpu = {"model": labels.get("nvidia.com/gpu.product", "nvidia.com/gpu")}
            if memory and str(memory).isdigit():
                gpu["memory_gb"] = round(int(memory) / 1024, 1)
            gpus += [dict(gpu) for _ in range(count)]
    return gpus


class NodeCache:
    """Nodes read once each (None when gone or not allowed: provenance then has no node fields)."""

    def __init__(self, api: Callable[[], Api]) -> None:
        self._api, self._nodes, self._lock = api, {}, threading.Lock()

    def read(self, name: str) -> dict | None:
        with self._lock:
            if name in self._nodes:
                return self._nodes[name]
        try:
            found = self._api().node(name)
        except BackendError:
            found = None
        with self._lock:
            self._nodes[name] = found
        return found
