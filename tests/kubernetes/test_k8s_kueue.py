"""Kueue as clusters install it (review 2026-12-02 M-A, M-B, L-B): its default configuration leaves
PyTorchJob and TFJob out, a workload above the queue's quota would wait forever, and its API is at
v1beta2. The stand-in's Kueue follows v0.19.2 (see tests/support/cluster/kueue.py)."""

from __future__ import annotations

import textwrap

import pytest
from support.cluster.cluster import Cluster
from support.cluster.kueue import CONFIG_MAP, KUEUE_NAMESPACE, WORKLOADS
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.errors import PreflightError

QUICK = "import kubebench; kubebench.report(v=1)"


def spec(kind: str, resources: str = "{cpu: 1}", backend: str = "", repeats: int = 1) -> str:
    return textwrap.dedent(f"""
        name: queued
        job:
          kind: {kind}
          workers: 1
          command: [python, -c, "{QUICK}"]
          resources: {resources}
        backend: {{kind: kubernetes, queue: team-a, unschedulable_grace: 1s{backend}}}
        metrics: [{{name: v}}]
        repeats: {repeats}
        timeout: 30s
        """)


@pytest.mark.cluster(kueue=1)
def test_a_kind_the_default_kueue_does_not_manage_is_refused_before_any_job(cluster: Cluster, run_spec) -> None:
    # Kueue v0.19.2's default integrations.frameworks comment out kubeflow.org/pytorchjob: the job would
    # run at once, past the queue; kubebench reads Kueue's configuration and stops before creating it
    with pytest.raises(PreflightError, match=r"Kueue does not manage PyTorchJob \(integrations.frameworks has no "
                                             r"'kubeflow.org/pytorchjob'\)"):
        run_spec(spec("PyTorchJob"))
    assert cluster.api.count("POST", "pytorchjobs") == 0


@pytest.mark.cluster(kueue=1)
def test_without_kueues_configuration_a_job_that_came_back_running_fails_its_run_and_the_next_ones_at_once(
        cluster: Cluster, run_spec) -> None:
    cluster.api.store.delete(("", "v1", "configmaps"), KUEUE_NAMESPACE, CONFIG_MAP)  # not readable: a Helm name …
    ran = run_spec(spec("PyTorchJob", repeats=2))
    assert [r.status for r in ran.runs] == ["failed", "failed"]
    assert all(r.reason.startswith("Kueue does not manage PyTorchJob") for r in ran.runs), [r.reason for r in ran.runs]
    assert cluster.api.count("POST", "pytorchjobs") == 1  # the second run was not tried: it would run past the queue
    assert not cluster.operator.jobs  # the one that started was deleted


@pytest.mark.cluster(kueue=1, kueue_quota={"cpu": "2", "memory": "8Gi"})
def test_a_job_above_the_queues_quota_fails_with_kueues_reason_instead_of_waiting_forever(
        cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(spec("Job", resources="{cpu: 4}")).runs
    assert run.status == "failed", run.reason
    assert run.reason == (f"Kueue cannot admit Job bench/kb-{run.run_id} (queue team-a): Pending: couldn't assign "
                          "flavors to pod set main: insufficient quota for cpu in flavor default-flavor, previously "
                          "considered podsets requests (0) + current podset request (4) > maximum capacity (2)")
    (workload,) = cluster.api.store.list(WORKLOADS, cluster.namespace)[0]
    assert workload["metadata"]["ownerReferences"][0]["name"] == f"kb-{run.run_id}"


@pytest.mark.cluster(kueue=1, kueue_quota={"cpu": "8"})
def test_a_job_asking_for_a_resource_the_queue_does_not_cover_fails_saying_so(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(spec("TrainJob", resources="{cpu: 1, gpu: 1}")).runs
    assert run.status == "failed"
    assert run.reason.endswith("resource nvidia.com/gpu unavailable in ClusterQueue"), run.reason


@pytest.mark.cluster(kueue=1)
def test_a_queue_that_does_not_exist_fails_the_run_with_kueues_reason(cluster: Cluster, run_spec) -> None:
    cluster.operator.kueue.queues = {"team-b"}
    (run,) = run_spec(spec("Job")).runs
    assert run.status == "failed"
    assert run.reason.endswith("(queue team-a): Inadmissible: LocalQueue team-a doesn't exist"), run.reason


@pytest.mark.cluster(kueue=1)
def test_a_job_waiting_for_quota_says_why_when_it_times_out(cluster: Cluster, run_spec) -> None:
    cluster.operator.kueue.capacity = 0  # taken by others: it would be admitted later
    (run,) = run_spec(spec("Job", backend=", queue_timeout: 3s")).runs
    assert run.status == "timeout"
    assert run.reason.startswith("still queued after 3s: waiting in queue team-a: Pending: couldn't assign flavors to "
                                 "pod set main: insufficient unused quota"), run.reason


def test_a_queued_run_has_a_finite_queue_timeout_by_default() -> None:
    from kubebench.backends.kube.config import KubernetesConfig

    assert KubernetesConfig().queue_timeout == 24 * 3600
    assert KubernetesConfig(queue_timeout=None).queue_timeout is None  # null: as long as it takes


def bound(cluster: Cluster) -> None:
    cluster.api.store.update(("", "v1", "persistentvolumeclaims"), cluster.namespace, "kubebench",
                             lambda o: {**o, "status": {"phase": "Bound"}}, status=True)


@pytest.mark.cluster(kueue=1)
def test_doctor_finds_the_queue_at_v1beta2_and_says_what_kueue_manages(cluster: Cluster, tmp_path) -> None:
    bound(cluster)
    cluster.api.store.create(("kueue.x-k8s.io", "v1beta2", "localqueues"), cluster.namespace, {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "team-a"},
        "spec": {"clusterQueue": "cluster-queue"}})
    path = tmp_path / "bench.yaml"
    path.write_text(spec("TFJob"))
    out = " ".join(CliRunner().invoke(app, ["doctor", str(path)]).output.split())
    assert "ok Kueue queue: team-a (kueue.x-k8s.io/v1beta2)" in out
    assert "FAIL Kueue integrations: Kueue does not manage TFJob (integrations.frameworks has no 'kubeflow.org/tfjob')" in out
    path.write_text(spec("Job"))
    out = " ".join(CliRunner().invoke(app, ["doctor", str(path)]).output.split())
    assert "ok Kueue integrations: manages batch/job, kubeflow.org/mpijob" in out
