"""The harness's own performance, in one table: what kubebench adds to what it measures.

1. Measurement fidelity: the CPU-bound reference workload (``kubebench.workloads.synthetic
   reference``: fixed pure-Python work per step) run through kubebench (local backend, telemetry on,
   sampling every second) over the same command started bare, alternated round by round (the order
   flips every round): at least ``--rounds`` rounds, then more until the 95% CI is within
   ±``--target-ci`` or ``--fidelity-seconds`` have passed. Figure: the median of the rounds' ops/s
   ratios with a bootstrap 95% CI. Target ≥ 0.99.
2. Orchestration overhead per run: ``--runs`` no-op runs (``python -c pass``) through kubebench's
   real code path (plan → render → launch → wait → collect → store, telemetry on) over the same
   processes launched directly, alternated for ``--overhead-rounds`` rounds; the added ms per run.
   Target ≤ 50 ms.
3. ``kubebench --help``, whole command, against ``python -c pass`` (the interpreter's own start):
   medians of alternated samples. Target < 0.5 s.
4. ``kubebench results`` on an experiment of 10,000 runs (100 trials × 100 repeats, 10 metrics each,
   in SQLite, bulk-inserted before the clock starts): the default per-trial table and ``-f json``,
   whole commands, against the bare SQL read of the same rows in a fresh interpreter and against
   importing the CLI's libraries (typer, pydantic, rich: the floor of any command). Target < 1 s.

The commands of 3 and 4 are timed with kubebench's bytecode compiled first, as installing a wheel
does (an editable install under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile kubebench's
modules on every start, which no user's installation does).

Everything runs pinned to one CPU (``--cpus``, default the last one; the processes it starts
inherit the mask): both arms of a ratio then compete for the same core, so that the harness's own
threads (the runner's wait loop, the telemetry sampler) are charged to kubebench and not hidden on
an idle core, and the scheduler does not move a workload between cores mid-run. Each figure comes
with its baseline measured in the same run, and the load average is printed: on a shared machine
the figures' CIs widen, and they are the thing to read.

    .venv/bin/python bench/harness.py [--rounds 20] [--fidelity-seconds 240] [--cpus last] [--quick]
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from benchlib import load_line, machine_line, paired_ratio, pin, verdict

import kubebench
from kubebench.collect.metrics import parse_metric_lines
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import Store, open_store

PYTHON = sys.executable
KUBEBENCH = str(Path(sys.executable).with_name("kubebench"))
NOOP = [PYTHON, "-c", "pass"]
REFERENCE = ["-m", "kubebench.workloads.synthetic", "reference"]


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    figure: str
    target: str
    measured: str
    baseline: str
    passed: bool


def yaml_list(argv: list[str]) -> str:
    return "[" + ", ".join(f'"{a}"' for a in argv) + "]"


def run_spec(folder: Path, store: Store, name: str, text: str) -> list:
    """Plan and execute one experiment through kubebench's runner; its runs, all succeeded."""
    spec = folder / f"{name}.yaml"
    spec.write_text(text)
    experiment = plan_experiment(load_spec(spec), settings(home=folder / "home"), name)
    execute(experiment, store)
    runs = store.runs(name)
    failed = [r for r in runs if r.status != "succeeded"]
    if failed:
        raise SystemExit(f"{name}: {len(failed)} runs failed: {failed[0].reason}")
    return runs


# 1. Fidelity ----------------------------------------------------------------------------------


