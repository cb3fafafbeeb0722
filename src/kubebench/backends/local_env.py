"""What each operator gives its replicas, as the local backend gives it to processes on this machine:
the same variables, with every pod's address on loopback and every port a free one.

- PyTorchJob (training-operator v1 ``pytorch/envvar.go``): ``MASTER_ADDR``, ``MASTER_PORT``,
  ``WORLD_SIZE``, ``RANK``; TFJob: ``TF_CONFIG``; JAXJob (``jax/envvar.go``): ``COORDINATOR_ADDRESS``,
  ``COORDINATOR_PORT``, ``NUM_PROCESSES``, ``PROCESS_ID``; XGBoostJob (``xgboost/xgboost.go``):
  ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` and, with workers, ``WORKER_ADDRS`` and
  ``WORKER_PORT``;
- TrainJob (Trainer v2's plugins, by the runtime's ML policy): ``torch`` torchrun's ``PET_*`` (and,
  as torchrun would, ``MASTER_ADDR`` … ``RANK``), ``jax`` ``JAX_COORDINATOR_ADDRESS``,
  ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``, ``xgboost`` ``DMLC_TRACKER_URI``, ``DMLC_TRACKER_PORT``,
  ``DMLC_TASK_ID``, ``DMLC_NUM_WORKER``; each node also gets the Job controller's ``JOB_COMPLETION_INDEX``;
- MPIJob: a hostfile of this machine's slots; Job: ``JOB_COMPLETION_INDEX``.

Every replica of a job of several processes also gets ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``: they
all share this machine (a workload sizes its threads, and picks its GPU, from them; on a cluster
kubebench sets 0 and 1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ..render.kinds import ReplicaGroup
from ..render.trainjob import policy_of, runtime_of
from .processes import LOCALHOST, free_port

#: ``(rank, replica type, index)`` → the variables of that replica.
ReplicaEnv = Callable[[int, str, int], dict[str, str]]


def operator_env(manifest: dict, replicas: list[tuple[ReplicaGroup, int]], config_dir: Path) -> ReplicaEnv:
    """What the operator of ``manifest``'s kind gives each of ``replicas`` (in rank order)."""
    kind = manifest.get("kind")
    world = len(replicas)
    if kind == "TrainJob":
        return _trainjob(policy_of(runtime_of(manifest)), world)
    if kind in _RANKED:
        builder, port, worker_port = _RANKED[kind], free_port(), free_port()
        return lambda rank, _t, _i: {**builder(rank, world, port, worker_port), **_local(rank, world)}
    if kind == "TFJob":
        return _tf_config(replicas)
    if kind == "MPIJob":
        mpi = _mpi(replicas, config_dir)
        return lambda _r, _t, _i: mpi
    if kind == "Job":
        return lambda _r, _t, index: {"JOB_COMPLETION_INDEX": str(index)}
    return lambda _r, _t, _i: {}


def _local(rank: int, world: int) -> dict[str, str]:
    # All replicas share this host: distinct local ranks pick distinct GPUs.
    return {"LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(world)}


def _torch(rank: int, world: int, port: int, _worker_port: int = 0) -> dict[str, str]:
    return {"MASTER_ADDR": LOCALHOST, "MASTER_PORT": str(port), "WORLD_SIZE": str(world), "RANK": str(rank)}


def _jax(rank: int, world: int, port: int, _worker_port: int = 0) -> dict[str, str]:
    return {"PYTHONUNBUFFERED": "1", "COORDINATOR_PORT": str(port), "COORDINATOR_ADDRESS": LOCALHOST,
            "NUM_PROCESSES": str(world), "PROCESS_ID": str(rank)}


def _xgboost(rank: int, world: int, port: int, worker_port: int) -> dict[str, str]:
    env = {**_torch(rank, world, port), "PYTHONUNBUFFERED": "1"}
    if world > 1:  # for LightGBM, which the operator also runs
        env |= {"WORKER_PORT": str(worker_port), "WORKER_ADDRS": ",".join([LOCALHOST] * (world - 1))}
    return env


#: The kinds whose operator gives each replica its rank (and the world, and rank 0's address).
_RANKED: dict[str, Callable[[int, int, int, int], dict[str, str]]] = {"PyTorchJob": _torch, "JAXJob": _jax,
                                                                       "XGBoostJob": _xgboost}


def _trainjob(policy: str, world: int) -> ReplicaEnv:
    port = free_port()

    def env(rank: int, _t: str, _i: int) -> dict[str, str]:
        node = {"JOB_COMPLETION_INDEX": str(rank), **_local(rank, world)}
        if policy == "jax":
            return node | {"JAX_NUM_PROCESSES": str(world), "JAX_PROCESS_ID": str(rank),
                           "JAX_COORDINATOR_ADDRESS": f"{LOCALHOST}:{port}"}
        if policy == "xgboost":
            return node | {"DMLC_TRACKER_URI": LOCALHOST, "DMLC_TRACKER_PORT": str(port), "DMLC_TASK_ID": str(rank),
                           "DMLC_NUM_WORKER": str(world)}
        return node | _torch(rank, world, port) | {
            "PET_NNODES": str(world), "PET_NPROC_PER_NODE": "1", "PET_NODE_RANK": str(rank),
            "PET_MASTER_ADDR": LOCALHOST, "PET_MASTER_PORT": str(port)}

    return env


def _tf_config(replicas: list[tuple[ReplicaGroup, int]]) -> ReplicaEnv:
    ports = {(g.type, i): free_port() for g, i in replicas}
    cluster: dict[str, list[str]] = {}
    for (rtype, _), port in ports.items():
        cluster.setdefault(rtype, []).append(f"{LOCALHOST}:{port}")
    return lambda _r, rtype, index: {
        "TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": rtype, "index": index}, "environment": "cloud"})
    }


def _mpi(replicas: list[tuple[ReplicaGroup, int]], config_dir: Path) -> dict[str, str]:
    slots = sum(1 for g, _ in replicas if g.type == "worker")
    hostfile = config_dir / "hostfile"
    hostfile.write_text(f"localhost slots={slots}\n")
    return {
        "OMPI_MCA_orte_default_hostfile": str(hostfile),
        "OMPI_MCA_hwloc_base_binding_policy": "none",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
