"""The CPU the runner itself takes while a run goes on: what kubebench can take from a workload.

A ratio of rates through kubebench and bare (``bench/harness.py``, ``bench/gpu.py``) needs a quiet
machine to read ±1%; the runner's own CPU time does not. Each round runs one busy-loop ``Process``
job of ``--short`` and one of ``--long`` seconds through ``execute`` (local backend, telemetry on,
sampling every second) in this process, and takes the process's CPU time (``getrusage``, every thread:
the wait loop, the telemetry sampler, the store) over each. The difference between the two, per
second of difference in length, is the runner's CPU share during a run (the rest is its fixed cost
per run: launch, collect, store, which a workload's own steady-state rate never sees).

    .venv/bin/python bench/runner_cpu.py [--rounds 3] [--short 2] [--long 30]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from benchlib import load_line

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store


def one_run(folder: Path, seconds: float, n: int) -> tuple[float, float]:
    """(wall, runner CPU) in seconds of one run whose workload spins ``seconds``."""
    code = f"import time\nt = time.time()\nwhile time.time() - t < {seconds}: pass\nprint('KUBEBENCH_METRIC x=1')"
    spec = folder / f"s{n}.yaml"
    spec.write_text(f"name: cpu{n}\njob:\n  command: {json.dumps(['python', '-c', code])}\n"
                    "metrics: [{name: x, primary: true}]\ntelemetry: {enabled: true, interval: 1s}\n")
    store = open_store(f"sqlite:///{folder / 'bench.db'}")
    experiment = plan_experiment(load_spec(spec), settings(home=folder / "home"), f"cpu{n}")
    before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    execute(experiment, store)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - start
    (run,) = store.runs(f"cpu{n}")
    if run.status != "succeeded":
        raise SystemExit(f"the run failed: {run.reason}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", type=float, default=2.0)
    parser.add_argument("--long", type=float, default=30.0)
    args = parser.parse_args()
    shares, fixed = [], []
    with tempfile.TemporaryDirectory(prefix="kubebench-runner-cpu-") as tmp:
        one_run(Path(tmp), 0.1, 0)  # imports and the store's creation, outside the figures
        for i in range(args.rounds):
            short_wall, short_cpu = one_run(Path(tmp), args.short, 2 * i + 1)
            long_wall, long_cpu = one_run(Path(tmp), args.long, 2 * i + 2)
            share = (long_cpu - short_cpu) / (long_wall - short_wall)
            shares.append(share)
            fixed.append(short_cpu - share * short_wall)
            print(f"round {i + 1}: {args.short:g} s run {short_cpu:.3f} CPU-s, {args.long:g} s run {long_cpu:.3f} CPU-s "
                  f"-> {100 * share:.2f}% of a core while running")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    share = statistics.median(shares)
    print(load_line())
    print(f"runner CPU during a run: {100 * share:.2f}% of one core (median of {args.rounds}; "
          f"{100 * share / cores:.2f}% of this {cores}-CPU machine); fixed cost per run {statistics.median(fixed):.3f} CPU-s")
    print(f"a workload using every CPU can lose at most ~{100 * share / cores:.2f}% of its rate to the runner "
          f"(target ratio >= 0.99: {'ok' if share / cores <= 0.01 else 'MISSED'})")


if __name__ == "__main__":
    main()
