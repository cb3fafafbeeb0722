"""How the JAX and XGBoost workloads read their peers from each operator's environment (no framework)."""

from __future__ import annotations

import pytest

from kubebench.workloads.peers import Peers, PeersError, jax_peers, xgboost_peers


def test_a_trainjob_node_on_the_jax_runtime() -> None:
    env = {"JAX_COORDINATOR_ADDRESS": "job-node-0-0.job:29500", "JAX_NUM_PROCESSES": "4", "JAX_PROCESS_ID": "3"}
    peers = jax_peers(env)
    assert peers == Peers(3, 4, "job-node-0-0.job", 29500, "TrainJob (jax-distributed)", 4)
    assert peers.address == "job-node-0-0.job:29500"


def test_a_jaxjob_worker_joins_worker_0_at_its_port() -> None:
    env = {"COORDINATOR_ADDRESS": "job-worker-0", "COORDINATOR_PORT": "6666", "NUM_PROCESSES": "2", "PROCESS_ID": "1",
           "LOCAL_WORLD_SIZE": "1"}
    assert jax_peers(env) == Peers(1, 2, "job-worker-0", 6666, "JAXJob", 1)


def test_xgboost_workers_from_a_trainjob_and_from_an_xgboostjob() -> None:
    trainer = {"DMLC_TRACKER_URI": "job-node-0-0.job", "DMLC_TRACKER_PORT": "29500", "DMLC_TASK_ID": "1",
               "DMLC_NUM_WORKER": "2"}
    assert xgboost_peers(trainer) == Peers(1, 2, "job-node-0-0.job", 29500, "TrainJob (xgboost-distributed)", 2)
    v1 = {"MASTER_ADDR": "job-master-0", "MASTER_PORT": "9999", "RANK": "0", "WORLD_SIZE": "3", "LOCAL_WORLD_SIZE": "3"}
    assert xgboost_peers(v1) == Peers(0, 3, "job-master-0", 9999, "XGBoostJob", 3)


def test_alone_without_any_of_the_variables() -> None:
    assert jax_peers({"WORLD_SIZE": "2"}) == xgboost_peers({}) == Peers()
    assert Peers(host="::1", port=5).address == "[::1]:5"


@pytest.mark.parametrize(("env", "message"), [
    ({"JAX_COORDINATOR_ADDRESS": "a:1", "JAX_NUM_PROCESSES": "2"}, "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES set "
                                                                    "(TrainJob (jax-distributed)) but not JAX_PROCESS_ID"),
    ({"JAX_COORDINATOR_ADDRESS": "a", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "0"}, "'a' is not host:port"),
    ({"JAX_COORDINATOR_ADDRESS": "a:x", "JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "0"}, "'x' is not a port"),
    ({"COORDINATOR_ADDRESS": "a", "COORDINATOR_PORT": "1", "NUM_PROCESSES": "two", "PROCESS_ID": "0"},
     "NUM_PROCESSES='two' is not a whole number"),
    ({"COORDINATOR_ADDRESS": "a", "COORDINATOR_PORT": "1", "NUM_PROCESSES": "2", "PROCESS_ID": "2"},
     "PROCESS_ID=2 is not a rank of NUM_PROCESSES=2"),
])
def test_a_partial_or_wrong_environment_is_one_clear_error(env: dict, message: str) -> None:
    with pytest.raises(PeersError) as info:
        jax_peers(env)
    assert message in str(info.value)
