"""Before many runs start (review: doctor / pre-flight): ``kubebench run`` on a cluster it cannot use
is one clear error (exit 2), not a failed run per job; ``kubebench doctor`` checks the cluster, the
namespace, the kinds served, every permission used, the claim and the queue."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from typer.testing import CliRunner

from kubebench.cli import app

SPEC = """
name: doctor
job:
  kind: PyTorchJob
  workers: 2
  command: [python, -c, "print(1)"]
backend: {{kind: kubernetes{backend}}}
repeats: 3
"""


def write(tmp_path: Path, backend: str = "") -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(textwrap.dedent(SPEC.format(backend=backend)).lstrip())
    return path


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_no_cluster_is_one_clear_error_before_any_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    result = invoke("run", str(write(tmp_path)), "--id", "nowhere")
    assert result.exit_code == 2, result.output
    assert "error: no Kubernetes cluster to run on" in result.output and "Set backend.kubeconfig" in result.output
    assert ".. Set" not in result.output  # one full stop (review 2026-12-02 #31: "found.. Set")
    assert "Traceback" not in result.output
    listing = invoke("results", "nowhere", "--format", "json")
    assert "failed" not in listing.output  # no run was recorded failed


def test_a_missing_namespace_stops_the_start(cluster: Cluster, tmp_path: Path) -> None:
    result = invoke("run", str(write(tmp_path, ", namespace: nope")), "--id", "no-ns")
    assert result.exit_code == 2, result.output
    assert "namespace 'nope' does not exist on the cluster" in result.output
    assert cluster.api.count("POST") == 0


def bound(cluster: Cluster) -> None:
    cluster.api.store.update(("", "v1", "persistentvolumeclaims"), cluster.namespace, "kubebench",
                             lambda o: {**o, "status": {"phase": "Bound"}}, status=True)


def test_doctor_passes_on_a_cluster_that_can_run_the_spec(cluster: Cluster, tmp_path: Path) -> None:
    bound(cluster)
    result = invoke("doctor", str(write(tmp_path)))
    assert result.exit_code == 0, result.output
    assert "ok   PyTorchJob (kubeflow.org/v1): served" in result.output
    assert "ok   permissions: 11 verbs allowed" in result.output
    assert "ok   claim from a pod: a pod read what kubebench wrote in" in result.output
    assert "checks passed" in result.output


def test_doctor_names_every_problem_at_once(cluster: Cluster, tmp_path: Path) -> None:
    cluster.api.allow(*[(v, "kubeflow.org", "pytorchjobs") for v in ("create", "get", "list", "watch", "delete")],
                      ("get", "", "pods"), ("list", "", "pods"), ("watch", "", "pods"), ("create", "batch", "jobs"),
                      ("get", "batch", "jobs"), ("delete", "batch", "jobs"), ("get", "", "persistentvolumeclaims"),
                      ("get", "kueue.x-k8s.io", "localqueues"))
    cluster.operator.local_root = tmp_path / "the-claim"  # not where kubebench writes (KUBEBENCH_HOME)
    cluster.operator.local_root.mkdir()
    result = invoke("doctor", str(write(tmp_path, ", queue: team-a")))
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    assert "FAIL permissions: not allowed: get pods/log (copying the pods' logs)" in out
    assert "warn permission to list events: why a pod does not start (events) goes unreported" in out
    assert "warn claim: kubebench is Pending" in out
    assert "FAIL claim from a pod: a pod could not read" in out and "is not the claim" in out
    assert "FAIL Kueue queue: LocalQueue bench/team-a not found" in out


def test_doctor_checks_the_gang_schedulers_podgroups_are_served(cluster: Cluster, tmp_path: Path) -> None:
    bound(cluster)
    path = write(tmp_path)
    path.write_text(path.read_text().replace("  workers: 2\n", "  workers: 2\n  gang: {scheduler: volcano}\n"))
    served = invoke("doctor", str(path))
    assert "ok   gang scheduling (volcano): PodGroup (scheduling.volcano.sh/v1beta1) served" in served.output
    cluster.api.unserved.add(("scheduling.volcano.sh", "v1beta1"))
    missing = " ".join(invoke("doctor", str(path)).output.split())
    assert "FAIL gang scheduling (volcano): PodGroup of scheduling.volcano.sh/v1beta1 is not served: install Volcano" in missing
    assert "--gang-scheduler-name=volcano" in missing
