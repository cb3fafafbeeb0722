"""Against a real cluster: skipped unless ``KUBEBENCH_TEST_KUBECONFIG`` names a kubeconfig.

    KUBEBENCH_TEST_KUBECONFIG=~/.kube/config [KUBEBENCH_TEST_NAMESPACE=default] \
    [KUBEBENCH_TEST_KUBEFLOW=1] .venv/bin/python -m pytest tests/kubernetes/test_k8s_real_cluster.py

Runs a batch/v1 Job (any cluster with a default StorageClass) and, with ``KUBEBENCH_TEST_KUBEFLOW=1``,
a 2-replica PyTorchJob (the Kubeflow training operator installed). The claim ``kubebench-test``
is created for the test and deleted after it.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

KUBECONFIG = os.environ.get("KUBEBENCH_TEST_KUBECONFIG")
NAMESPACE = os.environ.get("KUBEBENCH_TEST_NAMESPACE", "default")
CLAIM = "kubebench-test"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not KUBECONFIG, reason="set KUBEBENCH_TEST_KUBECONFIG to run")]


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


def run(tmp_path: Path, job: str) -> list:
    spec = tmp_path / "spec.yaml"
    backend = {"kind": "kubernetes", "kubeconfig": os.path.expanduser(KUBECONFIG), "namespace": NAMESPACE,
               "unschedulable_grace": "2m", "storage": {"claim": CLAIM}}
    spec.write_text(yaml.safe_dump({"name": "real-cluster", "job": yaml.safe_load(textwrap.dedent(job)),
                                    "timeout": "5m", "metrics": [{"name": "v"}], "backend": backend}))
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    experiment = plan_experiment(load_spec(spec), config, "real-cluster-test")
    execute(experiment, store)
    return store.runs("real-cluster-test")


def test_a_batch_job_runs_and_reports(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, """
        kind: Job
        workers: 2
        image: busybox:1.36
        command: [sh, -c, 'echo "index $JOB_COMPLETION_INDEX"; echo "KUBEBENCH_METRIC v=1"']
    """)
    assert result.status == "succeeded", result.reason
    output = tmp_path / "home" / "experiments" / "real-cluster-test" / result.run_id / "output"
    assert sorted(p.name for p in output.glob("*.log")) == ["worker-0.log", "worker-1.log"]


@pytest.mark.skipif(not os.environ.get("KUBEBENCH_TEST_KUBEFLOW"), reason="set KUBEBENCH_TEST_KUBEFLOW=1 (training operator)")
def test_a_pytorchjob_runs_and_reports(tmp_path: Path, claim: str) -> None:
    (result,) = run(tmp_path, """
        kind: PyTorchJob
        workers: 2
        image: python:3.11-slim
        command: [python, -c, "import os; print('KUBEBENCH_METRIC v=' + os.environ['RANK'])"]
    """)
    assert result.status == "succeeded", result.reason
    assert result.metrics == {"v": 0.0}
