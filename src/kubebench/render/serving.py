"""A ``kind: Serving`` job: server replicas plus a load generator, as kubebench's own manifest
(``kubebench/v1 Serving``, what the local backend runs) and as the Kubernetes objects that carry it
out on a cluster: a Deployment and a Service for the server, an Indexed Job for the load generator.

The local manifest holds both pod templates, so that ``inject``, ``mount_claim`` and the other
decorations of :mod:`.kinds` reach every container, and :func:`kubernetes_objects` derives the
cluster's objects from it after those decorations, with nothing lost.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import SpecError

SERVER, LOAD = "server", "load"
#: Environment of the server (its port, and the address to listen on) and of the load generator.
PORT_VAR, HOST_VAR, URL_VAR = "KUBEBENCH_SERVER_PORT", "KUBEBENCH_SERVER_HOST", "KUBEBENCH_SERVER_URL"
_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass(frozen=True)
class ServerShape:
    """The concrete server of one trial (parameters filled in)."""

    image: str
    command: tuple[str, ...]
    replicas: int
    port: int
    readiness: str
    api_path: str
    startup_timeout: float
    env: tuple[tuple[str, str], ...] = ()
    resources: tuple[tuple[str, str], ...] = ()


def serving_spec(server: ServerShape, load_container: dict[str, Any], load_replicas: int, deadline: int,
                 pod: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """The ``spec`` of a ``kubebench/v1 Serving`` manifest; ``pod(container)`` makes a pod template."""
    container: dict[str, Any] = {"name": SERVER, "image": server.image, "command": list(server.command),
                                 "ports": [{"name": "http", "containerPort": server.port}]}
    env = [{"name": k, "value": v} for k, v in server.env]
    container["env"] = env + [{"name": PORT_VAR, "value": str(server.port)}, {"name": HOST_VAR, "value": "0.0.0.0"}]
    if server.resources:
        amounts = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in server.resources}
        container["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    load = {**copy.deepcopy(load_container), "name": LOAD}
    return {
        "server": {"replicas": server.replicas, "port": server.port, "readinessPath": server.readiness,
                   "apiPath": server.api_path, "startupTimeoutSeconds": server.startup_timeout,
                   "template": pod(container)},
        "load": {"replicas": load_replicas, "template": pod(load)},
        "activeDeadlineSeconds": deadline,
    }


def server_url(name: str, port: int, api_path: str) -> str:
    """The URL the load generator reaches the Service at (in the job's namespace)."""
    return f"http://{name}:{port}{api_path}"


ROLE = "kubebench.io/role"
#: Seconds between two startup probes: how late after it starts listening a server is seen started.
STARTUP_PROBE_PERIOD = 1
#: The startup probe gives up this much (seconds, or share of it) after the startup timeout.
STARTUP_MARGIN_S, STARTUP_MARGIN_SHARE = 60, 0.1


def kubernetes_objects(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The Deployment, Service and load-generator Job of a Serving manifest, in creation order.

    Every object carries the manifest's labels and namespace; the server's pods are selected by the
    run label, and the load generator's pods get ``KUBEBENCH_SERVER_URL`` pointing at the Service.
    The Job runs ``load.replicas`` pods (Indexed: each knows its index from ``JOB_COMPLETION_INDEX``),
    never retried (``backoffLimit: 0``), with the run's deadline; the Deployment restarts a crashed
    server, so its readiness probe, not its restarts, gates the load (``restartPolicy: Always`` is
    the only policy a Deployment accepts).
    """
    if manifest.get("kind") != "Serving":
        raise SpecError(f"not a Serving manifest: kind {manifest.get('kind')!r}")
    meta, spec = manifest.get("metadata") or {}, manifest.get("spec") or {}
    name, labels = str(meta["name"]), dict(meta.get("labels") or {})
    namespace = {"namespace": meta["namespace"]} if meta.get("namespace") else {}
    server = spec["server"]
    selector = {k: v for k, v in labels.items() if k.endswith("/run")} or {"app.kubernetes.io/name": name}
    selector[ROLE] = SERVER
    service_name = f"{name}-server"[:63]

    def metadata(object_name: str, role: str) -> dict[str, Any]:
        return {"name": object_name, **namespace, "labels": {**labels, ROLE: role}}

    port = int(server["port"])
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata(service_name, SERVER),
                  "spec": {"replicas": int(server["replicas"]), "selector": {"matchLabels": selector},
                           "template": _server_pod(server, labels)}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": metadata(service_name, SERVER),
               "spec": {"selector": selector, "ports": [{"name": "http", "port": port, "targetPort": port}]}}
    url = server_url(service_name, port, server.get("apiPath", "/v1"))
    load = spec["load"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata(name, LOAD),
           "spec": {"completionMode": "Indexed", "completions": int(load["replicas"]),
                    "parallelism": int(load["replicas"]), "backoffLimit": 0,
                    "activeDeadlineSeconds": int(spec.get("activeDeadlineSeconds") or 3600),
                    "template": _load_pod(load, labels, url)}}
    return [deployment, service, job]


def _server_pod(server: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """The server's pod template: restarted when it crashes, probed on its readiness path."""
    pod: dict[str, Any] = copy.deepcopy(server["template"])
    pod.setdefault("metadata", {}).setdefault("labels", {}).update({**labels, ROLE: SERVER})
    spec = pod.setdefault("spec", {})
    spec["restartPolicy"] = "Always"
    probe = {"path": server["readinessPath"], "port": int(server["port"])}
    # The kubelet probes at once, then every period, and kills the container at the startup probe's
    # failureThreshold-th failure in a row. kubebench enforces the startup timeout itself and says
    # why the server was not ready, so the kubelet's kill comes later, after a margin (as the jobs'
    # activeDeadlineSeconds does); a threshold of timeout // period killed a slow server at once.
    period, timeout = STARTUP_PROBE_PERIOD, float(server["startupTimeoutSeconds"])
    failures = math.ceil((timeout + max(STARTUP_MARGIN_S, STARTUP_MARGIN_SHARE * timeout)) / period) + 1
    for container in spec.get("containers", [])[:1]:
        container["readinessProbe"] = {"httpGet": dict(probe), "periodSeconds": 2, "failureThreshold": 3}
        container["startupProbe"] = {"httpGet": dict(probe), "periodSeconds": period, "failureThreshold": failures}
    return pod


def _load_pod(load: dict[str, Any], labels: dict[str, str], url: str) -> dict[str, Any]:
    """The load generator's pod template, told the Service's URL."""
    pod: dict[str, Any] = copy.deepcopy(load["template"])
    pod.setdefault("metadata", {}).setdefault("labels", {}).update({**labels, ROLE: LOAD})
    pod.setdefault("spec", {})["restartPolicy"] = "Never"
    for container in pod["spec"].get("containers", []):
        container["env"] = [e for e in container.get("env") or [] if e.get("name") != URL_VAR] + [
            {"name": URL_VAR, "value": url}]
    return pod


def expand_vars(argv: tuple[str, ...], env: dict[str, str]) -> tuple[str, ...]:
    """``$(NAME)`` in a command replaced by the container's variable, as the kubelet does (an unknown
    name is left as written; ``$$(NAME)`` escapes it)."""

    def one(arg: str) -> str:
        def sub(match: re.Match[str]) -> str:
            start = match.start()
            if start > 0 and arg[start - 1] == "$":
                return match.group(0)
            return env.get(match.group(1), match.group(0))

        return _VAR.sub(sub, arg).replace("$$(", "$(")

    return tuple(one(a) for a in argv)
