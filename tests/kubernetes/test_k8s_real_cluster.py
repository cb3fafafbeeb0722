"""The same checks against a real cluster: skipped unless ``KUBEBENCH_TEST_KUBECONFIG`` names a kubeconfig.

    KUBEBENCH_TEST_KUBECONFIG=~/.kube/config [KUBEBENCH_TEST_NAMESPACE=default] \\
    KUBEBENCH_TEST_OPERATORS=training-operator,trainer,kueue [KUBEBENCH_TEST_QUEUE=kubebench] \\
    [KUBEBENCH_TEST_MPI_IMAGE=kubebench/cnn-mpi:0.1.0] .venv/bin/python -m pytest tests/kubernetes/test_k8s_real_cluster.py

A batch/v1 Job runs on any cluster with a default StorageClass. Each operator named in
``KUBEBENCH_TEST_OPERATORS`` adds its kinds: ``training-operator`` (PyTorchJob, TFJob),
``training-operator-mpijob`` (its MPIJob v1, when ``KUBEBENCH_TEST_MPI_IMAGE`` is set), ``mpi-operator``
(MPIJob v2beta1, with that image),
``trainer`` (TrainJob on the ``torch-distributed`` runtime), ``kueue`` (a LocalQueue
``KUBEBENCH_TEST_QUEUE`` admitting one job at a time, Kueue's integrations as it installs them). `make
test-kind` (tests/kubernetes/kind.sh) makes such a cluster with kind, at pinned versions, and runs this
file; docs/kubernetes-kind.md does the same step by step. The claim ``kubebench-test`` is created for
the tests and deleted after them.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import yaml
from support.runs import workload_metrics

from kubebench.errors import PreflightError
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


def run(tmp_path: Path, job: str, timeout: str = "5m", parallelism: int = 1, repeats: int = 1, retries: int = 0,
        store_of: list | None = None, **backend) -> list:
    spec = tmp_path / "spec.yaml"
    options = {"kind": "kubernetes", "kubeconfig": os.path.expanduser(KUBECONFIG), "namespace": NAMESPACE,
               "unschedulable_grace": "3m", "storage": {"claim": CLAIM}, **backend}
    spec.write_text(yaml.safe_dump({"name": "real-cluster", "job": yaml.safe_load(textwrap.dedent(job)),
                                    "timeout": timeout, "metrics": [{"name": "v"}], "backend": options,
                                    "parallelism": parallelism, "repeats": repeats, "retries": retries}))
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    if store_of is not None:
        store_of.append(store)
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
    # every rank stays up a while: the worker's init-pytorch resolves the master only while it is Ready
    (result,) = run(tmp_path, f"""
        kind: PyTorchJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import os, time; time.sleep(20); print('KUBEBENCH_METRIC v=' + os.environ['RANK'])"]
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
    # training-operator's MPIJob shares the CRD mpijobs.kubeflow.org with mpi-operator's: named apart
    operator = "mpi-operator" if version.endswith("v2beta1") else "training-operator-mpijob"
    if operator not in OPERATORS:
        pytest.skip(f"add {operator} to KUBEBENCH_TEST_OPERATORS")
    # the Dockerfile's mpi image runs its SSH server as root (docs/kubernetes.md, "Pod security")
    (result,) = run(tmp_path, f"""
        kind: MPIJob
        workers: 2
        mpi_api_version: {version}
        image: {MPI_IMAGE}
        command: [python, -c, "print('KUBEBENCH_METRIC v=1')"]
    """, pod_security_context={}, container_security_context={})
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


# --- the review of 2026-12-02's five cases: each passed in the emulator while it failed on a cluster -----


@needs("training-operator")
def test_a_pytorchjob_whose_master_ends_at_once_says_what_its_workers_did(tmp_path: Path, claim: str) -> None:
    # M-G: the job succeeds on its master; the worker's init-pytorch may never have resolved it
    (result,) = run(tmp_path, f"""
        kind: PyTorchJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import os; print('KUBEBENCH_METRIC v=' + os.environ['RANK'])"]
    """)
    assert result.status == "succeeded", result.reason
    assert "master-0.log" in logs(tmp_path, result)
    if "worker-0.log" not in logs(tmp_path, result):
        assert "worker-0 never ran: its init container init-pytorch had not finished" in result.info["log_warning"]


