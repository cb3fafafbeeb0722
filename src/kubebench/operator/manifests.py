"""What ``kubebench deploy manifests --operator`` adds: the Benchmark CRD, the controller's Deployment
with its ServiceAccount and a least-privilege Role, and the runner's right to write its Benchmark's
status. Every name of the API comes from :mod:`kubebench.operator` (never written twice)."""

from __future__ import annotations

from typing import Any

from .. import deploy
from . import GROUP, PLURAL
from .controller import LEASE_NAME
from .crd import crd

NAME = "kubebench-operator"


def _rbac(kind: str, name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}}


def rules() -> list[dict[str, Any]]:
    """The controller's Role: exactly what it reads and writes."""
    return [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch", "delete"]},
            {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["get", "patch", "update"]},
            {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": ["create", "get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]},
            # create cannot be limited by name (the name is not known to RBAC before it exists)
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [LEASE_NAME],
             "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}]


def runner_rules() -> list[dict[str, Any]]:
    """What a runner needs of its Benchmark: read it, write its status."""
    return [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get"]},
            {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["patch"]}]


def dashboard_rules() -> list[dict[str, Any]]:
    """What the read-only dashboard's own account may do: list the namespace's Benchmarks (its
    Benchmarks panel), nothing else."""
    return [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list"]}]


def _binding(name: str, namespace: str, account: str, labels: dict[str, str]) -> dict[str, Any]:
    return {**_rbac("RoleBinding", name, namespace, labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}


def operator_manifests(namespace: str, image: str = deploy.DEFAULT_IMAGE, replicas: int = 1,
                       dashboard: bool = True) -> list[dict[str, Any]]:
    """The CRD, the controller (Deployment, ServiceAccount, Role, RoleBinding), the runner's Role and
    (with ``dashboard``) the dashboard's, which may only read Benchmarks."""
    labels = {"app.kubernetes.io/name": "kubebench", "app.kubernetes.io/component": "operator"}
    env = [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    container = {"name": "operator", "image": image, "command": ["kubebench", "operator", "--leader-elect"], "env": env,
                 "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                 "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                     "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}
    selector = {"app.kubernetes.io/name": "kubebench", "app.kubernetes.io/component": "operator"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": NAME, "namespace": namespace, "labels": dict(labels)},
                  "spec": {"replicas": replicas, "selector": {"matchLabels": selector}, "template": {
                      "metadata": {"labels": dict(labels), "annotations": dict(deploy.ISTIO_OPT_OUT)},
                      "spec": {"serviceAccountName": NAME, "containers": [container],
                               "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}}}}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": namespace, "labels": dict(labels)}}
    runner = f"{deploy.NAME}-benchmark-status"
    docs = [crd(), account, {**_rbac("Role", NAME, namespace, labels), "rules": rules()}, _binding(NAME, namespace, NAME, labels),
            {**_rbac("Role", runner, namespace, labels), "rules": runner_rules()},
            _binding(runner, namespace, deploy.NAME, labels)]
    if dashboard:
        reader = f"{deploy.DASHBOARD}-benchmarks"
        docs += [{**_rbac("Role", reader, namespace, labels), "rules": dashboard_rules()},
                 _binding(reader, namespace, deploy.DASHBOARD, labels)]
    return docs + [deployment]
