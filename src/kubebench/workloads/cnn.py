"""CNN training (or inference) throughput benchmark, in the spirit of tf_cnn_benchmarks.

Run as ``python -m kubebench.workloads.cnn [--model small|resnet18|resnet50] [--batch-size N] …``.
With ``WORLD_SIZE`` > 1 it joins a ``torch.distributed`` group from the environment a PyTorchJob or
TrainJob gives it (DDP over gloo on CPU, NCCL on GPU); started by ``mpirun`` with several ranks (an
MPIJob), it averages gradients over MPI with mpi4py instead.

Rank 0 prints ``images/sec: <global rate>`` (summed over replicas) and a ``KUBEBENCH_METRIC`` line
with ``images_per_sec``, ``step_time_p50/p90/p99`` (seconds, measured steps only) and
``peak_memory_bytes`` (largest over replicas: CUDA allocations, or the process's peak RSS on CPU),
and writes every step's time, warm-up included, to ``$KUBEBENCH_EXP_OUTPUT_PATH/step_times.json``.

``--data`` naming an image folder (``<class>/<image>.jpg``, see ``workloads.images``) reads real
files: a DataLoader with ``--loader-workers`` processes decodes the JPEGs, and the metrics add
``data_wait_fraction`` (the share of the measured steps' time spent waiting for a batch, largest over
replicas) and ``data_wait_p50`` (seconds).
Every rank ends with ``rank R of N: params_sha256=… own_rate=…`` (see ``measure.report_replicas``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch
from torch import nn

import kubebench

from . import data as datasets, images as image_files
from .distributed import MODES, Group, MpiGradients, setup
from .measure import (
    params_digest,
    peak_rss_bytes,
    percentile,
    print_header,
    report_replicas,
    report_throughput,
    write_step_times,
)
from .models import autocast, build_model, compiled, prepare
from .options import AMP_MODES, MODELS, non_negative, positive, positive_float

Batch = tuple[torch.Tensor, torch.Tensor]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; argparse exits with status 2 and one line on error."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.cnn", description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, default="small")
    p.add_argument("--batch-size", type=positive, default=32, help="images per step per replica")
    p.add_argument("--steps", type=positive, default=20, help="measured steps")
    p.add_argument("--warmup-steps", type=non_negative, default=5, help="steps run before measuring (not reported)")
    p.add_argument("--data", default=datasets.SYNTHETIC,
                   help="'synthetic', or a dataset folder (absolute or under $KUBEBENCH_DATA_ROOT): .npy "
                        "arrays, or an image folder (<class>/<image>.jpg)")
    p.add_argument("--loader-workers", type=non_negative, default=0,
                   help="image folder: DataLoader worker processes decoding images (0: the training process)")
    p.add_argument("--image-size", type=positive, default=32, help="height and width of synthetic images")
    p.add_argument("--channels", type=positive, default=3, help="input image channels")
    p.add_argument("--num-classes", type=positive, default=10)
    p.add_argument("--width", type=positive, default=16, help="channels of the small CNN's first block")
    p.add_argument("--lr", type=positive_float, default=0.01, help="SGD learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--channels-last", action="store_true", help="NHWC memory layout")
    p.add_argument("--amp", choices=AMP_MODES, default="none", help="automatic mixed precision")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (compiles during warm-up)")
    p.add_argument("--forward-only", action="store_true", help="inference: forward passes only, no training")
    p.add_argument("--dist", choices=MODES, default="auto", help="how replicas communicate (auto: from the launcher)")
    p.add_argument("--threads", type=non_negative, default=0, help="CPU threads (0: the CPUs / local replicas)")
    return p.parse_args(argv)


def input_batches(args: argparse.Namespace, group: Group, memory_format: torch.memory_format) -> Callable[[int], Batch]:
    """``batch(step)`` for this replica: one fixed synthetic batch, or its shard of a dataset on disk."""
    if args.data == datasets.SYNTHETIC:
        gen = torch.Generator().manual_seed(args.seed + group.rank)  # each replica sees different data
        images = torch.randn(args.batch_size, args.channels, args.image_size, args.image_size, generator=gen)
        labels = torch.randint(0, args.num_classes, (args.batch_size,), generator=gen)
        fixed = (images.to(group.device, memory_format=memory_format), labels.to(group.device))
        return lambda _step: fixed
    folder = datasets.resolve(args.data)
    if not (folder / "train_images.npy").exists() and image_files.image_root(folder) is not None:
        loader = image_files.open_loader(folder, args.batch_size, args.image_size, args.channels,
                                         args.num_classes, args.loader_workers, group.rank, group.world_size, args.seed)
        return ImageBatches(loader, group.device, memory_format)
    shard = datasets.open_split(folder, "train", args.batch_size, group.rank, group.world_size)

    def batch(step: int) -> Batch:
        # Loading and converting is part of the step, as in a real input pipeline.
        pixels, labels = shard.batch(step)
        images = torch.from_numpy(pixels).to(group.device).permute(0, 3, 1, 2).float().mul_(2 / 255).sub_(1)
        return images.contiguous(memory_format=memory_format), torch.from_numpy(labels).to(group.device)

    return batch


class ImageBatches:
    """Batches of an image folder's DataLoader on the replica's device; ``waits``: each one's wait."""

    def __init__(self, loader: image_files.LoaderBatches, device: torch.device, memory_format: torch.memory_format) -> None:
        self.loader, self.device, self.memory_format = loader, device, memory_format

    @property
    def waits(self) -> list[float]:
        """Seconds each step waited for its batch."""
        return self.loader.waits

    def __call__(self, step: int) -> Batch:
        pixels, labels = self.loader(step)
        batch = pixels.to(self.device).float().mul_(2 / 255).sub_(1)
        return batch.contiguous(memory_format=self.memory_format), labels.to(self.device)


