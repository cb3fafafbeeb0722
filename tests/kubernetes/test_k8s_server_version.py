"""kubebench reads the cluster's Kubernetes version once and checks every job against it: a job setting
a field that version lacks (here pod-level resources, on from 1.34) is one clear error before any job
is created, not a job the API server refuses or runs without the field; ``kubebench doctor`` says so
and ``kubebench render --kubernetes-version`` shows it for another version."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.cluster.emulator import Faults
from typer.testing import CliRunner

from kubebench.cli import app

TEMPLATE = """
apiVersion: batch/v1
kind: Job
metadata: {name: "{{ kubebench.name }}"}
spec:
  backoffLimit: 0
  completionMode: Indexed
  completions: 1
  template:
    spec:
      restartPolicy: Never
      %(resources)s
      containers:
        - name: main
          image: python:3.11-slim
          command: [python, -c, "import kubebench; kubebench.report(v=1)"]
"""
SPEC = "name: versions\njob: {template: job.yaml.j2}\nparameters: {n: [1, 2, 3]}\nbackend: {kind: kubernetes}\n" \
       "metrics: [{name: v}]\ntimeout: 60s\n"
JOBS = ("batch", "v1", "jobs")
POD_RESOURCES = "resources: {limits: {cpu: '1', memory: 1Gi}}"


def write(tmp_path: Path, resources: str = "") -> Path:
    (tmp_path / "job.yaml.j2").write_text(textwrap.dedent(TEMPLATE % {"resources": resources}).lstrip())
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    return spec


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.mark.cluster(kubernetes="1.33")
def test_a_job_the_clusters_version_cannot_run_is_refused_before_any_job_is_created(cluster: Cluster, tmp_path: Path) -> None:
    result = invoke("run", str(write(tmp_path, POD_RESOURCES)), "--id", "too-new")
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "pod template 0: spec.resources (pod-level resources (a pod template's spec.resources)) needs Kubernetes " \
           "1.34 or later (PodLevelResources); Kubernetes 1.33 refuses the field or drops it without a word" in out
    assert "Traceback" not in result.output
    assert cluster.api.count("POST", "/jobs") == 0


@pytest.mark.cluster(kubernetes="1.34")
def test_the_version_is_read_once_and_a_job_it_can_run_runs(cluster: Cluster, tmp_path: Path, run_spec) -> None:
    write(tmp_path, POD_RESOURCES)
    created: list[dict] = []
    cluster.api.store.listeners.append(lambda kind, key, obj: created.append(obj) if (kind, key) == ("ADDED", JOBS) else None)
    ran = run_spec((tmp_path / "spec.yaml").read_text())
    assert ran.by_status() == {"succeeded": 3}
    assert cluster.api.count("GET", "/version") == 1
    assert [o["spec"]["template"]["spec"]["resources"]["limits"] for o in created] == [{"cpu": "1", "memory": "1Gi"}] * 3


@pytest.mark.cluster(kubernetes="1.33")
def test_doctor_says_what_needs_a_newer_kubernetes(cluster: Cluster, tmp_path: Path) -> None:
    result = invoke("doctor", str(write(tmp_path, POD_RESOURCES)))
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "FAIL Kubernetes version: 1.33: Job " in out and "needs Kubernetes 1.34 or later (PodLevelResources)" in out


def test_doctor_reports_a_version_that_has_everything(cluster: Cluster, tmp_path: Path) -> None:
    result = invoke("doctor", str(write(tmp_path)))
    assert "ok   Kubernetes version: 1.31" in result.output, result.output


@pytest.mark.cluster(kubernetes="1.30")
def test_doctor_warns_about_a_kubernetes_older_than_the_operators_support(cluster: Cluster, tmp_path: Path) -> None:
    result = invoke("doctor", str(write(tmp_path)))
    out = " ".join(result.output.split())
    assert "warn Kubernetes version: 1.30: older than 1.31, the oldest the Kubeflow operators (and kubebench) support" in out


@pytest.mark.cluster(kubernetes="1.34")
def test_doctor_warns_when_the_spec_pins_another_version_than_the_clusters(cluster: Cluster, tmp_path: Path) -> None:
    spec = write(tmp_path)
    spec.write_text(SPEC.replace("{kind: kubernetes}", "{kind: kubernetes, kubernetes_version: '1.31'}"))
    result = invoke("doctor", str(spec))
    assert "warn Kubernetes version: 1.34, but backend.kubernetes_version is 1.31" in result.output, result.output


def test_render_for_another_version_shows_the_job_or_says_why_it_cannot_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    spec = str(write(tmp_path, POD_RESOURCES))
    newer = invoke("render", spec, "--kubernetes-version", "v1.34.1")
    assert newer.exit_code == 0, newer.output
    assert newer.output.startswith("# for Kubernetes v1.34.1\n# run ") and "cpu: '1'" in newer.output
    older = invoke("render", spec, "--kubernetes-version", "1.33")
    assert older.exit_code == 2 and "needs Kubernetes 1.34 or later" in " ".join(older.output.split())
    assert invoke("render", spec).exit_code == 0  # no version given: nothing to check against


def test_render_for_a_version_needs_the_kubernetes_backend_and_a_version(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    spec = write(tmp_path)
    spec.write_text(SPEC.replace("backend: {kind: kubernetes}\n", "backend: local\n"))
    local = invoke("render", str(spec), "--kubernetes-version", "1.31")
    assert local.exit_code == 2 and "the local backend does not run on Kubernetes (add --backend kubernetes)" in local.output
    bad = invoke("render", str(spec), "--backend", "kubernetes", "--kubernetes-version", "latest")
    assert bad.exit_code == 2 and "expected MAJOR.MINOR, e.g. 1.31" in bad.output


def test_doctor_cannot_tell_the_version_of_a_server_that_does_not_say_it(cluster: Cluster, tmp_path: Path) -> None:
    cluster.api.faults = Faults(rate=1.0, kinds=(404,), path="/version")
    result = invoke("doctor", str(write(tmp_path)))
    assert "warn Kubernetes version: cannot tell (the API server does not say its version)" in result.output, result.output
