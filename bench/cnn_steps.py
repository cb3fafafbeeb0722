"""The CNN workload's training step against the bare loop's, interleaved step by step in one process.

Two copies of the same model (same seed, same batch): one trained by the workload's own code
(``kubebench.workloads.cnn``: its thread setup, model build, input batches and step function), one
by the bare loop's three lines (zero_grad, forward + loss + backward, SGD step). Their steps
alternate (the order flips every step), so that both see the same machine from one tenth of a
second to the next: a noisy machine, whose speed swings by tens of percent within seconds, cancels
out, and what remains is what the workload's code does differently. Prints the median of the neighbouring
steps' time ratios (workload / bare; above 1: the workload is slower) with a bootstrap 95% CI.

    .venv/bin/python bench/cnn_steps.py [--model small] [--batch-size 64] [--steps 200] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

from kubebench.workloads import cnn
from kubebench.workloads.distributed import setup
from kubebench.workloads.models import build_model


def bare_step(model_name: str, batch: int, size: int):
    torch.manual_seed(0)
    model = build_model(model_name, 3, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    images, labels = torch.randn(batch, 3, size, size), torch.randint(0, 10, (batch,))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(images), labels).backward()
        optimizer.step()

    return step


def workload_step(argv: list[str]):
    args = cnn.parse_args(argv)
    torch.manual_seed(args.seed)
    group = setup(args.dist, args.threads)
    model = cnn.build(args, group, torch.contiguous_format)
    batches = cnn.input_batches(args, group, torch.contiguous_format)
    train = cnn.make_step(args, model, group)
    return lambda: train(batches(0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    workload = workload_step(["--model", args.model, "--batch-size", str(args.batch_size),
                              "--image-size", str(args.image_size), "--threads", str(args.threads)])
    bare = bare_step(args.model, args.batch_size, args.image_size)
    wall: dict[str, list[float]] = {"workload": [], "bare": []}
    cpu: dict[str, list[float]] = {"workload": [], "bare": []}
    steps = {"workload": workload, "bare": bare}
    for i in range(args.warmup_steps + args.steps):
        for name in (("bare", "workload") if i % 2 == 0 else ("workload", "bare")):
            started, cpu_started = time.perf_counter(), time.process_time()
            steps[name]()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
    print(f"{args.steps} interleaved step pairs after {args.warmup_steps} warm-up, {torch.get_num_threads()} thread(s)")
    for label, times in (("wall", wall), ("process CPU", cpu)):
        print(f"  step {label} time, workload / bare: {paired_median(times, args.warmup_steps)}")


def paired_median(times: dict[str, list[float]], warmup: int) -> str:
    """Median of each step's ratio to its neighbour of the other kind (they share the machine's
    state), with a bootstrap 95% CI, and the median steps.
    """
    w, b = np.asarray(times["workload"][warmup:]), np.asarray(times["bare"][warmup:])
    pairs = w / b
    boot = np.median(pairs[np.random.default_rng(0).integers(0, pairs.size, size=(5000, pairs.size))], axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return (f"{np.median(pairs):.4f} [{low:.4f}, {high:.4f}]; median step: bare {1000 * np.median(b):.2f} ms, "
            f"workload {1000 * np.median(w):.2f} ms")

if __name__ == "__main__":
    main()
