"""Inference latency and throughput of a model's forward pass, in the scenarios of MLPerf LoadGen.

    python -m kubebench.workloads.inference --scenario single-stream,offline,server [--model resnet18] …

- ``single-stream``: one sample per query, the next query issued when the previous one completes;
  reports ``latency_p50/p90/p99`` (seconds; p90 is MLPerf's SingleStream metric).
- ``offline``: every sample available at once, processed in batches of ``--batch-size``; reports
  ``samples_per_sec``.
- ``server``: one-sample queries arriving as a Poisson process at ``--target-qps``; the system
  batches whatever has arrived (up to ``--max-batch``). Latency runs from a query's arrival to its
  completion, so queueing counts. Reports ``server_achieved_qps`` (completed queries per second;
  ``server_scheduled_qps`` is the arrival sample's own rate), ``server_latency_p50/p99`` and
  ``server_valid`` (1 when p99 ≤ ``--latency-bound``, LoadGen's validity rule; else 0).

Each scenario runs until both ``--min-queries`` and ``--min-duration`` are met, after untimed
warm-up queries. Several replicas measure independently (kubebench keeps the first one's metrics).
Single-stream query times and offline batch times go to ``$KUBEBENCH_EXP_OUTPUT_PATH/step_times.json``
(offline's when both run), for kubebench's steady-state detection.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import kubebench

from .measure import percentile, write_step_times
from .options import AMP_MODES, MODELS

SCENARIOS = ("single-stream", "offline", "server")
Infer = Callable[[int], None]  # run the forward pass on a batch of n samples, synchronously


def precise_sleep(seconds: float) -> None:
    """Sleep, then spin for the last millisecond: ``time.sleep`` oversleeps by tens of microseconds
    or more, which the server scenario would count as the system's latency.
    """
    end = time.perf_counter() + seconds
    if seconds > 1e-3:
        time.sleep(seconds - 1e-3)
    while time.perf_counter() < end:
        pass


@dataclass(frozen=True)
class Clock:
    """Time source and sleep, replaceable in tests by a simulated clock."""

    now: Callable[[], float] = time.perf_counter
    sleep: Callable[[float], None] = precise_sleep


def run_single_stream(infer: Infer, min_queries: int, min_duration: float, clock: Clock = Clock()) -> list[float]:
    """Latency of each one-sample query, issued back to back."""
    latencies: list[float] = []
    start = clock.now()
    while len(latencies) < min_queries or clock.now() - start < min_duration:
        began = clock.now()
        infer(1)
        latencies.append(clock.now() - began)
    return latencies


def run_offline(infer: Infer, batch_size: int, min_samples: int, min_duration: float,
                clock: Clock = Clock()) -> tuple[int, float, list[float]]:
    """(samples processed, total seconds, seconds per batch) of back-to-back full batches."""
    batches: list[float] = []
    start = clock.now()
    while len(batches) * batch_size < min_samples or clock.now() - start < min_duration:
        began = clock.now()
        infer(batch_size)
        batches.append(clock.now() - began)
    return len(batches) * batch_size, clock.now() - start, batches


def poisson_arrivals(qps: float, count: int, seed: int) -> np.ndarray:
    """Arrival offsets (seconds from the start) of ``count`` queries of a Poisson process at ``qps``."""
    return np.cumsum(np.random.default_rng(seed).exponential(1.0 / qps, count))


def run_server(infer: Infer, arrivals: np.ndarray, max_batch: int, clock: Clock = Clock()) -> tuple[list[float], float]:
    """Serve queries arriving at ``arrivals`` (offsets); return each query's latency (arrival to
    completion) and the time from the start to the last completion.
    """
    latencies: list[float] = []
    start = clock.now()
    done = 0
    while done < len(arrivals):
        now = clock.now() - start
        if arrivals[done] > now:
            clock.sleep(arrivals[done] - now)  # idle until the next query arrives
            now = clock.now() - start
        # Everything that has arrived by now, up to the batch limit, goes in one forward pass.
        ready = int(np.searchsorted(arrivals, now, side="right"))
        take = max(1, min(ready - done, max_batch))
        infer(take)
        finished = clock.now() - start
        latencies.extend(finished - float(a) for a in arrivals[done:done + take])
        done += take
    return latencies, clock.now() - start


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse the command line (argparse exits 2 with one line on error)."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.inference", description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="single-stream", type=_scenarios,
                   help=f"comma-separated list of {', '.join(SCENARIOS)}, or 'all'")
    p.add_argument("--model", choices=MODELS, default="small")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="offline scenario's batch")
    p.add_argument("--min-queries", type=int, default=200, help="per scenario (offline: samples)")
    p.add_argument("--min-duration", type=float, default=0.0, help="seconds, per scenario")
    p.add_argument("--warmup-queries", type=int, default=10)
    p.add_argument("--target-qps", type=float, default=100.0, help="server scenario's arrival rate")
    p.add_argument("--latency-bound", type=float, default=0.015,
                   help="server p99 bound in seconds (MLPerf ResNet-50: 15 ms)")
    p.add_argument("--max-batch", type=int, default=8, help="server scenario's largest dynamic batch")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--amp", choices=AMP_MODES, default="none")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: all this replica may use)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    for name in ("image_size", "num_classes", "batch_size", "min_queries", "max_batch"):
        if getattr(args, name) < 1:
            p.error(f"argument --{name.replace('_', '-')}: must be a positive integer")
    if not (args.target_qps > 0 and args.latency_bound > 0 and args.min_duration >= 0 and args.warmup_queries >= 0):
        p.error("--target-qps and --latency-bound must be positive; --min-duration, --warmup-queries not negative")
    return args


def _scenarios(text: str) -> list[str]:
    names = list(SCENARIOS) if text == "all" else [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in names if s not in SCENARIOS]
    if unknown or not names:
        bad = ", ".join(unknown) if unknown else repr(text)
        raise argparse.ArgumentTypeError(f"unknown scenario {bad}; valid: {', '.join(SCENARIOS)}, all")
    return names


def make_infer(args: argparse.Namespace) -> tuple[Infer, str]:
    """A synchronous forward pass on n samples of the chosen model, and a description of it."""
    import torch

    from .distributed import setup
    from .models import autocast, build_model, compiled, prepare

    group = setup("none", args.threads)
    torch.manual_seed(args.seed)
    model = compiled(prepare(build_model(args.model, 3, args.num_classes), group.device, args.channels_last), args.compile)
    model.eval()
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    pool = torch.randn(max(args.batch_size, args.max_batch), 3, args.image_size, args.image_size)
    pool = pool.to(group.device, memory_format=fmt)
    amp = autocast(group.device, args.amp)
    sync = torch.cuda.synchronize if group.device.type == "cuda" else (lambda: None)

    def infer(n: int) -> None:
        with torch.inference_mode(), amp():
            model(pool[:n] if n <= len(pool) else pool.repeat((n // len(pool)) + 1, 1, 1, 1)[:n])
        sync()

    return infer, f"model={args.model}, device={group.device}, threads={torch.get_num_threads()}, amp={args.amp}"


def scenario_metrics(name: str, infer: Infer, args: argparse.Namespace) -> tuple[dict[str, float], list[float], int]:
    """Run one scenario; return its metrics, its per-step seconds and the samples per step."""
    # Warm every batch shape the scenario will use: a shape's first pass builds its kernels.
    shapes = {"single-stream": [1], "offline": [args.batch_size], "server": range(1, args.max_batch + 1)}[name]
    for _ in range(args.warmup_queries):
        for n in shapes:
            infer(n)
    if name == "single-stream":
        lat = run_single_stream(infer, args.min_queries, args.min_duration)
        metrics = {f"latency_p{q}": percentile(lat, q) for q in (50, 90, 99)}
        return {**metrics, "single_stream_qps": len(lat) / sum(lat)}, lat, 1
    if name == "offline":
        samples, seconds, batches = run_offline(infer, args.batch_size, args.min_queries, args.min_duration)
        return {"samples_per_sec": samples / seconds}, batches, args.batch_size
    count = max(args.min_queries, int(args.target_qps * args.min_duration))
    arrivals = poisson_arrivals(args.target_qps, count, args.seed)
    lat, seconds = run_server(infer, arrivals, args.max_batch)
    p99 = percentile(lat, 99)
    return {
        "server_achieved_qps": len(lat) / seconds,
        "server_scheduled_qps": len(arrivals) / float(arrivals[-1]),  # the seeded sample's own rate
        "server_target_qps": args.target_qps,
        "server_latency_p50": percentile(lat, 50),
        "server_latency_p99": p99,
        "server_valid": float(p99 <= args.latency_bound),
    }, [], 1


def main(argv: list[str] | None = None) -> None:
    """Entry point: run each chosen scenario and report its metrics."""
    args = parse_args(argv)
    infer, description = make_infer(args)
    print(f"inference: {description}, scenarios={','.join(args.scenario)}", flush=True)
    for name in args.scenario:
        metrics, steps, per_step = scenario_metrics(name, infer, args)
        print(f"{name}: " + ", ".join(f"{k}={v:.6g}" for k, v in metrics.items()), flush=True)
        if name == "server" and not metrics["server_valid"]:
            print(f"server: INVALID, p99 {metrics['server_latency_p99'] * 1e3:.2f} ms exceeds the bound of "
                  f"{args.latency_bound * 1e3:.2f} ms at {args.target_qps:g} QPS", flush=True)
        kubebench.report(**metrics)
        if steps:
            write_step_times(0, per_step, 1, steps)


if __name__ == "__main__":
    main()
