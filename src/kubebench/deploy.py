"""Manifests that run kubebench itself inside a cluster (pure; printed by ``kubebench deploy manifests``).

What they create, in one namespace:

- a PersistentVolumeClaim, the shared storage: kubebench's home (store and experiments) and the
  volume every job's replicas mount;
- a ServiceAccount with a least-privilege Role: create, read, watch and delete the job kinds
  kubebench runs, and read pods and their logs — nothing else;
- a ConfigMap with the benchmark spec (when one is given; else create it with ``kubectl create
  configmap kubebench-spec --from-file=benchmark.yaml``);
- a Job that runs ``kubebench run`` on that spec with the Kubernetes backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import __version__

NAME = "kubebench"
SPEC_CONFIGMAP = "kubebench-spec"
SPEC_MOUNT = "/etc/kubebench/spec"
HOME_MOUNT = "/kubebench"
DEFAULT_IMAGE = f"kubebench:{__version__}"
#: The job kinds kubebench creates, by API group (plural resource names).
JOB_RESOURCES = {
    "kubeflow.org": ["pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs"],
    "trainer.kubeflow.org": ["trainjobs"],
    "batch": ["jobs"],
}
#: Exactly the verbs the Kubernetes backend uses.
JOB_VERBS = ["create", "get", "list", "watch", "delete"]


def manifests(namespace: str = NAME, image: str = DEFAULT_IMAGE, storage_size: str = "10Gi",
              storage_class: str | None = None, spec_files: dict[str, str] | None = None,
              spec_name: str = "benchmark.yaml") -> list[dict[str, Any]]:
    """Every object to apply, in apply order; ``spec_files`` (name → text) become the spec ConfigMap."""
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/version": __version__}
    docs = [
        _claim(namespace, labels, storage_size, storage_class),
        _object("v1", "ServiceAccount", NAME, namespace, labels),
        {**_object("rbac.authorization.k8s.io/v1", "Role", NAME, namespace, labels), "rules": _rules()},
        {
            **_object("rbac.authorization.k8s.io/v1", "RoleBinding", NAME, namespace, labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
    ]
    if spec_files:
        docs.append({**_object("v1", "ConfigMap", SPEC_CONFIGMAP, namespace, labels), "data": dict(spec_files)})
    docs.append(_runner_job(namespace, labels, image, spec_name))
    return docs


def spec_files_of(spec: Path) -> dict[str, str]:
    """The spec file and, when it names one, its job template, for the spec ConfigMap."""
    import yaml

    files = {spec.name: spec.read_text(encoding="utf-8")}
    template = ((yaml.safe_load(files[spec.name]) or {}).get("job") or {}).get("template")
    if template and (spec.parent / template).is_file() and "/" not in template:
        files[template] = (spec.parent / template).read_text(encoding="utf-8")
    return files


def _object(api_version: str, kind: str, name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}}


def _claim(namespace: str, labels: dict[str, str], size: str, storage_class: str | None) -> dict[str, Any]:
    # ReadWriteMany: replicas of one job, and kubebench, may run on different nodes.
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {**_object("v1", "PersistentVolumeClaim", NAME, namespace, labels), "spec": spec}


def _rules() -> list[dict[str, Any]]:
    rules = [{"apiGroups": [group], "resources": list(plurals), "verbs": list(JOB_VERBS)}
             for group, plurals in JOB_RESOURCES.items()]
    rules.append({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]})
    rules.append({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]})
    return rules


def _runner_job(namespace: str, labels: dict[str, str], image: str, spec_name: str) -> dict[str, Any]:
    container = {
        "name": NAME,
        "image": image,
        "command": ["kubebench", "run", f"{SPEC_MOUNT}/{spec_name}", "--backend", "kubernetes"],
        # The claim is kubebench's home: the SQLite store and the experiments the jobs write into.
        "env": [{"name": "KUBEBENCH_HOME", "value": HOME_MOUNT}],
        "volumeMounts": [{"name": "home", "mountPath": HOME_MOUNT},
                         {"name": "spec", "mountPath": SPEC_MOUNT, "readOnly": True}],
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    pod = {
        "metadata": {"labels": dict(labels)},
        "spec": {
            "serviceAccountName": NAME,
            "restartPolicy": "Never",
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
            "containers": [container],
            "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": NAME}},
                        {"name": "spec", "configMap": {"name": SPEC_CONFIGMAP}}],
        },
    }
    return {**_object("batch/v1", "Job", f"{NAME}-run", namespace, labels),
            "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 86400, "template": pod}}