@needs("trainer")
def test_a_deleted_trainjob_node_pod_is_an_infrastructure_failure_and_is_retried(tmp_path: Path, claim: str) -> None:
    # H-C: `kubectl delete pod` of a node while it runs; the first attempt's 143 is not the workload's
    import threading
    import time

    from kubernetes import client, config

    config.load_kube_config(config_file=os.path.expanduser(KUBECONFIG))
    core, deleted = client.CoreV1Api(), []

    def delete_a_node_once() -> None:
        deadline = time.monotonic() + 240
        while not deleted and time.monotonic() < deadline:
            pods = core.list_namespaced_pod(NAMESPACE, label_selector="jobset.sigs.k8s.io/replicatedjob-name=node").items
            running = [p for p in pods if p.status.phase == "Running" and not p.metadata.deletion_timestamp]
            if len(running) == 2:
                core.delete_namespaced_pod(running[-1].metadata.name, NAMESPACE)
                deleted.append(running[-1].metadata.name)
            time.sleep(1)

    threading.Thread(target=delete_a_node_once, daemon=True).start()
    stores: list = []
    (result,) = run(tmp_path, f"""
        kind: TrainJob
        workers: 2
        image: {PYTHON}
        command: [python, -c, "import time; time.sleep(30); print('KUBEBENCH_METRIC v=1')"]
    """, retries=1, store_of=stores)
    assert deleted, "no node pod was running to delete"
    assert (result.status, result.attempts) == ("succeeded", 2), result.reason
    (attempts,) = stores[0].attempts("real-cluster-test").values()
    assert "the cluster stopped a replica of the running job" in attempts[0].reason, attempts[0].reason


@needs("kueue")
@needs("training-operator")
def test_a_pytorchjob_with_a_queue_on_a_default_kueue_install_is_refused_before_it_runs(tmp_path: Path,
                                                                                         claim: str) -> None:
    # M-A: Kueue v0.19's default integrations leave kubeflow.org/pytorchjob out (docs/kubernetes-kind.md installs them so)
    with pytest.raises(PreflightError, match="Kueue does not manage PyTorchJob"):
        run(tmp_path, f"""
            kind: PyTorchJob
            workers: 1
            image: {PYTHON}
            command: [python, -c, "print('KUBEBENCH_METRIC v=1')"]
        """, queue=QUEUE)


@needs("mpi-operator")
def test_a_gpu_sized_mpijob_shorthand_asks_the_api_server_for_no_launcher_gpu(tmp_path: Path, claim: str) -> None:
    # H-A: the launcher asks for a little CPU and memory, never the workers' GPUs (a server-side dry run:
    # the real CRD, defaulting and admission, no GPU needed)
    from kubernetes import client, config

    from kubebench.runner import make_backend

    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "gpu-mpi", "timeout": "5m", "job": {
        "kind": "MPIJob", "workers": 2, "image": MPI_IMAGE or PYTHON, "command": ["python", "-c", "print(1)"],
        "resources": {"gpu": 8, "cpu": 4}}, "backend": {"kind": "kubernetes", "namespace": NAMESPACE,
                                                        "kubeconfig": os.path.expanduser(KUBECONFIG)}}))
    loaded = load_spec(spec)
    experiment = plan_experiment(loaded, settings(home=tmp_path / "home"), "gpu-mpi")
    manifest = experiment.render(experiment.plan.runs[0], make_backend(loaded)).manifest
    config.load_kube_config(config_file=os.path.expanduser(KUBECONFIG))
    created = client.CustomObjectsApi().create_namespaced_custom_object(
        "kubeflow.org", "v2beta1", NAMESPACE, "mpijobs", manifest, dry_run="All")
    replicas = created["spec"]["mpiReplicaSpecs"]
    (launcher,) = replicas["Launcher"]["template"]["spec"]["containers"]
    (worker,) = replicas["Worker"]["template"]["spec"]["containers"]
    assert launcher["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}}
    assert worker["resources"]["limits"]["nvidia.com/gpu"] in (8, "8")
    assert created["spec"]["slotsPerWorker"] == 8  # one rank per GPU


@needs("trainer")
def test_a_trainjob_on_a_runtime_the_cluster_does_not_have_is_refused_before_it_runs(tmp_path: Path,
                                                                                      claim: str) -> None:
    # M-C: as on a cluster whose Trainer was installed without its runtimes (the Helm chart's default)
    from kubernetes import client, config

    with pytest.raises(PreflightError, match="ClusterTrainingRuntime 'kubebench-absent' not found"):
        run(tmp_path, f"""
            kind: TrainJob
            workers: 1
            runtime: kubebench-absent
            image: {PYTHON}
            command: [python, -c, "print('KUBEBENCH_METRIC v=1')"]
        """)
    config.load_kube_config(config_file=os.path.expanduser(KUBECONFIG))
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "kubebench-absent"},
            "spec": {"runtimeRef": {"name": "kubebench-absent"}, "trainer": {"image": PYTHON, "numNodes": 1}}}
    with pytest.raises(client.ApiException) as refused:  # and Trainer's webhook refuses it, as the stand-in's does
        client.CustomObjectsApi().create_namespaced_custom_object("trainer.kubeflow.org", "v1alpha1", NAMESPACE,
                                                                  "trainjobs", body, dry_run="All")
    assert refused.value.status == 403 and "must be created before the TrainJob is created" in refused.value.body
