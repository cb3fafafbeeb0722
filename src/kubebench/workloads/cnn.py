"""Synthetic-data CNN training benchmark, in the spirit of tf_cnn_benchmarks.

Run as ``python -m kubebench.workloads.cnn [--batch-size N] [--steps N] ...``. With ``WORLD_SIZE`` > 1
it joins a ``torch.distributed`` group from the environment a launcher (Kubeflow's PyTorchJob
operator, kubebench's local backend) sets: ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``.

Rank 0 prints ``images/sec: <global rate>`` and a ``KUBEBENCH_METRIC`` line with ``images_per_sec``,
``step_time_p50`` and ``step_time_p90`` (seconds, measured steps only), and writes every step's time
to ``$KUBEBENCH_EXP_OUTPUT_PATH/step_times.json`` when that variable is set.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

import kubebench

# Rendezvous and collective timeout: a hung peer fails the run instead of holding it for 30 minutes.
_INIT_TIMEOUT_S = 600


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or a positive integer, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; argparse exits with status 2 and one line on error."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.cnn", description=__doc__.splitlines()[0])
    p.add_argument("--batch-size", type=_positive, default=32, help="images per step per replica")
    p.add_argument("--steps", type=_positive, default=20, help="measured training steps")
    p.add_argument("--warmup-steps", type=_non_negative, default=5, help="untimed steps before measuring")
    p.add_argument("--image-size", type=_positive, default=32, help="height and width of the images")
    p.add_argument("--channels", type=_positive, default=3, help="input image channels")
    p.add_argument("--num-classes", type=_positive, default=10)
    p.add_argument("--width", type=_positive, default=16, help="channels of the first conv block")
    p.add_argument("--lr", type=_positive_float, default=0.01, help="SGD learning rate")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def build_model(channels: int, width: int, num_classes: int) -> nn.Module:
    """Three conv+BN+ReLU blocks (the last two halve the resolution), global pool, linear head."""

    def block(cin: int, cout: int, stride: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    return nn.Sequential(
        *block(channels, width, 1),
        *block(width, 2 * width, 2),
        *block(2 * width, 4 * width, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4 * width, num_classes),
    )


def available_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 quota (a pod's CPU limit)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 limit visible: the affinity mask is all we know
    return cpus


def setup_distributed() -> tuple[int, int, torch.device]:
    """Join the process group when WORLD_SIZE > 1; return (rank, world size, device)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank % torch.cuda.device_count()) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    else:
        # Replicas sharing a machine would otherwise each start one thread per core and thrash;
        # without LOCAL_WORLD_SIZE, assume the worst case: all replicas on this machine.
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        torch.set_num_threads(max(1, available_cpus() // max(1, local_world)))
    if world_size <= 1:
        return 0, 1, device
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "RANK") if v not in os.environ]
    if missing:
        sys.exit(f"cnn: WORLD_SIZE={world_size} but {', '.join(missing)} not set in the environment")
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(seconds=_INIT_TIMEOUT_S))
    return dist.get_rank(), dist.get_world_size(), device


def train(args: argparse.Namespace, model: nn.Module, device: torch.device, rank: int) -> list[float]:
    """Run warm-up plus measured SGD steps on one fixed synthetic batch; return every step's seconds."""
    gen = torch.Generator().manual_seed(args.seed + rank)  # each replica sees different data
    images = torch.randn(args.batch_size, args.channels, args.image_size, args.image_size, generator=gen)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), generator=gen)
    images, labels = images.to(device), labels.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    model.train()
    times = []
    for _ in range(args.warmup_steps + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels).backward()
        optimizer.step()
        sync()  # CUDA runs asynchronously: without this we would time the launch, not the step
        times.append(time.perf_counter() - start)
    return times


def percentile(values: list[float], q: float) -> float:
    """Linearly interpolated q-th percentile (0..100) of a non-empty list."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def global_rate(local_rate: float, world_size: int, device: torch.device) -> float:
    """Sum the replicas' images/sec; a single process just returns its own rate."""
    if world_size <= 1:
        return local_rate
    total = torch.tensor([local_rate], dtype=torch.float64, device=device)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    return float(total.item())


def write_step_times(args: argparse.Namespace, world_size: int, times: list[float]) -> None:
    """Save every step's time (warm-up first) for post-processors, when the run has an output folder."""
    out = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH")
    if not out:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    record = {
        "warmup_steps": args.warmup_steps,
        "batch_size": args.batch_size,
        "world_size": world_size,
        "items_per_step": args.batch_size * world_size,
        "step_seconds": times,
    }
    (Path(out) / "step_times.json").write_text(json.dumps(record, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments, train, and report the benchmark's numbers from rank 0."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP broadcasts rank 0's anyway)
    rank, world_size, device = setup_distributed()
    try:
        model = build_model(args.channels, args.width, args.num_classes).to(device)
        if world_size > 1:
            ids = [device.index] if device.type == "cuda" else None
            model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
        if rank == 0:
            print(f"cnn: batch_size={args.batch_size} per replica, world_size={world_size}, "
                  f"device={device}, threads={torch.get_num_threads()}", flush=True)
        times = train(args, model, device, rank)
        measured = times[args.warmup_steps:]
        rate = global_rate(args.batch_size * len(measured) / sum(measured), world_size, device)
        if rank == 0:
            print(f"images/sec: {rate:.1f}", flush=True)
            kubebench.report(images_per_sec=rate, step_time_p50=percentile(measured, 50),
                             step_time_p90=percentile(measured, 90))
            write_step_times(args, world_size, times)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
