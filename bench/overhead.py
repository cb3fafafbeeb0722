"""Orchestration overhead of the local backend, and the CLI's start-up time.

Runs a sweep of N runs of a no-op workload through kubebench (plan → render → launch → wait →
collect → store, the real code path) and the same N processes launched directly, alternating the
two for several rounds in one process so that machine noise hits both alike. Prints the added
time per run (target: at most 50 ms) and the median wall time of ``kubebench --help`` (target:
under 0.5 s).

    .venv/bin/python bench/overhead.py [--runs 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

NOOP = [sys.executable, "-c", "pass"]


def spec_text(runs: int) -> str:
    return (
        "name: overhead\n"
        "job:\n"
        f"  command: {NOOP!r}\n".replace("'", '"')
        + f"repeats: {runs}\n"
    )


def through_kubebench(folder: Path, runs: int, round_index: int) -> float:
    spec = folder / "spec.yaml"
    spec.write_text(spec_text(runs))
    config = settings(home=folder / "home")
    loaded = load_spec(spec)
    store = open_store(config.store_url)
    experiment = plan_experiment(loaded, config, f"overhead-{round_index}")
    started = time.perf_counter()
    execute(experiment, store)
    elapsed = time.perf_counter() - started
    failed = [r for r in store.runs(experiment.plan.experiment_id) if r.status != "succeeded"]
    if failed:
        raise SystemExit(f"{len(failed)} runs failed: {failed[0].reason}")
    return elapsed


def bare(runs: int) -> float:
    started = time.perf_counter()
    for _ in range(runs):
        subprocess.run(NOOP, check=True)
    return time.perf_counter() - started


def help_time(samples: int = 5) -> float:
    exe = Path(sys.executable).with_name("kubebench")
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        subprocess.run([str(exe), "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kubebench-bench-"))
    try:
        bare(3)  # warm the page cache for the interpreter
        pairs = []
        for i in range(args.rounds):
            pairs.append((bare(args.runs), through_kubebench(folder, args.runs, i)))
        added = [(kb - b) / args.runs for b, kb in pairs]
        print(f"{'round':>5} {'bare s':>8} {'kubebench s':>12} {'added ms/run':>13}")
        for i, ((b, kb), a) in enumerate(zip(pairs, added)):
            print(f"{i:>5} {b:>8.2f} {kb:>12.2f} {a * 1000:>13.1f}")
        overhead_ms = statistics.median(added) * 1000
        bare_ms = statistics.median(b for b, _ in pairs) / args.runs * 1000
        print(f"orchestration overhead: {overhead_ms:.1f} ms per run (median of {args.rounds} rounds of "
              f"{args.runs} runs; bare process {bare_ms:.1f} ms) — target ≤ 50 ms: "
              f"{'PASS' if overhead_ms <= 50 else 'FAIL'}")
        seconds = help_time()
        print(f"kubebench --help: {seconds:.3f} s (median of 5) — target < 0.5 s: {'PASS' if seconds < 0.5 else 'FAIL'}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