def fidelity(folder: Path, store: Store, rounds: int, reference: list[str], budget_s: float, target_ci: float) -> Row:
    spec = ("name: {name}\njob:\n  command: " + yaml_list(["python", *REFERENCE, *reference])
            + "\nmetrics: [{{name: ops_per_s, primary: true}}]\ntelemetry: {{enabled: true, interval: 1s}}\n")
    found: dict[str, list[dict[str, float]]] = {"bare": [], "kubebench": []}

    runner_cpu: list[float] = []

    def bare() -> dict[str, float]:
        # A session of its own, as the local backend gives its replicas: with the kernel's autogroup
        # scheduling each session is one group in the CPU's fair share, so both arms compete alike.
        done = subprocess.run([PYTHON, *REFERENCE, *reference], check=True, capture_output=True, text=True,
                              start_new_session=True)
        return parse_metric_lines(done.stdout.splitlines())

    def through(i: int) -> dict[str, float]:
        cpu = time.process_time()
        (run,) = run_spec(folder, store, f"fidelity-{i}", spec.format(name=f"fidelity-{i}"))
        # All the CPU the runner's process spent on the run (plan to stored result, sampler included):
        # immune to machine noise, an upper bound of what it can take from the workload, though most
        # of it is spent before the job starts and after it ends.
        runner_cpu.append(time.process_time() - cpu)
        if "cpu_percent_mean" not in run.metrics and run.finished_at - run.started_at > 2:
            raise SystemExit("the telemetry sampler recorded nothing: the fidelity figure would not include it")
        return run.metrics

    started, i = time.monotonic(), 0
    while i < rounds or (time.monotonic() - started < budget_s and not settled(found, target_ci)):
        order = ("bare", "kubebench") if i % 2 == 0 else ("kubebench", "bare")
        for arm in order:
            found[arm].append(bare() if arm == "bare" else through(i))
        kb, b = found["kubebench"][-1]["ops_per_s"], found["bare"][-1]["ops_per_s"]
        print(f"  fidelity round {i:>2}: bare {b / 1e6:6.3f}  kubebench {kb / 1e6:6.3f} Mops/s  ({kb / b:.3f}; "
              f"{load_line()})", flush=True)
        i += 1
    rounds = i
    wall = paired_ratio([m["ops_per_s"] for m in found["kubebench"]], [m["ops_per_s"] for m in found["bare"]])
    cpu = paired_ratio([m["ops_per_cpu_s"] for m in found["kubebench"]], [m["ops_per_cpu_s"] for m in found["bare"]])
    bare_rates = [m["ops_per_s"] / 1e6 for m in found["bare"]]
    noisy = "" if wall.ci[1] - wall.ci[0] <= 2 * target_ci else f"; CI wider than ±{target_ci:.1%}: a noisy machine"
    return Row(
        "measurement fidelity: reference workload through kubebench (local, telemetry on) / bare, ops/s",
        "≥ 0.99",
        f"{wall.text()} (median of {rounds} rounds [95% CI]); per CPU second {cpu.text()}; the runner's own "
        f"CPU {1000 * statistics.median(runner_cpu):.0f} ms per run (plan to stored result){noisy}",
        f"bare {statistics.median(bare_rates):.2f} Mops/s (rounds {min(bare_rates):.2f}–{max(bare_rates):.2f})",
        wall.median >= 0.99,
    )


def settled(found: dict[str, list[dict[str, float]]], target_ci: float) -> bool:
    """Whether the 95% CI of the median ratio is within ±target_ci (relative) already."""
    r = paired_ratio([m["ops_per_s"] for m in found["kubebench"]], [m["ops_per_s"] for m in found["bare"]])
    return r.ci[1] - r.ci[0] <= 2 * target_ci * r.median


# 2. Orchestration overhead --------------------------------------------------------------------


def overhead(folder: Path, store: Store, runs: int, rounds: int) -> Row:
    spec = f"name: {{name}}\njob:\n  command: {yaml_list(['python', '-c', 'pass'])}\nrepeats: {runs}\n"
    added, bare_ms = [], []
    for i in range(rounds):
        for arm in (("bare", "kubebench") if i % 2 == 0 else ("kubebench", "bare")):
            started = time.perf_counter()
            if arm == "bare":
                for _ in range(runs):
                    subprocess.run(NOOP, check=True, start_new_session=True)  # as the local backend does
                bare = time.perf_counter() - started
            else:
                run_spec(folder, store, f"overhead-{i}", spec.format(name=f"overhead-{i}"))
                through = time.perf_counter() - started
        added.append((through - bare) / runs * 1000)
        bare_ms.append(bare / runs * 1000)
        print(f"  overhead round {i}: bare {bare_ms[-1]:5.1f} ms/run, added by kubebench {added[-1]:5.1f} ms/run  "
              f"({load_line()})", flush=True)
    median = statistics.median(added)
    low, high = bootstrap_median(added)
    return Row(
        f"orchestration overhead per run, local backend ({runs} no-op runs vs the same processes launched directly)",
        "≤ 50 ms",
        f"{median:.1f} ms [{low:.1f}, {high:.1f}] (median of {rounds} rounds [95% CI])",
        f"bare process launch {statistics.median(bare_ms):.1f} ms",
        median <= 50,
    )


def bootstrap_median(values: list[float], resamples: int = 5000) -> tuple[float, float]:
    x = np.asarray(values)
    medians = np.median(x[np.random.default_rng(0).integers(0, x.size, (resamples, x.size))], axis=1)
    low, high = np.quantile(medians, [0.025, 0.975])
    return float(low), float(high)


# 3 and 4. Commands ----------------------------------------------------------------------------


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def alternated(commands: dict[str, Callable[[], float]], samples: int) -> dict[str, float]:
    """Median seconds of each command over ``samples`` alternated samples (after one warm-up each)."""
    for command in commands.values():
        command()
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(samples):
        for name in (list(commands) if i % 2 == 0 else list(reversed(commands))):
            times[name].append(commands[name]())
    return {name: statistics.median(t) for name, t in times.items()}


