"""What the controller makes for a Benchmark (pure): the spec ConfigMap (an inline spec), the runner
Job (``kubebench run … --benchmark-ref``) or, for a schedule, a CronJob of runner Jobs. Each is owned
by the Benchmark (``controller: true``), so deleting the Benchmark deletes them and, through the
runner's own owner references, every job the runner made.

Names are deterministic (the Benchmark's name and uid), so a create answered 409 means it is there:
a controller restarted mid-way makes no second runner.
"""

from __future__ import annotations

import json
from typing import Any

from .. import deploy
from ..attempts import dump_yaml
from ..backends.kube.objects import OWNER_ENV
from . import API_VERSION, BENCHMARK_LABEL, KIND
from .resource import BenchmarkResourceSpec, dns_label

RUNNER = "kubebench"
SPEC_KEY = "benchmark.yaml"


def owner_reference(cr: dict) -> dict[str, Any]:
    """The Benchmark as controller owner of what it makes."""
    meta = cr["metadata"]
    return {"apiVersion": API_VERSION, "kind": KIND, "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _name(prefix: str, cr: dict, limit: int = 63) -> str:
    meta = cr["metadata"]
    uid = meta["uid"].replace("-", "")[:5]
    return f"{prefix}-{dns_label(meta['name'], limit - len(prefix) - 7)}-{uid}"


def runner_name(cr: dict) -> str:
    """The runner Job's name (or the CronJob's: at most 52 characters, as the CronJob API takes)."""
    return _name("kb-cron", cr, 52) if (cr.get("spec") or {}).get("schedule") else _name("kb-runner", cr)


def spec_map_name(cr: dict) -> str:
    """The ConfigMap holding an inline spec."""
    return _name("kb-bench", cr)


def experiment_id(cr: dict, spec: BenchmarkResourceSpec) -> str:
    """The experiment the runner runs: ``spec.experimentId``, else one of the Benchmark's name and uid."""
    return spec.experiment_id or f"{dns_label(cr['metadata']['name'], 54)}-{cr['metadata']['uid'][:8]}"


def _meta(cr: dict, name: str) -> dict[str, Any]:
    labels = {BENCHMARK_LABEL: dns_label(cr["metadata"]["name"]), "app.kubernetes.io/name": deploy.NAME,
              "app.kubernetes.io/component": "runner", "app.kubernetes.io/managed-by": "kubebench-operator"}
    return {"name": name, "namespace": cr["metadata"]["namespace"], "labels": labels,
            "ownerReferences": [owner_reference(cr)]}


def spec_map(cr: dict, spec: BenchmarkResourceSpec) -> dict[str, Any] | None:
    """The ConfigMap of an inline ``spec.benchmark``; None for ``benchmarkFrom`` (the user's ConfigMap)."""
    body = (cr.get("spec") or {}).get("benchmark")
    if spec.benchmark_from is not None or body is None:
        return None
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(cr, spec_map_name(cr)),
            "data": {SPEC_KEY: dump_yaml(body)}}


def _args(cr: dict, spec: BenchmarkResourceSpec, key: str, with_id: bool) -> list[str]:
    meta = cr["metadata"]
    args = ["run", f"{deploy.SPEC_MOUNT}/{key}", "--backend", "kubernetes",
            "--benchmark-ref", f"{meta['namespace']}/{meta['name']}/{meta['uid']}"]
    args += ["--id", experiment_id(cr, spec)] if with_id else []
    args += [a for k, v in sorted(spec.labels.items()) for a in ("--label", f"{k}={v}")]
    return args + [a for k, v in spec.params.items() for a in ("--set", f"{k}={json.dumps(v)}")]


def _pod(cr: dict, spec: BenchmarkResourceSpec, with_id: bool) -> dict[str, Any]:
    if spec.benchmark_from is not None:
        ref = spec.benchmark_from.config_map_key_ref
        config_map, key = ref.name, ref.key
    else:
        config_map, key = spec_map_name(cr), SPEC_KEY
    runner = spec.runner
    secret = runner.store_secret_ref  # default: the Secret of `deploy manifests` (its PostgreSQL has a password)
    store = deploy.store_env(secret.name, secret.key) if secret is not None else deploy.store_env()
    env = [{"name": "KUBEBENCH_HOME", "value": deploy.HOME_MOUNT}, store,
           {"name": "KUBEBENCH_SPEC_CONFIGMAP", "value": config_map}, {"name": "KUBEBENCH_SPEC_DIR", "value": deploy.SPEC_MOUNT},
           {"name": OWNER_ENV, "value": json.dumps(owner_reference(cr), separators=(",", ":"))}]
    container = {"name": RUNNER, "image": runner.image or deploy.DEFAULT_IMAGE, "command": ["kubebench", *_args(cr, spec, key, with_id)],
                 "env": env, "volumeMounts": [{"name": "home", "mountPath": deploy.HOME_MOUNT},
                                               {"name": "spec", "mountPath": deploy.SPEC_MOUNT, "readOnly": True}],
                 "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}},
                 "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                                     "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}
    return {"metadata": {"labels": {BENCHMARK_LABEL: dns_label(cr["metadata"]["name"])},
                         "annotations": dict(deploy.ISTIO_OPT_OUT)},
            "spec": {"serviceAccountName": runner.service_account_name, "restartPolicy": "Never", "containers": [container],
                     "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                     "volumes": [{"name": "home", "persistentVolumeClaim": {"claimName": runner.claim}},
                                 {"name": "spec", "configMap": {"name": config_map}}]}}


def _job_spec(cr: dict, spec: BenchmarkResourceSpec, with_id: bool) -> dict[str, Any]:
    # A runner killed (node drained, OOM) starts again and resumes the experiment (--id); one that ran
    # to its end (1: runs failed, 2: a bad spec) does not, and the Job's condition says which.
    failure = {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": RUNNER, "operator": "In", "values": [1, 2]}},
                         {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}
    return {"backoffLimit": 3, "podFailurePolicy": failure, "template": _pod(cr, spec, with_id)}


def runner_job(cr: dict, spec: BenchmarkResourceSpec) -> dict[str, Any]:
    """The runner Job (suspended with ``spec.suspend``)."""
    body: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta(cr, runner_name(cr)),
            "spec": _job_spec(cr, spec, with_id=True)}
    body["spec"]["suspend"] = spec.suspend
    return body


def cron_job(cr: dict, spec: BenchmarkResourceSpec) -> dict[str, Any]:
    """For ``spec.schedule``: a CronJob of runner Jobs, each starting a new experiment of the series."""
    schedule = spec.schedule
    assert schedule is not None
    cron: dict[str, Any] = {"schedule": schedule.cron, "concurrencyPolicy": schedule.concurrency_policy,
                            "successfulJobsHistoryLimit": schedule.successful_history_limit,
                            "failedJobsHistoryLimit": schedule.failed_history_limit, "suspend": spec.suspend,
                            "jobTemplate": {"metadata": {"labels": _meta(cr, "")["labels"]},
                                            "spec": _job_spec(cr, spec, with_id=False)}}
    if schedule.time_zone:
        cron["timeZone"] = schedule.time_zone
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": _meta(cr, runner_name(cr)), "spec": cron}
