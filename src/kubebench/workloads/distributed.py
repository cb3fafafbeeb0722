"""How a PyTorch workload finds its peers: ``torch.distributed`` from the environment of a PyTorchJob or
of ``torchrun`` (``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``), from Kubeflow Trainer's
``PET_*`` variables when a TrainJob node starts it directly (Trainer gives only torchrun's arguments:
with one process per node, rank ``PET_NODE_RANK`` of ``PET_NNODES``), or MPI when started by ``mpirun``
(an MPIJob's launcher), through mpi4py: gradients are averaged Horovod-style, with one fused
``MPI_Allreduce`` per step.

One rank per device: a pod whose operator asks for several processes (``PET_NPROC_PER_NODE``: a
number, or ``auto`` with several GPUs) but that was not started by torchrun starts them through
torchrun itself; each rank uses the GPU ``cuda:LOCAL_RANK``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

import kubebench

from .options import available_cpus

# Rendezvous and collective timeout: a hung peer fails the run instead of holding it for 30 minutes.
INIT_TIMEOUT_S = 600
MODES = ("auto", "none", "torch", "mpi")
# Rank variables of the MPI launchers: Open MPI, then MPICH / Intel MPI (Hydra's PMI).
_MPI_SIZE = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
_MPI_LOCAL_SIZE = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")
_MPI_LOCAL_RANK = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


@dataclass
class Group:
    """This replica's place in the job: rank, size, device, and the MPI communicator if any."""

    rank: int
    world_size: int
    device: torch.device
    mode: str  # none | torch | mpi
    comm: Any = None

    def allreduce(self, value: float, op: str = "sum") -> float:
        """``value`` summed (or maxed) over all replicas; a lone replica returns it unchanged."""
        if self.mode == "torch":
            tensor = torch.tensor([value], dtype=torch.float64, device=self.device)
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX)
            return float(tensor.item())
        if self.mode == "mpi":
            from mpi4py import MPI

            return float(self.comm.allreduce(value, op=MPI.SUM if op == "sum" else MPI.MAX))
        return value

    def close(self) -> None:
        """Leave the process group after a failure (no barrier: a peer may be gone already)."""
        if dist.is_initialized():
            dist.destroy_process_group()

    def end(self) -> None:
        """End a run that completed on this rank, in order: wait until every rank has finished
        talking, then leave. Under ``torch.distributed`` the process then exits at once, with
        status 0, and this never returns.

        Why exit at once: PyTorch's DDP reducer keeps its process group alive after
        ``destroy_process_group()``, so gloo's worker and transport threads outlive it (see
        ``tests/workloads/test_teardown.py``). A C++ thread that takes the GIL while the interpreter
        finalises is ended with ``pthread_exit``, which aborts the process ("terminate called without an
        active exception", exit 134) after the run's numbers were printed. With every output flushed
        and every peer past the barrier, ending the process is the orderly end; MPI ranks instead
        finalise normally (mpirun expects ``MPI_Finalize``), after the same barrier.
        """
        if self.mode == "mpi":
            self.comm.Barrier()
            return
        if self.mode != "torch" or not dist.is_initialized():
            return
        dist.barrier()
        dist.destroy_process_group()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _first(names: tuple[str, ...], default: str) -> str:
    return next((os.environ[n] for n in names if n in os.environ), default)


def _trainer_nodes() -> int:
    """Nodes of a Kubeflow Trainer TrainJob whose node was started without torchrun (no WORLD_SIZE):
    Trainer's torch plugin gives only ``PET_*``, torchrun's arguments (``torch.go``)."""
    if "WORLD_SIZE" in os.environ or "PET_NNODES" not in os.environ:
        return 0
    nodes = os.environ["PET_NNODES"]
    if not nodes.isdigit():  # elastic "min:max": only torchrun's rendezvous can form that group
        sys.exit(f"PET_NNODES={nodes} (elastic): start the workload through torchrun")
    return int(nodes)


def detect_mode(mode: str) -> str:
    """``auto``: torch when a PyTorch launcher set WORLD_SIZE > 1 (or a TrainJob has PET_NNODES > 1),
    MPI under mpirun with > 1 rank."""
    if mode != "auto":
        return mode
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 or _trainer_nodes() > 1:
        return "torch"
    if int(_first(_MPI_SIZE, "1")) > 1:
        return "mpi"
    return "none"


def _local_placement(mode: str) -> tuple[int, int]:
    """(local rank, replicas on this machine)."""
    if mode == "mpi":
        size = int(_first(_MPI_SIZE, "1"))
        return int(_first(_MPI_LOCAL_RANK, "0")), int(_first(_MPI_LOCAL_SIZE, str(size)))
    if _trainer_nodes():
        return 0, 1  # a TrainJob node without torchrun: one process on this node
    world = int(os.environ.get("WORLD_SIZE", "1"))
    # Without LOCAL_WORLD_SIZE assume the worst case: all replicas on this machine.
    return int(os.environ.get("LOCAL_RANK", "0")), int(os.environ.get("LOCAL_WORLD_SIZE", world))


