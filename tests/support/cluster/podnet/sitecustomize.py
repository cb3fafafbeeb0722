"""The stand-in's pod network as a pod's Python processes see it (imported as ``sitecustomize``
from the PYTHONPATH the stand-in's kubelet gives every container it starts; see support/cluster/network.py).

A pod has a network namespace of its own: binding the wildcard address listens on the pod's IP, and
names resolve through the cluster's DNS with the pod's search path (``<ns>.svc.cluster.local
svc.cluster.local cluster.local``). The stand-in runs pods as processes of one machine, so here

- binding ``0.0.0.0`` (or ``""``) binds the pod's own loopback address (``K8S_STANDIN_POD_IP``);
- a name that a Service of the cluster answers to resolves to its ClusterIP, from the table the
  stand-in keeps (``K8S_STANDIN_DNS``: JSON ``{fqdn: ip}``, read at each lookup, so that a Service
  created after the process started resolves, and a deleted one no longer does); any other name
  resolves as it did.
"""

from __future__ import annotations

import json
import os
import socket

_POD_IP = os.environ.get("K8S_STANDIN_POD_IP", "")
_DNS = os.environ.get("K8S_STANDIN_DNS", "")
_NAMESPACE = os.environ.get("K8S_STANDIN_NAMESPACE", "default")
_DOMAIN = "cluster.local"
_getaddrinfo = socket.getaddrinfo
_bind = socket.socket.bind


def _cluster_ip(host: object) -> str | None:
    if not _DNS or not isinstance(host, str) or not host or host[0].isdigit() or host == "localhost":
        return None
    try:
        with open(_DNS, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return None
    name = host.rstrip(".").lower()
    search = [f"{name}.{_NAMESPACE}.svc.{_DOMAIN}", f"{name}.svc.{_DOMAIN}", f"{name}.{_DOMAIN}", name]
    return next((table[n] for n in search if n in table), None)


def _resolving(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    return _getaddrinfo(_cluster_ip(host) or host, *args, **kwargs)


def _binding(self: socket.socket, address):  # type: ignore[no-untyped-def]
    if self.family == socket.AF_INET and isinstance(address, tuple) and address[0] in ("", "0.0.0.0"):
        address = (_POD_IP, *address[1:])
    return _bind(self, address)


socket.getaddrinfo = _resolving
if _POD_IP:
    socket.socket.bind = _binding  # type: ignore[method-assign]
