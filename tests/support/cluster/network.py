"""The stand-in's cluster network, for pods that are processes of this machine: an IP per pod, a
ClusterIP per Service, kube-proxy, and cluster DNS.

- Pod IPs: each pod gets a loopback address of its own (``127.x.y.z``, at random so that test
  sessions running side by side do not meet), written as ``status.podIP`` when it is scheduled.
  Its processes bind it when they bind the wildcard address (``podnet/sitecustomize.py``), so two
  server pods listen on the same port, as on a cluster.
- Services: the API server gives a Service a ClusterIP when it is created (``spec.clusterIP``,
  defaults ``type: ClusterIP``, ``protocol: TCP``, ``targetPort`` = ``port``), here through an
  admission hook. Headless Services (``clusterIP: None``) and other types are left as they come.
- kube-proxy: each Service port listens on ClusterIP:port and forwards every connection to one of
  the endpoints that are ready at that moment (pods matching the selector, with ``status.podIP``, a
  ``Ready`` condition True and no ``deletionTimestamp``, as the EndpointSlice controller publishes
  them), to its ``targetPort`` (a number, or a container port's name). A connection to a Service
  without a ready endpoint is refused (kube-proxy's REJECT rule), here with a reset.
- DNS: ``<service>.<namespace>.svc.cluster.local`` → ClusterIP, in a file the pods' processes read
  at each lookup with their namespace's search path.

Left out: EndpointSlice objects (kube-proxy here reads the pods directly), session affinity,
NodePorts and load balancers, the ``<SERVICE>_SERVICE_HOST`` variables, IPv6, UDP.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import socket
import struct
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .store import PODS, ApiError, Key

if TYPE_CHECKING:
    from .kubelet import PodSim
    from .store import Store

SERVICES: Key = ("", "v1", "services")
SHIM = Path(__file__).parent / "podnet"
DOMAIN = "cluster.local"


class Network:
    """Pod IPs, Service ClusterIPs, the forwarders and the DNS table of one emulated cluster."""

    def __init__(self, store: Store, folder: Path) -> None:
        self.store = store
        self.dns = folder / "cluster-dns.json"
        self._taken: set[str] = set()
        self._proxies: dict[tuple[str, str], list[_Forwarder]] = {}  # (namespace, service) → one per port
        self._names: dict[str, str] = {}
        self._lock = threading.Lock()
        self.errors: list[Exception] = []

    def start(self) -> "Network":
        """Give Services their ClusterIP on create, follow them, and publish an empty DNS table."""
        self.dns.parent.mkdir(parents=True, exist_ok=True)
        self._publish()
        self.store.admission.append(self.admit)
        self.store.listeners.append(self._on_event)
        return self

    def stop(self) -> None:
        """Stop every forwarder."""
        if self.admit in self.store.admission:
            self.store.admission.remove(self.admit)
        if self._on_event in self.store.listeners:
            self.store.listeners.remove(self._on_event)
        with self._lock:
            proxies = [p for ports in self._proxies.values() for p in ports]
            self._proxies.clear()
        for proxy in proxies:
            proxy.close()

    def pod_ip(self) -> str:
        """A loopback address no other pod or Service of this cluster has."""
        with self._lock:
            while True:
                ip = f"127.{random.randint(16, 254)}.{random.randint(0, 255)}.{random.randint(1, 254)}"
                if ip not in self._taken:
                    self._taken.add(ip)
                    return ip

    def pod_env(self, pod: PodSim, env: dict[str, str]) -> dict[str, str]:
        """``env`` of a container of ``pod`` with the pod network's shim on its PYTHONPATH."""
        path = str(SHIM) + (f":{env['PYTHONPATH']}" if env.get("PYTHONPATH") else "")
        return {**env, "PYTHONPATH": path, "K8S_STANDIN_POD_IP": pod.ip, "K8S_STANDIN_DNS": str(self.dns),
                "K8S_STANDIN_NAMESPACE": pod.job.namespace}

    # --- the API server's allocation, and kube-proxy following the Services ----------------------

    def admit(self, key: Key, obj: dict) -> dict:
        """The API server's defaults and ClusterIP allocation for a Service being created."""
        if key != SERVICES:
            return obj
        spec = obj.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        if spec["type"] == "ClusterIP" and spec.get("clusterIP") in (None, ""):
            spec["clusterIP"] = self.pod_ip()
            spec["clusterIPs"] = [spec["clusterIP"]]
        return obj

    def _on_event(self, kind: str, key: Key, obj: dict) -> None:
        if key != SERVICES:
            return
        meta, spec = obj["metadata"], obj.get("spec") or {}
        name = (meta["namespace"], meta["name"])
        try:
            if kind == "ADDED" and spec.get("clusterIP") not in (None, "", "None"):
                forwarders = [_Forwarder(self.store, meta["namespace"], spec, p) for p in spec.get("ports") or []]
                with self._lock:
                    self._proxies[name] = forwarders
                    self._names[f"{meta['name']}.{meta['namespace']}.svc.{DOMAIN}"] = spec["clusterIP"]
            elif kind == "DELETED":
                with self._lock:
                    forwarders = self._proxies.pop(name, [])
                    self._names.pop(f"{meta['name']}.{meta['namespace']}.svc.{DOMAIN}", None)
                for forwarder in forwarders:
                    forwarder.close()
            else:
                return
            self._publish()
        except Exception as e:  # noqa: BLE001  a bug of the stand-in: keep it for the test
            self.errors.append(e)

    def _publish(self) -> None:
        with self._lock:
            text = json.dumps(self._names)
        partial = self.dns.with_suffix(".tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(self.dns)  # a reader never sees half a table


class _Forwarder:
    """One Service port: ClusterIP:port → a ready endpoint, each connection in turn (round robin)."""

    def __init__(self, store: Store, namespace: str, spec: dict, port: dict) -> None:
        self.store, self.namespace, self.port = store, namespace, port
        self.selector = ",".join(f"{k}={v}" for k, v in (spec.get("selector") or {}).items())
        self._turn = itertools.count()
        self._closed = threading.Event()
        self._connections: set[socket.socket] = set()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((spec["clusterIP"], int(port["port"])))
        self._listener.listen(64)
        threading.Thread(target=self._accept, daemon=True, name=f"kube-proxy-{spec['clusterIP']}").start()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in list(self._connections):
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def endpoints(self) -> list[tuple[str, int]]:
        """The ready pods behind the Service now, as (pod IP, target port)."""
        if not self.selector:
            return []
        try:
            pods, _ = self.store.list(PODS, self.namespace, self.selector)
        except ApiError:
            return []
        found = []
        for pod in pods:
            status = pod.get("status") or {}
            ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
            port = _target_port(pod, self.port.get("targetPort"))
            if ready and status.get("podIP") and port and not pod["metadata"].get("deletionTimestamp"):
                found.append((status["podIP"], port))
        return sorted(found)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            endpoints = self.endpoints()
            if not endpoints:  # no ready endpoint: refused
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                continue
            target = endpoints[next(self._turn) % len(endpoints)]
            threading.Thread(target=self._serve, args=(client, target), daemon=True).start()

    def _serve(self, client: socket.socket, target: tuple[str, int]) -> None:
        try:
            upstream = socket.create_connection(target, timeout=5)
            upstream.settimeout(None)
        except OSError:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()
            return
        self._connections |= {client, upstream}
        other = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        other.start()
        _pipe(client, upstream)
        other.join()
        for conn in (client, upstream):
            self._connections.discard(conn)
            conn.close()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(1 << 16):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _target_port(pod: dict, target: Any) -> int | None:
    """A Service's ``targetPort`` on one pod: a number, or the name of one of its containers' ports."""
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target:
                return int(port["containerPort"])
    return None