def data_wait(waits: list[float], measured: list[float]) -> dict[str, float]:
    """Share of the measured steps' time spent waiting for their batches, and the median wait."""
    return {"data_wait_fraction": sum(waits) / sum(measured), "data_wait_p50": percentile(waits, 50)}


def make_step(args: argparse.Namespace, model: nn.Module, group: Group) -> Callable[[Batch], None]:
    """One training step (forward, backward, gradient exchange, SGD update) or one forward pass."""
    amp = autocast(group.device, args.amp)
    if args.forward_only:
        model.eval()

        def infer(batch: Batch) -> None:
            with torch.inference_mode(), amp():
                model(batch[0])

        return infer
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    mpi = MpiGradients(model, group.comm) if group.mode == "mpi" else None
    # fp16 gradients underflow without loss scaling; bf16 has fp32's range and needs none.
    scaler = torch.amp.GradScaler(group.device.type) if args.amp == "fp16" else None

    def train(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        with amp():
            loss = loss_fn(model(batch[0]), batch[1])
        if scaler is None:
            loss.backward()
            if mpi:
                mpi.average()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            if mpi:
                mpi.average()
            scaler.step(optimizer)
            scaler.update()

    return train


def timed_steps(step: Callable[[Batch], None], batches: Callable[[int], Batch], count: int,
                device: torch.device) -> tuple[list[float], list[float]]:
    """Run ``count`` steps; return each one's wall seconds (input loading included) and this
    process's CPU seconds in it (all threads: tells slow compute from a CPU taken by others).
    """
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times, cpu = [], []
    kubebench.mark("first_step")
    for i in range(count):
        start, cpu_start = time.perf_counter(), time.process_time()
        step(batches(i))
        sync()  # CUDA runs asynchronously: without this we would time the launch, not the step
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    kubebench.mark("last_step")
    return times, cpu


def build(args: argparse.Namespace, group: Group, memory_format: torch.memory_format) -> nn.Module:
    """The model on its device, wrapped for DDP when training under torch.distributed, then compiled."""
    model = prepare(build_model(args.model, args.channels, args.num_classes, args.width), group.device, args.channels_last)
    if group.mode == "torch" and not args.forward_only:
        ids = [group.device.index] if group.device.type == "cuda" else None
        model = nn.parallel.DistributedDataParallel(model, device_ids=ids)
    return compiled(model, args.compile)


def describe(args: argparse.Namespace, group: Group, images: bool = False) -> None:
    """The start-up banner (tf_cnn_benchmarks' field names, which old post-processors look for);
    ``images``: the input is an image folder read by a DataLoader."""
    print(f"cnn: batch_size={args.batch_size} per replica, world_size={group.world_size}, "
          f"device={group.device}, threads={torch.get_num_threads()}", flush=True)
    print_header({
        "Model": args.model,
        "Dataset": args.data,
        **({"Loader workers": args.loader_workers} if images else {}),
        "Mode": "forward-only" if args.forward_only else "training",
        "Batch size": f"{args.batch_size * group.world_size} global, {args.batch_size} per device",
        "Num batches": args.steps,
        "Data format": "NHWC" if args.channels_last else "NCHW",
        "Precision": args.amp if args.amp != "none" else "fp32",
        "Compiled": "yes" if args.compile else "no",
        "Sync": group.mode,
    })


def peak_memory(device: torch.device) -> int:
    """Peak bytes of this replica: CUDA allocator peak on a GPU, process peak RSS on CPU."""
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else peak_rss_bytes()


def run(args: argparse.Namespace, group: Group) -> None:
    """Build, run the steps, and report the benchmark's numbers from rank 0."""
    memory_format = torch.channels_last if args.channels_last else torch.contiguous_format
    model = build(args, group, memory_format)
    try:
        batches = input_batches(args, group, memory_format)
    except (OSError, ValueError) as e:
        sys.exit(f"cnn: {e}")  # a missing or malformed dataset: one line, not a traceback
    if group.rank == 0:
        describe(args, group, isinstance(batches, ImageBatches))
    times, cpu = timed_steps(make_step(args, model, group), batches, args.warmup_steps + args.steps, group.device)
    measured = times[args.warmup_steps:]
    own_rate = args.batch_size * len(measured) / sum(measured)
    rate = group.allreduce(own_rate)
    peak = group.allreduce(float(peak_memory(group.device)), op="max")
    extra = {"peak_memory_bytes": peak}
    if isinstance(batches, ImageBatches):  # the slowest replica's wait holds the others back
        waits = data_wait(batches.waits[args.warmup_steps:], measured)
        extra |= {name: group.allreduce(value, op="max") for name, value in waits.items()}
    if group.rank == 0:
        report_throughput(rate, measured, extra)
        write_step_times(args.warmup_steps, args.batch_size, group.world_size, times, cpu_seconds=cpu)
    report_replicas(group.rank, group.world_size, group.comm, params_digest(
        p.detach().to("cpu", torch.float32).numpy().tobytes() for p in model.parameters()), own_rate)


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments, join the peers, run, and leave the group in order."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP and MPI broadcast rank 0's anyway)
    group = setup(args.dist, args.threads)
    try:
        run(args, group)
    except BaseException:
        group.close()
        raise
    group.end()


if __name__ == "__main__":
    main()
