"""Synthetic workloads without a framework: a CPU-bound reference, and a metric with seeded noise.

``reference``: fixed, deterministic work per step (a pure-Python linear congruential generator run
``--work`` times: one core, no allocation, no library that could start threads), timed step by step
after ``--warmup-steps``. It prints ``steps/sec: X`` and reports ``steps_per_s``, ``ops_per_s``,
``ops_per_cpu_s`` (immune to waiting for the CPU) and ``step_time_p50/p90/p99`` through the metric
protocol, the same whether it runs bare or through kubebench, which makes it the yardstick of the
harness's measurement fidelity (``bench/harness.py``). With an output folder
(``$KUBEBENCH_EXP_OUTPUT_PATH``) it also writes ``step_times.json``.

``noisy``: reports one metric, ``--mean`` times a factor drawn from a seeded distribution:
Gaussian with ``--noise`` as its coefficient of variation, or uniform within ±``--noise``. The seed
is the run's id (``$KUBEBENCH_RUN_ID``) unless ``--seed`` is given, so a run always reports the same
value and different runs differ: what the statistics, comparisons and adaptive repeats are tested on.

    python -m kubebench.workloads.synthetic reference [--steps 20] [--warmup-steps 2] [--work 100000]
    python -m kubebench.workloads.synthetic noisy [--metric rate] [--mean 100] [--noise 0.03]
        [--distribution gaussian|uniform] [--seed SEED]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass

import kubebench

from .measure import step_metrics, write_step_times
from .options import non_negative, positive

DISTRIBUTIONS = ("gaussian", "uniform")
#: The LCG's constants (those of C's ``rand``), and its state's mask: 31 bits, so ints stay small.
_A, _C, _MASK = 1103515245, 12345, 0x7FFFFFFF


def lcg(iterations: int, state: int = 1) -> int:
    """Advance the generator ``iterations`` times from ``state``: the reference's unit of work."""
    for _ in range(iterations):
        state = (state * _A + _C) & _MASK
    return state


@dataclass(frozen=True)
class Steps:
    """Wall and process-CPU seconds of every step, warm-up first."""

    wall: list[float]
    cpu: list[float]
    checksum: int


def run_reference(steps: int, warmup_steps: int, work: int) -> Steps:
    """Run ``warmup_steps + steps`` steps of ``work`` iterations each, timing every one."""
    wall, cpu, state = [], [], 1
    for _ in range(warmup_steps + steps):
        started, cpu_started = time.perf_counter(), time.process_time()
        state = lcg(work, state)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    return Steps(wall, cpu, state)


def reference_metrics(measured: Steps, work: int) -> dict[str, float]:
    """Throughput of the measured steps (warm-up already dropped): per wall and per CPU second."""
    wall, cpu = sum(measured.wall), sum(measured.cpu)
    ops = work * len(measured.wall)
    metrics = {"steps_per_s": len(measured.wall) / wall, "ops_per_s": ops / wall, **step_metrics(measured.wall)}
    if cpu > 0:  # a coarse CPU clock can read 0 for very short runs
        metrics["ops_per_cpu_s"] = ops / cpu
    return metrics


def noisy_value(mean: float, noise: float, distribution: str, seed: str) -> float:
    """``mean`` times a factor of expected value 1 drawn with ``random.Random(seed)``."""
    rng = random.Random(seed)
    if distribution == "gaussian":
        return mean * rng.gauss(1, noise)
    if distribution == "uniform":
        return mean * rng.uniform(1 - noise, 1 + noise)
    raise ValueError(f"unknown distribution {distribution!r}; valid: {', '.join(DISTRIBUTIONS)}")


def non_negative_float(text: str) -> float:
    """A finite number ≥ 0."""
    value = float(text)
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be zero or a positive number, got {text}")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; argparse exits with status 2 and one line on error."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.synthetic", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="workload", required=True)
    ref = sub.add_parser("reference", help="fixed CPU-bound work per step; reports its throughput")
    ref.add_argument("--steps", type=positive, default=20, help="measured steps")
    ref.add_argument("--warmup-steps", type=non_negative, default=2, help="steps run before measuring")
    ref.add_argument("--work", type=positive, default=100_000, help="generator iterations per step")
    noisy = sub.add_parser("noisy", help="one metric: a mean times seeded noise")
    noisy.add_argument("--metric", default="rate", help="the metric's name")
    noisy.add_argument("--mean", type=float, default=100.0, help="the metric's expected value")
    noisy.add_argument("--noise", type=non_negative_float, default=0.03,
                       help="relative: the CV (gaussian) or the half-width (uniform)")
    noisy.add_argument("--distribution", choices=DISTRIBUTIONS, default="gaussian")
    noisy.add_argument("--seed", default=None, help="default: $KUBEBENCH_RUN_ID, else 0")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the chosen workload and report its figures."""
    args = parse_args(argv)
    if args.workload == "noisy":
        seed = args.seed if args.seed is not None else os.environ.get("KUBEBENCH_RUN_ID", "0")
        try:
            kubebench.report(**{args.metric: noisy_value(args.mean, args.noise, args.distribution, seed)})
        except ValueError as e:  # a metric name the protocol cannot carry: one line, exit 1
            sys.exit(f"synthetic: {e}")
        return
    steps = run_reference(args.steps, args.warmup_steps, args.work)
    measured = Steps(steps.wall[args.warmup_steps:], steps.cpu[args.warmup_steps:], steps.checksum)
    metrics = reference_metrics(measured, args.work)
    print(f"reference: {args.steps} steps of {args.work} iterations after {args.warmup_steps} warm-up, "
          f"checksum {steps.checksum}", flush=True)
    print(f"steps/sec: {metrics['steps_per_s']:.3f}", flush=True)
    kubebench.report(**metrics)
    write_step_times(args.warmup_steps, args.work, 1, steps.wall, cpu_seconds=steps.cpu)


if __name__ == "__main__":
    main()
