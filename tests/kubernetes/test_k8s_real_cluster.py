"""The same checks against a real cluster: skipped unless ``KUBEBENCH_TEST_KUBECONFIG`` names a kubeconfig.

    KUBEBENCH_TEST_KUBECONFIG=~/.kube/config [KUBEBENCH_TEST_NAMESPACE=default] \\
    KUBEBENCH_TEST_OPERATORS=training-operator,trainer,kueue [KUBEBENCH_TEST_QUEUE=kubebench] \\
    [KUBEBENCH_TEST_MPI_IMAGE=kubebench/cnn-mpi:0.1.0] .venv/bin/python -m pytest tests/kubernetes/test_k8s_real_cluster.py

A batch/v1 Job runs on any cluster with a default StorageClass. Each operator named in
``KUBEBENCH_TEST_OPERATORS`` adds its kinds: ``training-operator`` (PyTorchJob, TFJob, and MPIJob v1
when ``KUBEBENCH_TEST_MPI_IMAGE`` is set), ``mpi-operator`` (MPIJob v2beta1, with that image),
``trainer`` (TrainJob on the ``torch-distributed`` runtime), ``kueue`` (a LocalQueue
``KUBEBENCH_TEST_QUEUE`` admitting one job at a time). docs/kubernetes-kind.md sets all of this up
on kind, step by step. The claim ``kubebench-test`` is created for the tests and deleted after them.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml
from support.runs import workload_metrics

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

KUBECONFIG = os.environ.get("KUBEBENCH_TEST_KUBECONFIG")
NAMESPACE = os.environ.get("KUBEBENCH_TEST_NAMESPACE", "default")
OPERATORS = set(filter(None, os.environ.get("KUBEBENCH_TEST_OPERATORS", "").split(",")))
if os.environ.get("KUBEBENCH_TEST_KUBEFLOW"):  # the name of the variable before operators were listed
    OPERATORS.add("training-operator")
QUEUE = os.environ.get("KUBEBENCH_TEST_QUEUE", "kubebench")
MPI_IMAGE = os.environ.get("KUBEBENCH_TEST_MPI_IMAGE")
CLAIM = "kubebench-test"
PYTHON = "python:3.11-slim"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not KUBECONFIG, reason="set KUBEBENCH_TEST_KUBECONFIG to run")]


def needs(operator: str):
    return pytest.mark.skipif(operator not in OPERATORS, reason=f"add {operator} to KUBEBENCH_TEST_OPERATORS")


@pytest.fixture(scope="module")
def claim():
    from kubernetes import client, config

    config.load_kube_config(config_file=os.path.expanduser(KUBECONFIG))
    core = client.CoreV1Api()
    body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": CLAIM},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}}}}
    try:
        core.create_namespaced_persistent_volume_claim(NAMESPACE, body)
    except client.ApiException as e:
        if e.status != 409:
            raise
    yield CLAIM
    core.delete_namespaced_persistent_volume_claim(CLAIM, NAMESPACE)


def run(tmp_path: Path, job: str, timeout: str = "5m", parallelism: int = 1, repeats: int = 1, **backend) -> list:
    spec = tmp_path / "spec.yaml"
    options = {"kind": "kubernetes", "kubeconfig": os.path.expanduser(KUBECONFIG), "namespace": NAMESPACE,
               "unschedulable_grace": "3m", "storage": {"claim": CLAIM}, **backend}
    spec.write_text(yaml.safe_dump({"name": "real-cluster", "job": yaml.safe_load(textwrap.dedent(job)),
                                    "timeout": timeout, "metrics": [{"name": "v"}], "backend": options,
                                    "parallelism": parallelism, "repeats": repeats}))
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    experiment = plan_experiment(load_spec(spec), config, "real-cluster-test")
    execute(experiment, store)
    return store.runs("real-cluster-test")


def logs(tmp_path: Path, result) -> list[str]:
    output = tmp_path / "home" / "experiments" / "real-cluster-test" / result.run_id / "output"
    return sorted(p.name for p in output.glob("*.log"))


def test_a_batch_job_runs_and_reports(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, """
        kind: Job
        workers: 2
        image: busybox:1.36
        command: [sh, -c, 'echo "index $JOB_COMPLETION_INDEX"; echo "KUBEBENCH_METRIC v=1"']
    """)
    assert result.status == "succeeded", result.reason
    assert logs(tmp_path, result) == ["worker-0.log", "worker-1.log"]
    assert result.provenance["node"] and result.provenance["image_digest"].startswith("sha256:")


def test_a_runaway_job_times_out_with_its_log(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, """
        kind: Job
        workers: 1
        image: busybox:1.36
        command: [sh, -c, 'echo started; sleep 600']
    """, timeout="20s")
    assert (result.status, result.reason) == ("timeout", "timed out after 20s")  # as on the local backend
    output = tmp_path / "home" / "experiments" / "real-cluster-test" / result.run_id / "output"
    assert (output / "worker-0.log").read_text() == "started\n"


@needs("training-operator")
def test_a_pytorchjob_runs_and_reports(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, f"""
        kind: PyTorchJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import os; print('KUBEBENCH_METRIC v=' + os.environ['RANK'])"]
    """)
    assert result.status == "succeeded", result.reason
    assert workload_metrics(result.metrics) == {"v": 0.0} and logs(tmp_path, result) == ["master-0.log", "worker-0.log"]


@needs("training-operator")
def test_a_failing_pytorchjob_keeps_its_exit_code_and_log(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, f"""
        kind: PyTorchJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import os, sys, time; print('bye', flush=True); os.environ['RANK'] == '1' and sys.exit(3); time.sleep(60)"]
    """)
    assert (result.status, result.exit_code) == ("failed", 3) and "bye" in result.log_tail
    assert result.reason.startswith("worker-0 exited with code 3; job failed: PyTorchJobFailed")


@needs("training-operator")
def test_a_tfjob_runs_and_reports(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, f"""
        kind: TFJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import json, os; print('KUBEBENCH_METRIC v=' + str(json.loads(os.environ['TF_CONFIG'])['task']['index']))"]
    """)
    assert result.status == "succeeded", result.reason
    assert logs(tmp_path, result) == ["worker-0.log", "worker-1.log"]


@pytest.mark.skipif(not MPI_IMAGE, reason="set KUBEBENCH_TEST_MPI_IMAGE (docker build --target mpi)")
@pytest.mark.parametrize("version", ["kubeflow.org/v2beta1", "kubeflow.org/v1"])
def test_an_mpijob_runs_and_reports(tmp_path: Path, claim: str, version: str) -> None:
    operator = "mpi-operator" if version.endswith("v2beta1") else "training-operator"
    if operator not in OPERATORS:
        pytest.skip(f"add {operator} to KUBEBENCH_TEST_OPERATORS")
    (result,) = run(tmp_path, f"""
        kind: MPIJob
        workers: 2
        mpi_api_version: {version}
        image: {MPI_IMAGE}
        command: [python, -c, "print('KUBEBENCH_METRIC v=1')"]
    """)
    assert result.status == "succeeded", result.reason
    assert "launcher-0.log" in logs(tmp_path, result)


@needs("trainer")
def test_a_trainjob_runs_and_reports(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, f"""
        kind: TrainJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import os; print('KUBEBENCH_METRIC v=' + os.environ['PET_NODE_RANK'])"]
    """)
    assert result.status == "succeeded", result.reason
    assert workload_metrics(result.metrics) == {"v": 0.0} and logs(tmp_path, result) == ["node-0.log", "node-1.log"]


@needs("trainer")
def test_a_trainjob_fails_at_its_first_failure(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, f"""
        kind: TrainJob
        workers: 1
        image: {PYTHON}
        command: [python, -c, "import sys; print('failing', flush=True); sys.exit(3)"]
    """)
    assert (result.status, result.exit_code) == ("failed", 3) and "restartPolicy OnFailure" in result.reason
    assert "failing" in result.log_tail


@needs("kueue")
def test_kueue_queue_time_is_reported_apart(tmp_path: Path, claim: str) -> None:
    # two runs at once on a queue that admits one job at a time: the second waits, and its wait
    # counts neither against its timeout nor in its time
    runs = run(tmp_path, """
        kind: Job
        workers: 1
        image: busybox:1.36
        command: [sh, -c, 'sleep 15; echo "KUBEBENCH_METRIC v=1"']
        resources: {cpu: 1}
    """, timeout="25s", parallelism=2, repeats=2, queue=QUEUE)
    assert [r.status for r in runs] == ["succeeded", "succeeded"], [r.reason for r in runs]
    assert max(r.metrics["queue_seconds"] for r in runs) >= 10
