"""How a JAX or XGBoost workload finds its peers: from the environment that each operator gives its
pods, read here without importing a framework (a bad environment fails before JAX or XGBoost loads).

- JAX: Kubeflow Trainer's ``jax`` plugin (a TrainJob on ``jax-distributed``) gives
  ``JAX_COORDINATOR_ADDRESS`` (``host:port``), ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID``;
  training-operator v1's JAXJob gives ``COORDINATOR_ADDRESS`` and ``COORDINATOR_PORT`` apart,
  ``NUM_PROCESSES`` and ``PROCESS_ID``.
- XGBoost: Trainer's ``xgboost`` plugin (``xgboost-distributed``) gives ``DMLC_TRACKER_URI``,
  ``DMLC_TRACKER_PORT``, ``DMLC_TASK_ID`` and ``DMLC_NUM_WORKER``; training-operator v1's XGBoostJob
  gives ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK`` and ``WORLD_SIZE`` (the tracker runs on the master).

The local backend gives each replica the same variables, with addresses on loopback.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

#: (where the variables come from, address, port or None when the address holds it, size, rank)
_JAX = (("TrainJob (jax-distributed)", "JAX_COORDINATOR_ADDRESS", None, "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"),
        ("JAXJob", "COORDINATOR_ADDRESS", "COORDINATOR_PORT", "NUM_PROCESSES", "PROCESS_ID"))
_XGBOOST = (("TrainJob (xgboost-distributed)", "DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_NUM_WORKER", "DMLC_TASK_ID"),
            ("XGBoostJob", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK"))


class PeersError(ValueError):
    """The environment names a group of processes but not all of it (or not as numbers)."""


@dataclass(frozen=True)
class Peers:
    """This process's place in its job: rank ``rank`` of ``world_size``, the group's rendezvous at
    ``host``:``port`` (rank 0's coordinator or tracker), and how many of the job's processes share this
    machine (``LOCAL_WORLD_SIZE``; without it, all of them: the worst case)."""

    rank: int = 0
    world_size: int = 1
    host: str = ""
    port: int = 0
    source: str = "none"
    local_world: int = 1

    @property
    def address(self) -> str:
        """``host:port`` (brackets around an IPv6 host)."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def jax_peers(env: Mapping[str, str] | None = None) -> Peers:
    """The JAX processes of this job, from a TrainJob's or a JAXJob's variables; one alone without."""
    return _peers(os.environ if env is None else env, _JAX)


def xgboost_peers(env: Mapping[str, str] | None = None) -> Peers:
    """The XGBoost workers of this job, from a TrainJob's or an XGBoostJob's variables; one alone without."""
    return _peers(os.environ if env is None else env, _XGBOOST)


def _peers(env: Mapping[str, str], sources: tuple[tuple[str, str, str | None, str, str], ...]) -> Peers:
    for source, address, port, size, rank in sources:
        names = [n for n in (address, port, size, rank) if n is not None]
        present = [n for n in names if env.get(n)]
        if not present:
            continue
        if len(present) < len(names):
            missing = ", ".join(n for n in names if n not in present)
            raise PeersError(f"{', '.join(present)} set ({source}) but not {missing}")
        host, port_text = (env[address], env[port]) if port else _split(env[address], address)
        world, me = _number(env, size), _number(env, rank)
        if not 0 <= me < world:
            raise PeersError(f"{rank}={me} is not a rank of {size}={world}")
        local = int(env["LOCAL_WORLD_SIZE"]) if env.get("LOCAL_WORLD_SIZE", "").isdigit() else world
        return Peers(me, world, host, _port(port_text, port or address), source, max(1, local))
    return Peers()


def _split(address: str, name: str) -> tuple[str, str]:
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        raise PeersError(f"{name}={address!r} is not host:port")
    return host.strip("[]"), port


def _number(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except ValueError:
        raise PeersError(f"{name}={env[name]!r} is not a whole number") from None


def _port(text: str, name: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise PeersError(f"{name}: {text!r} is not a port")
    return int(text)
