"""What each operator gives its replicas, as the local backend gives it to processes on this machine:
the same variables, with every pod's address on loopback and every port a free one.

- PyTorchJob (training-operator v1 ``pytorch/envvar.go``, ``master.go``): ``MASTER_ADDR``, ``MASTER_PORT``,
  ``WORLD_SIZE`` (replicas × ``nprocPerNode`` when that is a number), ``RANK`` (the replica's), and
  torchrun's ``PET_NNODES``, ``PET_NODE_RANK``, ``PET_NPROC_PER_NODE`` (``nprocPerNode``, ``auto`` by
  default), ``PET_MASTER_ADDR``, ``PET_MASTER_PORT``; TFJob: ``TF_CONFIG``; JAXJob (``jax/envvar.go``): ``COORDINATOR_ADDRESS``,
  ``COORDINATOR_PORT``, ``NUM_PROCESSES``, ``PROCESS_ID``; XGBoostJob (``xgboost/xgboost.go``):
  ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` and, with workers, ``WORKER_ADDRS`` and
  ``WORKER_PORT``;
- TrainJob (Trainer v2's plugins, by the runtime's ML policy): ``torch`` torchrun's ``PET_*``, with
  ``PET_NPROC_PER_NODE`` from ``numProcPerNode`` (else ``auto`` with GPUs, the CPU request without)
  and, for one process per node, ``MASTER_ADDR`` … ``RANK`` as torchrun would give them; ``jax`` ``JAX_COORDINATOR_ADDRESS``,
  ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``, ``xgboost`` ``DMLC_TRACKER_URI``, ``DMLC_TRACKER_PORT``,
  ``DMLC_TASK_ID``, ``DMLC_NUM_WORKER``; each node also gets the Job controller's ``JOB_COMPLETION_INDEX``;
- MPIJob: a hostfile of this machine's slots (``slotsPerWorker`` for each worker, and for the
  launcher when it runs as a worker); Job: ``JOB_COMPLETION_INDEX``.

Every replica of a job of several processes also gets ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE``: they
all share this machine (a workload sizes its threads, and picks its GPU, from them; on a cluster
kubebench sets 0 and 1).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

from ..render.kinds import ReplicaGroup
from ..render.pods import cpu_quantity
from ..render.trainjob import policy_of, runtime_of
from .processes import LOCALHOST, free_port

#: ``(rank, replica type, index)`` → the variables of that replica.
ReplicaEnv = Callable[[int, str, int], dict[str, str]]


def operator_env(manifest: dict, replicas: list[tuple[ReplicaGroup, int]], config_dir: Path) -> ReplicaEnv:
    """What the operator of ``manifest``'s kind gives each of ``replicas`` (in rank order)."""
    kind = manifest.get("kind")
    world = len(replicas)
    if kind == "TrainJob":
        return _trainjob(policy_of(runtime_of(manifest)), world, trainer_processes(manifest))
    if kind == "PyTorchJob":
        return _pytorch(str((manifest.get("spec") or {}).get("nprocPerNode") or "auto"), world)
    if kind in _RANKED:
        builder, port, worker_port = _RANKED[kind], free_port(), free_port()
        return lambda rank, _t, _i: {**builder(rank, world, port, worker_port), **_local(rank, world)}
    if kind == "TFJob":
        return _tf_config(replicas)
    if kind == "MPIJob":
        mpi = _mpi(manifest, replicas, config_dir)
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
_RANKED: dict[str, Callable[[int, int, int, int], dict[str, str]]] = {"JAXJob": _jax, "XGBoostJob": _xgboost}


def _pytorch(nproc: str, world: int) -> ReplicaEnv:
    """training-operator v1.9's PyTorchJob: ``WORLD_SIZE`` counts ``nprocPerNode`` when it is a number
    (``auto`` counts 1), and torchrun's arguments come as ``PET_*``."""
    port, per_node = free_port(), int(nproc) if nproc.isdigit() else 1
    return lambda rank, _t, _i: {
        **_torch(rank, world * per_node, port), **_local(rank, world), "PET_NNODES": str(world),
        "PET_NODE_RANK": str(rank), "PET_NPROC_PER_NODE": nproc, "PET_MASTER_ADDR": LOCALHOST, "PET_MASTER_PORT": str(port)}


def trainer_processes(manifest: dict) -> str:
    """``PET_NPROC_PER_NODE`` as Trainer's torch plugin gives it: ``numProcPerNode``, else ``auto`` when
    ``resourcesPerNode`` has GPUs, else its CPUs (the request before the limit, rounded up, at least 1)."""
    trainer = (manifest.get("spec") or {}).get("trainer") or {}
    if str(trainer.get("numProcPerNode", "")).isdigit():
        return str(trainer["numProcPerNode"])
    resources = trainer.get("resourcesPerNode") or {}
    amounts = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    if any("gpu" in key.lower() and str(value) not in ("0", "") for key, value in amounts.items()):
        return "auto"
    return str(max(1, math.ceil(cpu_quantity(amounts.get("cpu", 0)))))


def _trainjob(policy: str, world: int, nproc: str) -> ReplicaEnv:
    port = free_port()

    def env(rank: int, _t: str, _i: int) -> dict[str, str]:
        node = {"JOB_COMPLETION_INDEX": str(rank), **_local(rank, world)}
        if policy == "jax":
            return node | {"JAX_NUM_PROCESSES": str(world), "JAX_PROCESS_ID": str(rank),
                           "JAX_COORDINATOR_ADDRESS": f"{LOCALHOST}:{port}"}
        if policy == "xgboost":
            return node | {"DMLC_TRACKER_URI": LOCALHOST, "DMLC_TRACKER_PORT": str(port), "DMLC_TASK_ID": str(rank),
                           "DMLC_NUM_WORKER": str(world)}
        # One process per node: what torchrun would give it too (several: torchrun gives them).
        ranked = _torch(rank, world, port) if nproc == "1" else {}
        return node | ranked | {
            "PET_NNODES": str(world), "PET_NPROC_PER_NODE": nproc, "PET_NODE_RANK": str(rank),
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


def _mpi(manifest: dict, replicas: list[tuple[ReplicaGroup, int]], config_dir: Path) -> dict[str, str]:
    """mpi-operator's hostfile, every host here: ``slotsPerWorker`` for each worker (and for the
    launcher under ``runLauncherAsWorker``)."""
    spec = manifest.get("spec") or {}
    hosts = sum(1 for g, _ in replicas if g.type == "worker") + (1 if spec.get("runLauncherAsWorker") else 0)
    per_host = int(spec.get("slotsPerWorker") or 1)
    hostfile = config_dir / "hostfile"
    hostfile.write_text(f"localhost slots={hosts * per_host}\n")
    return {
        "OMPI_MCA_orte_default_hostfile": str(hostfile),
        "OMPI_MCA_hwloc_base_binding_policy": "none",
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    }
