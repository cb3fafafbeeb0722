"""One rank per device: a pod whose operator asks for several processes (``PET_NPROC_PER_NODE``, as
Trainer's torch plugin and training-operator v1's ``nprocPerNode`` give it) but whose command is not
torchrun starts them through torchrun itself."""

from __future__ import annotations

import sys

import pytest

from kubebench.workloads import distributed
from kubebench.workloads.distributed import processes_wanted, torchrun_argv

TRAINJOB_NODE = {"PET_NNODES": "2", "PET_NODE_RANK": "0", "PET_MASTER_ADDR": "kb-x-node-0-0.kb-x",
                 "PET_MASTER_PORT": "29400"}


@pytest.mark.parametrize(("given", "devices", "expected"), [
    ({"PET_NPROC_PER_NODE": "auto"}, 8, 8),  # Trainer: auto when the node asks for GPUs
    ({"PET_NPROC_PER_NODE": "auto"}, 0, 1),
    ({"PET_NPROC_PER_NODE": "gpu"}, 2, 2),
    ({"PET_NPROC_PER_NODE": "4"}, 8, 4),
    ({"PET_NPROC_PER_NODE": "cpu"}, 0, 6),  # torchrun's: one per CPU
    ({"PET_NPROC_PER_NODE": "xpu"}, 8, 1),  # not ours to guess
    ({}, 8, 1),
    ({"PET_NPROC_PER_NODE": "8", "TORCHELASTIC_RUN_ID": "none"}, 8, 1),  # a rank torchrun started
])
def test_the_ranks_a_pod_is_asked_for(given: dict, devices: int, expected: int) -> None:
    assert processes_wanted({**TRAINJOB_NODE, **given}, devices, cpus=6) == expected


def test_a_module_started_alone_is_started_again_by_torchrun(monkeypatch: pytest.MonkeyPatch) -> None:
    main = type(sys)("__main__")
    main.__spec__ = type("Spec", (), {"name": "kubebench.workloads.cnn"})()
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", ["/x/cnn.py", "--steps", "3"])
    assert torchrun_argv(8) == [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=8",
                                "-m", "kubebench.workloads.cnn", "--steps", "3"]


def test_a_trainjob_node_of_eight_gpus_becomes_eight_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The review's case: Trainer gave ``PET_NPROC_PER_NODE=auto`` to a node of 8 GPUs, whose command
    runs the workload directly; it used to form a group of one process per node on ``cuda:0``."""
    for name, value in {**TRAINJOB_NODE, "PET_NPROC_PER_NODE": "auto"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    monkeypatch.setattr(distributed.torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(distributed.torch.cuda, "device_count", lambda: 8)
    started: list[list[str]] = []
    monkeypatch.setattr(distributed.os, "execv", lambda path, argv: started.append(argv))
    distributed._one_rank_per_device()
    (argv,) = started
    assert argv[1:4] == ["-m", "torch.distributed.run", "--nproc-per-node=8"]
