"""Time-to-accuracy training of a CNN, logged the MLPerf Training way (``:::MLLOG`` lines).

    python -m kubebench.workloads.mlperf_cnn [--target-accuracy 0.8] [--data mlperf-synthetic] …

Trains on a dataset folder (created under ``$KUBEBENCH_DATA_ROOT`` when missing: a learnable
synthetic set, see ``kubebench.workloads.data``), evaluates after every epoch, and stops at the
target accuracy (``run_stop`` status ``success``) or after ``--max-epochs`` (``aborted``). Rank 0
logs every event MLPerf Training's rules ask for (submission fields, ``cache_clear``, ``init_*``,
``run_*``, ``epoch_*``, ``eval_*``, ``eval_accuracy``, hyper-parameters), so the log passes
``python -m mlperf_logging.compliance_checker --ruleset 4.0.0`` (open division, benchmark
``resnet``: the checker validates the log's form; this is not an MLPerf submission). kubebench's
``mllog`` post-processor turns it into ``time_to_train`` and ``time_to_accuracy``.
Distributed like ``kubebench.workloads.cnn``: torch.distributed from a PyTorchJob/TrainJob, or MPI.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

import kubebench

from . import data as datasets
from .distributed import MODES, Group, MpiGradients, setup
from .measure import params_digest, report_replicas
from .mllog import MLLogger
from .models import build_model
from .options import MODELS


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line (argparse exits 2 with one line on error)."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.mlperf_cnn", description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=MODELS, default="small")
    p.add_argument("--target-accuracy", type=float, default=0.8)
    p.add_argument("--max-epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="per replica")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--data", default="mlperf-synthetic", help="dataset folder (absolute or under $KUBEBENCH_DATA_ROOT)")
    p.add_argument("--samples", type=int, default=2048, help="training samples of a dataset created here")
    p.add_argument("--val-samples", type=int, default=512)
    p.add_argument("--image-size", type=int, default=16)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dist", choices=MODES, default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--benchmark", default="resnet", help="MLPerf benchmark name the log declares")
    p.add_argument("--org", default="kubebench")
    p.add_argument("--platform", default="cpu")
    args = p.parse_args(argv)
    if not 0 < args.target_accuracy <= 1 or args.max_epochs < 1 or args.batch_size < 1:
        p.error("--target-accuracy must be in (0, 1]; --max-epochs and --batch-size positive")
    return args


def log_submission(log: MLLogger, args: argparse.Namespace, group: Group, train: int, val: int) -> None:
    """The fixed facts of the run, logged between init_start and init_stop as the rules require."""
    for key, value in (("submission_benchmark", args.benchmark), ("submission_org", args.org),
                       ("submission_division", "open"), ("submission_status", "research"),
                       ("submission_platform", args.platform)):
        log.event(key, value)
    for key, value in (("global_batch_size", args.batch_size * group.world_size), ("gradient_accumulation_steps", 1),
                       ("seed", args.seed), ("opt_name", "sgd"), ("opt_base_learning_rate", args.lr),
                       ("train_samples", train), ("eval_samples", val)):
        log.event(key, value)


def to_tensors(pixels: np.ndarray, labels: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 NHWC pixels → normalized float NCHW on ``device``."""
    images = torch.from_numpy(datasets.normalize(pixels)).permute(0, 3, 1, 2).contiguous()
    return images.to(device), torch.from_numpy(labels).to(device)


def evaluate(model: nn.Module, val: datasets.Shard, group: Group) -> float:
    """Top-1 accuracy on the whole validation split; each replica scores every world-th sample."""
    model.eval()
    correct = 0
    mine = np.arange(group.rank, len(val), group.world_size)
    with torch.inference_mode():
        for chunk in np.array_split(mine, max(1, len(mine) // val.batch_size)):
            images, labels = to_tensors(np.asarray(val.images[chunk]), np.asarray(val.labels[chunk]), group.device)
            correct += int((model(images).argmax(1) == labels).sum())
    model.train()
    return group.allreduce(float(correct)) / len(val)


def train_epoch(model: nn.Module, step: Callable[..., None], train: datasets.Shard, epoch: int, group: Group) -> None:
    """One pass over this replica's shard of the training split."""
    steps = train.steps_per_epoch()
    for i in range(steps):
        pixels, labels = train.batch(epoch * steps + i)
        step(*to_tensors(pixels, labels, group.device))


def make_step(args: argparse.Namespace, model: nn.Module, group: Group):
    """An SGD step with the replicas' gradients averaged (DDP does it itself; MPI explicitly)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    mpi = MpiGradients(model, group.comm) if group.mode == "mpi" else None

    def step(images: torch.Tensor, labels: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels).backward()
        if mpi:
            mpi.average()
        optimizer.step()

    return step


def main(argv: list[str] | None = None) -> None:
    """Initialise (logged as init), train until the target accuracy (logged as the run)."""
    args = parse_args(argv)
    group = setup(args.dist, args.threads)
    log = MLLogger(enabled=group.rank == 0)
    log.event("cache_clear", True)
    log.start("init_start")
    folder = datasets.make_dataset(datasets.resolve(args.data), args.samples, args.val_samples, args.image_size,
                                   3, args.num_classes)
    train = datasets.open_split(folder, "train", args.batch_size, group.rank, group.world_size)
    val = datasets.open_split(folder, "val", args.batch_size)
    log_submission(log, args, group, len(train), len(val))
    torch.manual_seed(args.seed)
    net = build_model(args.model, 3, args.num_classes).to(group.device)
    model = nn.parallel.DistributedDataParallel(net) if group.mode == "torch" else net
    step = make_step(args, model, group)
    log.end("init_stop")
    log.start("run_start")
    kubebench.mark("first_step")
    status, accuracy, epoch = "aborted", 0.0, 0
    try:
        for epoch in range(1, args.max_epochs + 1):
            log.start("epoch_start", metadata={"epoch_num": epoch})
            train_epoch(model, step, train, epoch - 1, group)
            log.end("epoch_stop", metadata={"epoch_num": epoch})
            log.start("eval_start", metadata={"epoch_num": epoch})
            accuracy = evaluate(net, val, group)  # the bare module: no DDP collectives in eval
            log.event("eval_accuracy", accuracy, metadata={"epoch_num": epoch})
            log.end("eval_stop", metadata={"epoch_num": epoch})
            if accuracy >= args.target_accuracy:
                status = "success"
                break
        log.end("run_stop", metadata={"status": status})
        kubebench.mark("last_step")
        if group.rank == 0:
            print(f"mlperf_cnn: {status} after {epoch} epochs, eval accuracy {accuracy:.4f} "
                  f"(target {args.target_accuracy})", flush=True)
        report_replicas(group.rank, group.world_size, group.comm, params_digest(
            p.detach().to("cpu", torch.float32).numpy().tobytes() for p in net.parameters()))
    except BaseException:
        group.close()
        raise
    group.end()


if __name__ == "__main__":
    main()
