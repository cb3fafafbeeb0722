"""Review 2026-12-02, N9: `kubebench deploy manifests` keeps the store's credentials in a Secret.

- the store's URL (and so its password) reaches every pod from the Secret `kubebench-store` (or one
  the user names), never as a plain `env` value of a Job, CronJob or Deployment;
- the in-cluster PostgreSQL has a password, made in the cluster by the Job `kubebench-store-secret`
  (`kubebench deploy store-secret`), never printed, kept when the manifests are applied again; no
  `trust` authentication;
- the read-only dashboard runs under a ServiceAccount of its own: no Role and no token (with the
  operator: a token whose one Role reads Benchmarks), never the runner's account, which creates and
  deletes jobs.
The operator's runner Jobs and the pipeline steps read the same Secret by default.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from sqlalchemy.engine import make_url
from support.cluster.emulator import Emulator
from support.cluster.schemas import errors_of
from typer.testing import CliRunner

from kubebench.cli import app

PASSWORD = "TopSecretPw"
SECRETS = ("", "v1", "secrets")
VARIANTS = {
    "in-cluster PostgreSQL": [],
    "external store": ["--store-url", f"postgresql+psycopg://kb:{PASSWORD}@db.example/kb"],
    "a Secret of the user's": ["--store-secret", "my-store"],
    "schedule": ["--schedule", "@daily", "--store-url", f"postgresql+psycopg://kb:{PASSWORD}@db.example/kb"],
    "operator": ["--operator"],
}


def deploy(*args: str) -> list[dict]:
    result = CliRunner().invoke(app, ["deploy", "manifests", "-n", "ml", *args])
    assert result.exit_code == 0, result.output
    return [d for d in yaml.safe_load_all(result.output) if d]


def pod_specs(doc: dict) -> list[dict]:
    spec = doc.get("spec") or {}
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return [spec["template"]["spec"]] if "template" in spec else []


def env_of(docs: list[dict], component: str) -> dict[str, dict]:
    (pod,) = [p for d in docs for p in pod_specs(d)
              if d["spec"].get("template", {}).get("metadata", {}).get("labels", {}).get("app.kubernetes.io/component") == component
              or d["kind"] == "CronJob" and component == "runner"]
    return {e["name"]: e for c in pod["containers"] for e in c.get("env") or []}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_no_pod_gets_the_store_url_as_a_plain_value(variant: str) -> None:
    docs = deploy(*VARIANTS[variant])
    secret = "my-store" if "--store-secret" in VARIANTS[variant] else "kubebench-store"
    stores = [e for d in docs for p in pod_specs(d) for c in p["containers"] for e in c.get("env") or []
              if e["name"] == "KUBEBENCH_STORE"]
    assert len(stores) == (1 if variant == "operator" else 2)  # the runner (but with the operator) and the dashboard
    assert all(e == {"name": "KUBEBENCH_STORE", "valueFrom": {"secretKeyRef": {"name": secret, "key": "url"}}}
               for e in stores), stores
    # the password is in the Secret made of --store-url, and in no other object
    holding = [d["kind"] for d in docs if PASSWORD in yaml.safe_dump(d)]
    assert holding == (["Secret"] if "--store-url" in VARIANTS[variant] else [])
    if "--store-url" in VARIANTS[variant]:
        (made,) = [d for d in docs if d["kind"] == "Secret"]
        assert made["metadata"]["name"] == "kubebench-store" and made["stringData"] == {"url": VARIANTS[variant][-1]}
    for doc in docs:
        assert errors_of(doc) == [], doc["kind"]


def test_the_in_cluster_postgresql_authenticates_with_a_password_from_its_secret() -> None:
    docs = deploy()
    env = env_of(docs, "store")
    assert env["POSTGRES_PASSWORD"] == {"name": "POSTGRES_PASSWORD",
                                        "valueFrom": {"secretKeyRef": {"name": "kubebench-store", "key": "password"}}}
    assert env["POSTGRES_HOST_AUTH_METHOD"]["value"] == "scram-sha-256"
    assert "trust" not in yaml.safe_dump_all(docs)
    assert not [d for d in docs if d["kind"] == "Secret"]  # made in the cluster: no password in the output
    # the Job that makes it, and the one right its account has
    (job,) = [d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == "kubebench-store-secret"]
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kubebench-store-secret"
    assert pod["containers"][0]["command"] == ["kubebench", "deploy", "store-secret", "-n", "ml"]
    (role,) = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == "kubebench-store-secret"]
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding" and d["metadata"]["name"] == "kubebench-store-secret"]
    assert binding["subjects"][0]["name"] == "kubebench-store-secret"
    # PostgreSQL itself never talks to the API server
    (statefulset,) = [d for d in docs if d["kind"] == "StatefulSet"]
    assert statefulset["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_the_store_secret_is_made_once_in_the_cluster_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emulator = Emulator().start()
    try:
        emulator.namespace("ml")
        monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
        monkeypatch.setenv("KUBECONFIG", str(emulator.kubeconfig(tmp_path / "kubeconfig", "ml")))
        emulator.allow(("create", "", "secrets"))  # the Role of the Job, and nothing more
        first = CliRunner().invoke(app, ["deploy", "store-secret", "-n", "ml"])
        assert first.exit_code == 0, first.output
        secret = emulator.store.find(SECRETS, "ml", "kubebench-store")
        values = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
        password = values["password"]
        assert len(password) >= 32 and password not in first.output  # a pod's log: never the password
        assert values["url"] == f"postgresql+psycopg://kubebench:{password}@kubebench-postgres.ml.svc:5432/kubebench"
        assert make_url(values["url"]).password == password  # URL-safe: SQLAlchemy reads it back as it is
        again = CliRunner().invoke(app, ["deploy", "store-secret", "-n", "ml"])  # the manifests applied again
        assert again.exit_code == 0 and "there already, left as it is" in again.output, again.output
        assert emulator.store.find(SECRETS, "ml", "kubebench-store")["data"] == secret["data"]
    finally:
        emulator.stop()


def test_the_dashboard_has_an_account_of_its_own_without_rights_or_token() -> None:
    docs = deploy()
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kubebench-dashboard" and pod["automountServiceAccountToken"] is False
    (account,) = [d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "kubebench-dashboard"]
    assert account["automountServiceAccountToken"] is False
    bound = [s["name"] for d in docs if d["kind"].endswith("RoleBinding") for s in d["subjects"]]
    assert "kubebench-dashboard" not in bound
    assert "--read-only" in pod["containers"][0]["command"]


def test_with_the_operator_the_dashboard_may_only_read_benchmarks() -> None:
    docs = deploy("--operator")
    (dashboard,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "kubebench-dashboard"]
    pod = dashboard["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kubebench-dashboard" and pod["automountServiceAccountToken"] is True
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Role"}
    bound = [d["roleRef"]["name"] for d in docs if d["kind"] == "RoleBinding"
             and any(s["name"] == "kubebench-dashboard" for s in d["subjects"])]
    assert [roles[name]["rules"] for name in bound] == [
        [{"apiGroups": ["kubebench.io"], "resources": ["benchmarks"], "verbs": ["get", "list"]}]]
    # the runner's status Role no longer lists Benchmarks for the dashboard
    status = roles["kubebench-benchmark-status"]["rules"]
    assert {v for r in status for v in r["verbs"]} == {"get", "patch"}
    assert not [d for d in docs if d["kind"] == "Deployment" and "--read-only" in yaml.safe_dump(d)
                and d["spec"]["template"]["spec"].get("serviceAccountName") == "kubebench"]
    without = deploy("--operator", "--no-dashboard")
    assert not [d for d in without if "kubebench-dashboard" in yaml.safe_dump(d)]


def test_the_operators_runner_and_the_pipeline_steps_read_the_same_secret() -> None:
    from kubebench.operator import children
    from kubebench.operator.resource import BenchmarkResourceSpec
    from kubebench.pipelines.steps import StepOptions, env

    cr = {"metadata": {"name": "nightly", "namespace": "ml", "uid": "0123456789ab-cdef"},
          "spec": {"benchmark": {"name": "b", "job": {"command": ["echo"]}}}}
    job = children.runner_job(cr, BenchmarkResourceSpec.model_validate(cr["spec"]))
    (store,) = [e for e in job["spec"]["template"]["spec"]["containers"][0]["env"] if e["name"] == "KUBEBENCH_STORE"]
    assert store == {"name": "KUBEBENCH_STORE", "valueFrom": {"secretKeyRef": {"name": "kubebench-store", "key": "url"}}}
    assert env(StepOptions())[1] == store


def test_store_url_and_store_secret_together_are_refused() -> None:
    result = CliRunner().invoke(app, ["deploy", "manifests", "--store-url", "postgresql+psycopg://a@b/c",
                                      "--store-secret", "s"])
    assert result.exit_code == 2 and "--store-url and --store-secret both name the store" in result.output
    assert "apiVersion" not in result.output
