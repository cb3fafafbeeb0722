"""JAX and XGBoost through every operator that runs them, on the stand-in: training-operator v1.9's
JAXJob and XGBoostJob, and Trainer's TrainJob on its ``jax-distributed`` and ``xgboost-distributed``
runtimes. Each replica gets exactly what its operator injects (and, on the local backend, the same
variables); failures are the operators'; and the real workloads' ranks form one job (slow)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.replicas import assert_replicas_in_sync, output_logs
from support.skips import require_module

# Every variable an operator of these kinds may give (and none of kubebench's own).
ENV = ("import os, json, kubebench; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith(("
       "'MASTER_', 'WORLD_', 'RANK', 'WORKER_', 'COORDINATOR_', 'NUM_PROC', 'PROCESS_ID', 'JAX_', 'DMLC_', 'PET_',"
       " 'JOB_COMPLETION'))}, sort_keys=True)); kubebench.report(v=1)")
CASES = {
    "JAXJob": ("JAXJob", "", {"worker-0": {"COORDINATOR_ADDRESS": "127.0.0.1", "COORDINATOR_PORT": "*",
                                           "NUM_PROCESSES": "2", "PROCESS_ID": "0"},
                              "worker-1": {"COORDINATOR_ADDRESS": "127.0.0.1", "COORDINATOR_PORT": "*",
                                           "NUM_PROCESSES": "2", "PROCESS_ID": "1"}}),
    "XGBoostJob": ("XGBoostJob", "", {"master-0": {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "*", "RANK": "0",
                                                   "WORLD_SIZE": "2", "WORKER_ADDRS": "127.0.0.1", "WORKER_PORT": "*"},
                                      "worker-0": {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "*", "RANK": "1",
                                                   "WORLD_SIZE": "2", "WORKER_ADDRS": "127.0.0.1", "WORKER_PORT": "*"}}),
    "TrainJob-jax": ("TrainJob", "runtime: jax-distributed", {
        f"node-{i}": {"JAX_COORDINATOR_ADDRESS": "*", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": str(i),
                      "JOB_COMPLETION_INDEX": str(i)} for i in (0, 1)}),
    "TrainJob-xgboost": ("TrainJob", "runtime: xgboost-distributed", {
        f"node-{i}": {"DMLC_NUM_WORKER": "2", "DMLC_TASK_ID": str(i), "DMLC_TRACKER_PORT": "*",
                      "DMLC_TRACKER_URI": "127.0.0.1", "JOB_COMPLETION_INDEX": str(i)} for i in (0, 1)}),
}


def spec(kind: str, extra: str, command: str, backend: str = "{kind: kubernetes, unschedulable_grace: 30s}",
         metric: str = "v", timeout: str = "60s") -> str:
    return textwrap.dedent(f"""
        name: frameworks
        job:
          kind: {kind}
          workers: 2
          command: {command}
          resources: {{cpu: 1}}
          {extra}
        backend: {backend}
        metrics: [{{name: {metric}}}]
        timeout: {timeout}
        """)


def output_of(cluster: Cluster, experiment: str, run) -> Path:
    return cluster.home / "experiments" / experiment / run.run_id / "output"


def given(folder: Path) -> dict[str, dict[str, str]]:
    """Each replica's operator variables, as its log's first line printed them."""
    return {log.stem: json.loads(log.read_text().splitlines()[0]) for log in sorted(folder.glob("*.log"))}


def like(found: dict[str, dict[str, str]], expected: dict[str, dict[str, str]]) -> bool:
    """``found`` has exactly the replicas and variables of ``expected`` ("*": any value)."""
    return {r: set(e) for r, e in found.items()} == {r: set(e) for r, e in expected.items()} and all(
        value in ("*", found[r][k]) for r, e in expected.items() for k, value in e.items())


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_replica_gets_what_its_operator_injects_and_locally_the_same(cluster: Cluster, run_spec, case: str) -> None:
    kind, extra, expected = CASES[case]
    command = json.dumps(["python", "-c", ENV])
    (run,) = run_spec(spec(kind, extra, command)).runs
    assert run.status == "succeeded", run.reason
    on_cluster = given(output_of(cluster, "exp-1", run))
    assert like(on_cluster, expected), on_cluster
    rendezvous = {e.get("COORDINATOR_PORT") or e.get("MASTER_PORT") or e.get("DMLC_TRACKER_PORT")
                  or e.get("JAX_COORDINATOR_ADDRESS") for e in on_cluster.values()}
    assert len(rendezvous) == 1, on_cluster  # every replica meets rank 0 at one address
    (local,) = run_spec(spec(kind, extra, command, backend="local"), "exp-2").runs
    assert local.status == "succeeded", local.reason
    assert like(given(output_of(cluster, "exp-2", local)), expected)


@pytest.mark.cluster(trainer="2.1")
def test_trainer_before_2_2_has_no_jax_runtime_and_refuses_the_trainjob(cluster: Cluster, run_spec) -> None:
    from support.cluster.emulator import ApiError

    from kubebench.errors import PreflightError

    with pytest.raises(PreflightError, match="ClusterTrainingRuntime 'jax-distributed' not found: every TrainJob runs "
                                             "on a runtime"):
        run_spec(spec("TrainJob", "runtime: jax-distributed", json.dumps(["python", "-c", ENV])))
    assert cluster.api.count("POST", "trainjobs") == 0  # one clear error before any job, not a failed run each
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "mine"},
            "spec": {"runtimeRef": {"name": "jax-distributed"}, "trainer": {"numNodes": 1, "image": "i"}}}
    with pytest.raises(ApiError) as refused:  # and Trainer's webhook refuses it, as it does
        cluster.api.store.create(("trainer.kubeflow.org", "v1alpha1", "trainjobs"), cluster.namespace, body)
    assert refused.value.code == 403 and "admission webhook" in refused.value.message
    assert 'clustertrainingruntimes.trainer.kubeflow.org "jax-distributed" not found' in refused.value.message
    assert "must be created before the TrainJob is created" in refused.value.message


@pytest.mark.cluster(trainer_runtimes=False)
def test_a_trainjob_before_any_runtime_is_installed_stops_the_run_saying_how_to_install_them(
        cluster: Cluster, run_spec, tmp_path) -> None:
    # Trainer's Helm chart (runtimes.torchDistributed.enabled: false) and its manager overlay install no
    # runtime: every TrainJob is refused by its webhook
    from typer.testing import CliRunner

    from kubebench.cli import app
    from kubebench.errors import PreflightError

    text = spec("TrainJob", "", json.dumps(["python", "-c", ENV]))
    with pytest.raises(PreflightError, match=r"ClusterTrainingRuntime 'torch-distributed' not found.*"
                                             r"manifests/overlays/runtimes\?ref=v2.3.0.*runtimes.torchDistributed.enabled=true"):
        run_spec(text)
    assert cluster.api.count("POST", "trainjobs") == 0
    (tmp_path / "doctor.yaml").write_text(textwrap.dedent(text))
    out = " ".join(CliRunner().invoke(app, ["doctor", str(tmp_path / "doctor.yaml")]).output.split())
    assert "FAIL TrainJob runtime ClusterTrainingRuntime torch-distributed: ClusterTrainingRuntime 'torch-distributed' " \
           "not found" in out
    cluster.operator.trainer.install_runtimes(("torch-distributed",))
    out = " ".join(CliRunner().invoke(app, ["doctor", str(tmp_path / "doctor.yaml")]).output.split())
    assert "ok TrainJob runtime ClusterTrainingRuntime torch-distributed: found" in out


def test_an_xgboost_trainjob_that_sets_the_runtimes_variables_is_refused_by_trainers_webhook(cluster: Cluster) -> None:
    from support.cluster.emulator import ApiError

    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "mine"},
            "spec": {"runtimeRef": {"name": "xgboost-distributed"},
                     "trainer": {"numNodes": 2, "env": [{"name": "OMP_NUM_THREADS", "value": "1"},
                                                        {"name": "DMLC_NUM_WORKER", "value": "2"}]}}}
    with pytest.raises(ApiError) as info:
        cluster.api.store.create(("trainer.kubeflow.org", "v1alpha1", "trainjobs"), cluster.namespace, body)
    assert info.value.code == 403
    assert "spec.trainer.env[1]: Forbidden: DMLC_NUM_WORKER is reserved for the XGBoost runtime" in info.value.message


# Rank 1 fails; rank 0 waits on it, as a coordinator or tracker does (an XGBoostJob whose master ends
# first has succeeded, whatever its workers do after).
FAIL_RANK_1 = ("import os, sys, time; rank = os.environ.get('PROCESS_ID') or os.environ['RANK']; print('rank', rank, flush=True);"
               " sys.exit(3) if rank == '1' else time.sleep(60)")


@pytest.mark.parametrize(("kind", "failed"), [("JAXJob", "worker-1"), ("XGBoostJob", "worker-0")])
def test_a_failed_worker_fails_the_job_as_its_operator_says(cluster: Cluster, run_spec, kind: str, failed: str) -> None:
    (run,) = run_spec(spec(kind, "", json.dumps(["python", "-c", FAIL_RANK_1]))).runs
    assert run.status == "failed" and run.exit_code == 3, run.reason
    assert run.reason.startswith(f"{failed} exited with code 3")
    assert f"{kind}Failed: {kind} kb-{run.run_id} is failed because 1 Worker replica(s) failed." in run.reason


# --- the real workloads, 2 processes each -----------------------------------------------------------

JAX = ["python", "-m", "kubebench.workloads.jax_train", "--steps", "3", "--warmup-steps", "1", "--batch-size", "4",
       "--layers", "1", "--threads", "1"]
XGB = ["python", "-m", "kubebench.workloads.xgb_train", "--rows", "5000", "--valid-rows", "1000", "--rounds", "5",
       "--threads", "1"]
WORKLOADS = {"JAXJob": ("JAXJob", "", JAX, "tokens_per_sec"), "XGBoostJob": ("XGBoostJob", "", XGB, "rows_per_sec"),
             "TrainJob-jax": ("TrainJob", "runtime: jax-distributed", JAX, "tokens_per_sec"),
             "TrainJob-xgboost": ("TrainJob", "runtime: xgboost-distributed", XGB, "rows_per_sec")}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(WORKLOADS))
def test_the_workloads_ranks_train_as_one_job_through_each_operator(cluster: Cluster, run_spec, case: str) -> None:
    kind, extra, command, metric = WORKLOADS[case]
    framework = "jax" if "jax" in command[2] else "xgboost"
    require_module(framework, framework)
    (run,) = run_spec(spec(kind, extra, json.dumps(command), metric=metric, timeout="3m")).runs
    assert run.status == "succeeded", run.reason
    logs = output_logs(output_of(cluster, "exp-1", run))
    assert len(logs) == 2 and "world_size=2" in "".join(logs)
    assert_replicas_in_sync(logs, 2, run.metrics[metric])