def processes_wanted(env: Mapping[str, str], devices: int, cpus: int) -> int:
    """The ranks this pod's operator asks for (``PET_NPROC_PER_NODE``, torchrun's
    ``--nproc-per-node``, as training-operator v1's ``nprocPerNode`` and Trainer's torch plugin give
    it) when this process was not started by torchrun: a number, ``auto`` or ``gpu`` one per GPU
    (``devices``; at least one), ``cpu`` one per CPU; 1 under torchrun (it started them) or without."""
    value = env.get("PET_NPROC_PER_NODE", "")
    if "TORCHELASTIC_RUN_ID" in env or not value:
        return 1
    if value.isdigit():
        return max(1, int(value))
    return {"auto": max(1, devices), "gpu": max(1, devices), "cpu": max(1, cpus)}.get(value, 1)


def torchrun_argv(processes: int) -> list[str]:
    """This program's command line again, started ``processes`` times by torchrun (which reads the
    nodes, this node's rank and rank 0's address from the ``PET_*`` variables)."""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    target = ["-m", spec.name] if spec is not None and spec.name else [sys.argv[0]]
    return [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={processes}", *target, *sys.argv[1:]]


def _one_rank_per_device() -> None:
    """Replace this process by torchrun's ranks when its pod asks for several (see
    :func:`processes_wanted`): a TrainJob node or a PyTorchJob replica whose command is not torchrun."""
    devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    wanted = processes_wanted(os.environ, devices, available_cpus())
    if wanted > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        argv = torchrun_argv(wanted)
        os.execv(argv[0], argv)


def setup(mode: str = "auto", threads: int = 0) -> Group:
    """Pick the device, size the CPU thread pool, and join the peers of ``mode`` (see ``MODES``).

    Marks ``imports_done`` on the way in and ``rendezvous_done`` once every rank is known to be in
    the group (at once without peers): the run's ``imports_seconds`` and ``rendezvous_seconds``
    (``kubebench.mark``). The group is known to work after a first collective, a barrier: NCCL makes
    its communicator only then, so ``init_process_group`` returning says little on a GPU."""
    if mode in ("auto", "torch"):
        _one_rank_per_device()
    kubebench.mark("imports_done")
    group = _join(mode, threads)
    if group.mode == "torch":
        dist.barrier()
    elif group.mode == "mpi":
        group.comm.Barrier()
    kubebench.mark("rendezvous_done")
    return group


def _join(mode: str, threads: int) -> Group:
    mode = detect_mode(mode)
    local_rank, local_world = _local_placement(mode)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    # Replicas sharing a machine would otherwise each start one thread per core and thrash.
    torch.set_num_threads(threads or max(1, available_cpus() // max(1, local_world)))
    if mode == "torch" and _trainer_nodes():
        return _join_trainer_nodes("nccl" if cuda else "gloo", device)
    if mode == "torch":
        missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK") if v not in os.environ]
        if missing:
            sys.exit(f"WORLD_SIZE={os.environ.get('WORLD_SIZE')} but {', '.join(missing)} not set in the environment")
        dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(seconds=INIT_TIMEOUT_S))
        return Group(dist.get_rank(), dist.get_world_size(), device, mode)
    if mode == "mpi":
        try:
            from mpi4py import MPI
        except ImportError:
            sys.exit("started by mpirun but mpi4py is not installed: pip install 'kubebench[mpi]'")
        comm = MPI.COMM_WORLD
        return Group(comm.Get_rank(), comm.Get_size(), device, mode, comm)
    return Group(0, 1, device, "none")


def _join_trainer_nodes(backend: str, device: torch.device) -> Group:
    """The process group of a TrainJob's nodes from ``PET_MASTER_ADDR``/``PORT``, ``PET_NODE_RANK``."""
    missing = [v for v in ("PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NODE_RANK") if v not in os.environ]
    if missing:
        sys.exit(f"PET_NNODES={os.environ['PET_NNODES']} but {', '.join(missing)} not set in the environment")
    address = f"tcp://{os.environ['PET_MASTER_ADDR']}:{os.environ['PET_MASTER_PORT']}"
    dist.init_process_group(backend, init_method=address, rank=int(os.environ["PET_NODE_RANK"]),
                            world_size=_trainer_nodes(), timeout=timedelta(seconds=INIT_TIMEOUT_S))
    return Group(dist.get_rank(), dist.get_world_size(), device, "torch")


class MpiGradients:
    """Horovod-style data parallelism over MPI: the gradients of all parameters are packed into one
    buffer, summed with a single ``MPI_Allreduce`` and divided by the number of ranks.
    """

    def __init__(self, model: nn.Module, comm: Any) -> None:
        self.comm = comm
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.buffer = torch.zeros(sum(p.numel() for p in self.params), dtype=torch.float32)
        # Start from rank 0's weights, as DDP does (the ranks' seeds should agree anyway).
        for p in model.state_dict().values():
            if p.is_floating_point():
                host = p.detach().to("cpu", torch.float32).contiguous()
                comm.Bcast(host.numpy(), root=0)
                p.copy_(host)

    def average(self) -> None:
        """Replace every parameter's gradient by its mean over the ranks."""
        from mpi4py import MPI

        offset = 0
        for p in self.params:
            n = p.numel()
            if p.grad is None:
                self.buffer[offset:offset + n].zero_()
            else:
                self.buffer[offset:offset + n].copy_(p.grad.reshape(-1))
            offset += n
        self.comm.Allreduce(MPI.IN_PLACE, self.buffer.numpy(), op=MPI.SUM)
        self.buffer.div_(self.comm.Get_size())
        offset = 0
        for p in self.params:
            n = p.numel()
            if p.grad is not None:
                p.grad.copy_(self.buffer[offset:offset + n].view_as(p.grad))
            offset += n