def help_time(samples: int) -> Row:
    t = alternated({"help": lambda: timed([KUBEBENCH, "--help"]), "python": lambda: timed(NOOP)}, samples)
    return Row("`kubebench --help` (whole command)", "< 0.5 s", f"{t['help']:.3f} s (median of {samples})",
               f"`python -c pass` {t['python']:.3f} s", t["help"] < 0.5)


# The bare read: the runs of the experiment and their metrics, in a fresh interpreter, no kubebench.
BARE_READ = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs = db.execute("SELECT * FROM runs WHERE experiment_id = ?", (sys.argv[2],)).fetchall()
metrics = db.execute("SELECT m.* FROM metrics m JOIN runs r ON r.id = m.run_id WHERE r.experiment_id = ?",
                     (sys.argv[2],)).fetchall()
print(len(runs), len(metrics))
"""


# What any command of the CLI imports before it does anything: its libraries, none of our code.
STACK_IMPORTS = "import typer, typer._adapters, pydantic, rich.console, rich.table"


def results_time(folder: Path, samples: int, runs: int = 10_000, trials: int = 100) -> list[Row]:
    import store_scale

    path = folder / "results.db"
    url = f"sqlite:///{path}"
    store = open_store(url)
    store_scale.seed(store, runs, big_trials=trials)
    store.engine.dispose()
    out = folder / "results.json"
    t = alternated({
        "table": lambda: timed([KUBEBENCH, "results", "big", "--store", url]),
        "json": lambda: timed([KUBEBENCH, "results", "big", "-f", "json", "-o", str(out), "--store", url]),
        "bare": lambda: timed([PYTHON, "-c", BARE_READ, str(path), "big"]),
        "stack": lambda: timed([PYTHON, "-c", STACK_IMPORTS]),
    }, samples)
    setup = f"{runs:,} runs ({trials} trials × {runs // trials} repeats, 10 metrics each, log tails; SQLite)"
    baseline = (f"bare SQL read of its runs and metrics, fresh interpreter: {t['bare']:.3f} s; "
                f"importing the CLI's libraries (typer, pydantic, rich): {t['stack']:.3f} s")
    return [
        Row(f"`kubebench results ID` (per-trial table) on {setup}", "< 1 s", f"{t['table']:.3f} s (median of {samples})",
            baseline, t["table"] < 1),
        Row(f"`kubebench results ID -f json -o FILE` (every run) on {setup}", "< 1 s",
            f"{t['json']:.3f} s (median of {samples})", baseline, t["json"] < 1),
    ]


# The table ------------------------------------------------------------------------------------


def print_table(rows: list[Row]) -> None:
    print("\n| figure | target | measured | baseline, same run | verdict |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r.figure} | {r.target} | {r.measured} | {r.baseline} | {verdict(r.passed)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="fidelity rounds, at least")
    parser.add_argument("--fidelity-seconds", type=float, default=240, help="more rounds until the CI is tight, this long")
    parser.add_argument("--target-ci", type=float, default=0.005, help="relative half-width of the fidelity CI to reach")
    parser.add_argument("--steps", type=int, default=40, help="measured steps of the reference workload")
    parser.add_argument("--work", type=int, default=250_000, help="generator iterations per reference step")
    parser.add_argument("--runs", type=int, default=40, help="no-op runs per overhead round")
    parser.add_argument("--overhead-rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=7, help="samples of each timed command")
    parser.add_argument("--cpus", default="last", help="CPUs to pin to: a list ('1', '0,1'), 'last', or 'none'")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few rounds, short runs")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.fidelity_seconds, args.steps, args.runs, args.overhead_rounds, args.samples = 3, 0, 10, 10, 3, 3
    pinned = pin(args.cpus)
    print(machine_line(pinned), flush=True)
    started = time.monotonic()
    reference = ["--steps", str(args.steps), "--warmup-steps", "3", "--work", str(args.work)]
    folder = Path(tempfile.mkdtemp(prefix="kubebench-harness-bench-"))
    try:
        store = open_store(settings(home=folder / "home").store_url)
        subprocess.run([PYTHON, *REFERENCE, "--steps", "1", "--work", "1"], check=True, capture_output=True)  # warm caches
        compileall.compile_dir(Path(kubebench.__file__).parent, quiet=1)
        rows = [fidelity(folder, store, args.rounds, reference, args.fidelity_seconds, args.target_ci), overhead(folder, store, args.runs, args.overhead_rounds),
                help_time(args.samples), *results_time(folder, args.samples)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print_table(rows)
    print(f"\nreference workload: {' '.join(reference)}; pinned to CPU {','.join(map(str, pinned))}; "
          f"{time.monotonic() - started:.0f} s; at the end: {load_line()}")
    sys.exit(0 if all(r.passed for r in rows) else 1)


if __name__ == "__main__":
    main()
