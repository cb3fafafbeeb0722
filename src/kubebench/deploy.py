"""Manifests that run kubebench itself inside a cluster (pure; printed by ``kubebench deploy manifests``).

What a platform team applies, in one namespace:

- the Namespace (PodSecurity ``restricted`` warnings on), a ReadWriteMany claim for the runs' folders
  and the data; job pods mount only their own run's folder of it (see ``backend.storage.isolate``);
- PostgreSQL as the results store — a StatefulSet reachable only from kubebench's pods, with a
  password generated in the cluster (the Job ``kubebench-store-secret`` makes the Secret
  ``kubebench-store`` once: the password is never printed, and applying the manifests again keeps
  it) — or an external server (``store_url``, put in that Secret; or ``store_secret``, a Secret of
  yours). Every pod reads the store's URL from the Secret, never from a plain value. SQLite on a
  shared NFS claim written by several pods is not safe;
- a ServiceAccount with a least-privilege Role (the job kinds' five verbs, pods, their logs and
  events, the claim, Kueue queues, making and deleting the ConfigMap of a spec's folder) and, unless ``node_access`` is off, a ClusterRole to read nodes
  (the GPU product and instance type of a run's provenance);
- a ConfigMap with the spec and every file beside it (parameters, templates, post-processing scripts);
- the runner: a Job ``kubebench-run-<id>`` running ``kubebench run --id <id>``, whose restarts
  resume the same experiment (an exit 1 for failed runs or 2 for a bad spec ends it), or a CronJob
  (``schedule``) starting a new experiment each time;
- the dashboard, read-only: a Deployment and a Service on the same store and claim, under a
  ServiceAccount of its own with no token mounted (with the operator: a token that may only read
  Benchmarks).

Every pod is PodSecurity ``restricted``-compliant (non-root without a fixed uid, no privilege
escalation, all capabilities dropped, the RuntimeDefault seccomp profile; PostgreSQL runs as the
image's uid 999) and opts out of Istio sidecar injection, which a Kubeflow profile namespace turns on.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__

NAME = "kubebench"
SPEC_CONFIGMAP = "kubebench-spec"
SPEC_MOUNT = "/etc/kubebench/spec"
HOME_MOUNT = "/kubebench"
DEFAULT_IMAGE = f"kubebench:{__version__}"
POSTGRES = f"{NAME}-postgres"
POSTGRES_IMAGE = "postgres:16"
DASHBOARD_PORT = 8080
#: The job kinds kubebench creates, by API group (plural resource names).
JOB_RESOURCES = {
    "kubeflow.org": ["pytorchjobs", "tfjobs", "mpijobs", "xgboostjobs", "paddlejobs", "jaxjobs"],
    "trainer.kubeflow.org": ["trainjobs"],
    "batch": ["jobs"],
}
#: Exactly the verbs the Kubernetes backend uses on its jobs (and on a Serving job's Deployment).
JOB_VERBS = ["create", "get", "list", "watch", "delete"]
#: … and on a Serving job's Service.
SERVICE_VERBS = ["create", "get", "delete"]
ISTIO_OPT_OUT = {"sidecar.istio.io/inject": "false"}
#: The Secret every kubebench pod reads the store's URL from (key ``url``); for the in-cluster
#: PostgreSQL it holds the generated password too (key ``password``).
STORE_SECRET = f"{NAME}-store"
STORE_URL_KEY = "url"
STORE_PASSWORD_KEY = "password"
#: The Job (and its ServiceAccount and Role) that makes ``STORE_SECRET`` for the in-cluster PostgreSQL.
STORE_SECRET_JOB = f"{NAME}-store-secret"
#: The dashboard's ServiceAccount: not the runner's.
DASHBOARD = f"{NAME}-dashboard"


@dataclass(frozen=True)
class Options:
    """What ``kubebench deploy manifests`` is asked for."""

    namespace: str = NAME
    image: str = DEFAULT_IMAGE
    storage_size: str = "10Gi"
    storage_class: str | None = None
    spec_files: dict[str, str] | None = None
    spec_name: str = "benchmark.yaml"
    #: The experiment the runner Job runs (and resumes after a restart); default: from the spec.
    experiment_id: str | None = None
    #: An external PostgreSQL (SQLAlchemy URL), put in the Secret ``STORE_SECRET``; unset (and no
    #: ``store_secret``): a PostgreSQL StatefulSet in the namespace.
    store_url: str | None = None
    #: Cron schedule: a CronJob starting a new experiment each time, instead of the runner Job.
    schedule: str | None = None
    #: Labels of every experiment the runner starts (``run --label``): KEY → VALUE.
    labels: tuple[tuple[str, str], ...] = ()
    dashboard: bool = True
    node_access: bool = True
    postgres_image: str = POSTGRES_IMAGE
    postgres_size: str = "5Gi"
    #: A Secret of yours whose key ``url`` is the store's URL: nothing of the store is made.
    store_secret: str | None = None
    #: The Benchmark operator instead of a runner (``--operator``): no runner Job, and the dashboard
    #: gets a token (its own Role may read Benchmarks: see ``operator.manifests``).
    operator: bool = False


# What a CronJob's schedule takes: five cron fields, or one of the macros (Kubernetes' robfig/cron).
_CRON_FIELD = r"[0-9A-Za-z*?/,-]+"
_CRON = re.compile(rf"^(?:@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)|{_CRON_FIELD}(?:\s+{_CRON_FIELD}){{4}})$")


def check_schedule(schedule: str) -> str:
    """``schedule`` stripped, or a SpecError saying what a CronJob schedule looks like."""
    from .errors import SpecError

    if not _CRON.match(schedule.strip()):
        raise SpecError(f"invalid --schedule {schedule!r}: expected five cron fields (minute hour day month weekday, "
                        "e.g. \"0 2 * * *\") or a macro such as @daily")
    return schedule.strip()


def manifests(options: Options | None = None, **given: Any) -> list[dict[str, Any]]:
    """Every object to apply, in apply order."""
    o = options or Options(**given)
    if o.store_url is not None and o.store_secret is not None:
        from .errors import SpecError

        raise SpecError("--store-url and --store-secret both name the store: give one")
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": NAME, "app.kubernetes.io/version": __version__}
    docs = [_namespace(o.namespace, labels), _claim(o, labels), _object("v1", "ServiceAccount", NAME, o.namespace, labels),
            {**_object("rbac.authorization.k8s.io/v1", "Role", NAME, o.namespace, labels), "rules": _rules()},
            _binding("RoleBinding", "Role", NAME, o.namespace, labels)]
    if o.node_access:
        docs += [{**_object("rbac.authorization.k8s.io/v1", "ClusterRole", f"{NAME}-{o.namespace}-nodes", None, labels),
                  "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]},
                 _binding("ClusterRoleBinding", "ClusterRole", f"{NAME}-{o.namespace}-nodes", o.namespace, labels)]
    if o.store_url is not None:
        docs.append(store_secret(o.namespace, {STORE_URL_KEY: o.store_url}, labels, encoded=False))
    elif o.store_secret is None:
        docs += _postgres(o, labels)
    if o.spec_files:
        docs.append({**_object("v1", "ConfigMap", SPEC_CONFIGMAP, o.namespace, labels), "data": dict(o.spec_files)})
    if not o.operator:
        docs.append(_cron_job(o, labels) if o.schedule else _runner_job(o, labels))
    if o.dashboard:
        docs += _dashboard(o, labels)
    return docs


def store_env(secret: str | None = None, key: str = STORE_URL_KEY) -> dict[str, Any]:
    """``KUBEBENCH_STORE`` from a key of a Secret (default: ``STORE_SECRET``): the store's URL holds
    its password, so it is never a plain value of a pod."""
    return {"name": "KUBEBENCH_STORE", "valueFrom": {"secretKeyRef": {"name": secret or STORE_SECRET, "key": key}}}


def in_cluster_url(namespace: str, password: str) -> str:
    """The URL of the in-cluster PostgreSQL of ``deploy manifests`` in ``namespace``."""
    return f"postgresql+psycopg://{NAME}:{password}@{POSTGRES}.{namespace}.svc:5432/{NAME}"


def new_password() -> str:
    """A password for the in-cluster PostgreSQL: 192 random bits, URL-safe (it goes in the store's URL)."""
    return secrets.token_urlsafe(24)


def store_secret(namespace: str, values: dict[str, str], labels: dict[str, str] | None = None,
                 encoded: bool = True) -> dict[str, Any]:
    """The Secret ``STORE_SECRET`` holding ``values`` (``data``, base64, as the API stores it; or
    ``stringData`` for a manifest that people read)."""
    body = _object("v1", "Secret", STORE_SECRET, namespace, labels or {"app.kubernetes.io/name": NAME,
                                                                       "app.kubernetes.io/part-of": NAME})
    body["type"] = "Opaque"
    if encoded:
        body["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    else:
        body["stringData"] = dict(values)
    return body


def experiment_id(options: Options) -> str:
    """The runner Job's experiment: given, else the spec's name and a digest of its files."""
    if options.experiment_id:
        return options.experiment_id
    text = "".join(f"{k}\0{v}\0" for k, v in sorted((options.spec_files or {}).items()))
    name = "".join(c if c.isalnum() else "-" for c in Path(options.spec_name).stem.lower()).strip("-") or "bench"
    return f"{name[:40]}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def _object(api_version: str, kind: str, name: str, namespace: str | None, labels: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def _namespace(namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    doc = _object("v1", "Namespace", namespace, None, labels)
    # Warn (not enforce): the benchmark jobs' own pods (an MPI image's sshd …) are the user's choice.
    doc["metadata"]["labels"] |= {"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}
    return doc


def _binding(kind: str, role_kind: str, name: str, namespace: str, labels: dict[str, str],
             account: str = NAME) -> dict[str, Any]:
    return {**_object("rbac.authorization.k8s.io/v1", kind, name, namespace if kind == "RoleBinding" else None, labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]}


def _claim(o: Options, labels: dict[str, str]) -> dict[str, Any]:
    # ReadWriteMany: replicas of one job, and kubebench, may run on different nodes.
    spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": o.storage_size}}}
    if o.storage_class:
        spec["storageClassName"] = o.storage_class
    return {**_object("v1", "PersistentVolumeClaim", NAME, o.namespace, labels), "spec": spec}


def _rules() -> list[dict[str, Any]]:
    rules = [{"apiGroups": [group], "resources": list(plurals), "verbs": list(JOB_VERBS)}
             for group, plurals in JOB_RESOURCES.items()]
    # kind: Serving: the server's Deployment (followed like the jobs) and its Service
    rules += [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": list(JOB_VERBS)},
              {"apiGroups": [""], "resources": ["services"], "verbs": list(SERVICE_VERBS)}]
    rules += [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
              {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
              {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
              {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get"]},
              # a runner without the spec ConfigMap ships its spec's folder itself (backend.ship_spec)
              {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "delete"]},
              # a queued job's Workload says why it waits (backends/kube/kueue.py)
              {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues", "workloads"], "verbs": ["get", "list"]}]
    return rules


def _restricted(container: dict[str, Any]) -> dict[str, Any]:
    container["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                    "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    return container


def _pod(o: Options, labels: dict[str, str], containers: list[dict[str, Any]], volumes: list[dict[str, Any]],
         restart: str | None = None, account: str | None = NAME, token: bool | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "volumes": volumes,
                            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}
    if account:
        spec["serviceAccountName"] = account
    if token is not None:  # False: a pod that never talks to the API server holds no credential for it
        spec["automountServiceAccountToken"] = token
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": dict(labels), "annotations": dict(ISTIO_OPT_OUT)}, "spec": spec}


def _kubebench(o: Options, name: str, args: list[str], read_only: bool = False) -> dict[str, Any]:
    mounts = [{"name": "home", "mountPath": HOME_MOUNT, **({"readOnly": True} if read_only else {})}]
    env = [{"name": "KUBEBENCH_HOME", "value": HOME_MOUNT}, store_env(o.store_secret)]
    if o.spec_files:
        mounts.append({"name": "spec", "mountPath": SPEC_MOUNT, "readOnly": True})
        # The jobs' pods get the spec's folder too, as their working directory (its scripts run there).
        env += [{"name": "KUBEBENCH_SPEC_CONFIGMAP", "value": SPEC_CONFIGMAP}, {"name": "KUBEBENCH_SPEC_DIR", "value": SPEC_MOUNT}]
    return _restricted({
        "name": name, "image": o.image, "command": ["kubebench", *args], "env": env,
        "volumeMounts": mounts,
        "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
    })


def _volumes(o: Options) -> list[dict[str, Any]]:
    volumes = [{"name": "home", "persistentVolumeClaim": {"claimName": NAME}}]
    if o.spec_files:
        volumes.append({"name": "spec", "configMap": {"name": SPEC_CONFIGMAP}})
    return volumes


def _run_args(o: Options, with_id: bool) -> list[str]:
    args = ["run", f"{SPEC_MOUNT}/{o.spec_name}", "--backend", "kubernetes"]
    args += [arg for key, value in o.labels for arg in ("--label", f"{key}={value}")]
    return args + (["--id", experiment_id(o)] if with_id else [])


def _runner_job(o: Options, labels: dict[str, str]) -> dict[str, Any]:
    exp = experiment_id(o)
    pod = _pod(o, labels | {"app.kubernetes.io/component": "runner"}, [_kubebench(o, NAME, _run_args(o, True))],
               _volumes(o), "Never")
    # A runner killed (node drained, OOM) is started again and resumes the experiment; one that ran
    # to its end (1: runs failed, 2: a bad spec) is not. The condition's status is written out: the
    # published schema requires it before Kubernetes 1.35 (docs/kubernetes-conformance.md).
    failure = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": NAME, "operator": "In", "values": [1, 2]}},
                         {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}
    return {**_object("batch/v1", "Job", f"{NAME}-run-{exp}"[:63].rstrip("-"), o.namespace, labels),
            "spec": {"backoffLimit": 6, "podFailurePolicy": failure, "ttlSecondsAfterFinished": 7 * 86400,
                     "template": pod}}


def _cron_job(o: Options, labels: dict[str, str]) -> dict[str, Any]:
    pod = _pod(o, labels | {"app.kubernetes.io/component": "runner"}, [_kubebench(o, NAME, _run_args(o, False))],
               _volumes(o), "Never")
    job = {"backoffLimit": 0, "ttlSecondsAfterFinished": 7 * 86400, "template": pod}
    return {**_object("batch/v1", "CronJob", f"{NAME}-scheduled", o.namespace, labels),
            "spec": {"schedule": o.schedule, "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 3,
                     "failedJobsHistoryLimit": 3, "jobTemplate": {"spec": job}}}


def _dashboard(o: Options, labels: dict[str, str]) -> list[dict[str, Any]]:
    web = labels | {"app.kubernetes.io/component": "dashboard"}
    container = _kubebench(o, "dashboard", ["serve", "--host", "0.0.0.0", "--port", str(DASHBOARD_PORT), "--read-only"],
                           read_only=True)
    container["ports"] = [{"name": "http", "containerPort": DASHBOARD_PORT}]
    container["readinessProbe"] = {"httpGet": {"path": "/api/experiments", "port": "http"}, "periodSeconds": 10}
    selector = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "dashboard"}
    # Its own account, not the runner's (which creates and deletes jobs): no Role, no token, unless
    # the operator is there (then a token whose one Role reads Benchmarks, for the Benchmarks panel).
    account = {**_object("v1", "ServiceAccount", DASHBOARD, o.namespace, labels), "automountServiceAccountToken": False}
    deployment = {**_object("apps/v1", "Deployment", DASHBOARD, o.namespace, labels),
                  "spec": {"replicas": 1, "selector": {"matchLabels": selector},
                           "template": _pod(o, web, [container], _volumes(o), account=DASHBOARD, token=o.operator)}}
    service = {**_object("v1", "Service", DASHBOARD, o.namespace, labels),
               "spec": {"selector": selector, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}
    return [account, deployment, service]


def _postgres(o: Options, labels: dict[str, str]) -> list[dict[str, Any]]:
    db = labels | {"app.kubernetes.io/component": "store"}
    selector = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "store"}
    password = {"secretKeyRef": {"name": STORE_SECRET, "key": STORE_PASSWORD_KEY}}
    container = _restricted({
        "name": "postgres", "image": o.postgres_image, "ports": [{"name": "postgres", "containerPort": 5432}],
        # The password is made in the cluster (the Job below) and read from its Secret: the pod waits
        # for it. Every connection from outside the pod authenticates with it (no `trust`).
        "env": [{"name": "POSTGRES_USER", "value": NAME}, {"name": "POSTGRES_DB", "value": NAME},
                {"name": "POSTGRES_PASSWORD", "valueFrom": password},
                {"name": "POSTGRES_HOST_AUTH_METHOD", "value": "scram-sha-256"},
                {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"}],
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"},
                         {"name": "run", "mountPath": "/var/run/postgresql"}],
        "readinessProbe": {"exec": {"command": ["pg_isready", "-U", NAME]}, "periodSeconds": 5},
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    })
    pod = _pod(o, db, [container], [{"name": "run", "emptyDir": {}}], account=None, token=False)
    # The image's postgres user: the one place a uid is fixed (the data folder belongs to it).
    pod["spec"]["securityContext"] |= {"runAsUser": 999, "runAsGroup": 999, "fsGroup": 999}
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": o.postgres_size}}}}
    statefulset = {**_object("apps/v1", "StatefulSet", POSTGRES, o.namespace, labels),
                   "spec": {"serviceName": POSTGRES, "replicas": 1, "selector": {"matchLabels": selector},
                            "template": pod, "volumeClaimTemplates": [claim]}}
    service = {**_object("v1", "Service", POSTGRES, o.namespace, labels),
               "spec": {"selector": selector, "ports": [{"name": "postgres", "port": 5432, "targetPort": "postgres"}]}}
    policy = {**_object("networking.k8s.io/v1", "NetworkPolicy", POSTGRES, o.namespace, labels),
              "spec": {"podSelector": {"matchLabels": selector}, "policyTypes": ["Ingress"],
                       "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": NAME}}}],
                                    "ports": [{"port": 5432}]}]}}
    return [*_store_secret_job(o, labels), service, statefulset, policy]


def _store_secret_job(o: Options, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The Job that makes the store's Secret (``kubebench deploy store-secret``): once, in the
    cluster, so that the password is never printed and applying these manifests again keeps it (the
    Secret there is left as it is). Its account may create Secrets and nothing else."""
    maker = labels | {"app.kubernetes.io/component": "store-secret"}
    rules = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    container = _restricted({
        "name": "store-secret", "image": o.image, "command": ["kubebench", "deploy", "store-secret", "-n", o.namespace],
        "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}})
    pod = _pod(o, maker, [container], [], "OnFailure", account=STORE_SECRET_JOB)
    # Kept a few minutes only: applying the manifests again (another image) makes it anew.
    job = {**_object("batch/v1", "Job", STORE_SECRET_JOB, o.namespace, labels),
           "spec": {"backoffLimit": 10, "ttlSecondsAfterFinished": 300, "template": pod}}
    return [_object("v1", "ServiceAccount", STORE_SECRET_JOB, o.namespace, labels),
            {**_object("rbac.authorization.k8s.io/v1", "Role", STORE_SECRET_JOB, o.namespace, labels), "rules": rules},
            _binding("RoleBinding", "Role", STORE_SECRET_JOB, o.namespace, labels, account=STORE_SECRET_JOB), job]
