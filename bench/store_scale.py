"""The results store at scale, on SQLite and on PostgreSQL (a throwaway server, as the tests start it).

Measures, per backend:

- ingest: metric rows per second recorded through the store's API, in batches of 100 runs
  (``finish_runs``, what bulk loads use), target ≥ 10,000 rows/s; and one transaction per run, as
  the runner records them (``finish_run``, bound by commit latency);
- recording a run (``finish_run``) of an experiment of 10,000 runs that is the store's only one,
  after ANALYZE: the statistics then say that an experiment id matches every row, and a query
  whose plan needs table reads loses to a full scan (it took 22 ms per run instead of 0.5 ms);
  target ≤ 2× the time per run of the empty store's ingest;
- ingest again, one transaction per run, with the 100,000 runs below stored and analysed;
- with 100,000 runs × 10 metrics stored (one experiment of 10,000 runs, 9,999 of 9 runs):
  the results of the 10,000-run experiment (``store.runs`` + JSON, what ``kubebench results -f json``
  does), target < 1 s; and listing the 10,000 experiments with their run counts, target < 0.5 s.
  Both are also timed as whole ``kubebench`` commands (interpreter start-up included). Times are
  wall and CPU of this process: on a shared machine the CPU time is the code's own cost.

    .venv/bin/python bench/store_scale.py [--backends sqlite,postgresql] [--runs 100000]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import insert

from kubebench.present.export import to_json
from kubebench.provenance import machine
from kubebench.store import schema
from kubebench.store.records import RunResult
from kubebench.store.rows import save_provenance
from kubebench.store.store import Store, open_store

METRICS = 10
BIG = 10_000
SMALL_RUNS = 9
INGEST_RUNS = 1_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--runs", type=int, default=100_000, help="runs stored before the queries are timed")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kubebench-store-bench-"))
    rows = []
    try:
        for backend in args.backends.split(","):
            with store_url(backend, folder) as url:
                rows.append((backend, measure(url, args.runs, folder)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(rows, args.runs)


@contextmanager
def store_url(backend: str, folder: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'bench.db'}"
        return
    from kubebench.testing.postgres import PostgresServer

    with PostgresServer(fast=False) as server:  # PostgreSQL's defaults: fsync on, durable commits
        yield server.create_database("bench")


def measure(url: str, total_runs: int, folder: Path) -> dict[str, object]:
    """Every figure of one backend: rates in rows/s, times as (wall s, CPU s of this process)."""
    store = open_store(url)
    per_run, batched = ingest(store)
    figures: dict[str, object] = {"ingest_batched": batched, "ingest_per_run": per_run}
    for experiment in store.experiments():  # the big experiment is to be the only one
        store.delete_experiment(experiment.id)
    seed(store, BIG)
    figures["record_big"] = record_runs(store, "big")
    figures["record_big_target"] = 2 * METRICS / per_run
    seed(store, total_runs - BIG, big_runs=0)
    (figures["ingest_seeded"],) = ingest(store, batches=(1,), prefix="seeded")
    figures["results"] = best_of(5, lambda: to_json(store.runs("big")))
    figures["listing"] = best_of(5, lambda: store.experiments(limit=None))
    assert len(store.runs("big")) == BIG
    figures["cli_results"] = best_of(3, lambda: cli(url, "results", "big", "-f", "json", "-o", str(folder / "o.json")))
    figures["cli_listing"] = best_of(3, lambda: cli(url, "experiments", "--limit", "10000", "-f", "json"))
    store.engine.dispose()
    return figures


def ingest(store: Store, rounds: int = 3, batches: tuple[int, ...] = (1, 100), prefix: str = "ingest") -> tuple[float, ...]:
    """Metric rows per second (median of rounds) for each batch size: by default one transaction
    per run, then batches of 100 runs."""
    env = machine()
    rates: dict[int, list[float]] = {batch: [] for batch in batches}
    for round_index in range(rounds):
        for batch in rates:
            run_ids = plan(store, f"{prefix}-{batch}-{round_index}", 1, INGEST_RUNS)
            results = [RunResult(run_id=run_id, status="succeeded", finished_at=time.time(), provenance=env,
                                 metrics={f"m{k}": float(i + k) for k in range(METRICS)})
                       for i, run_id in enumerate(run_ids)]
            started = time.perf_counter()
            for i in range(0, len(results), batch):
                store.finish_runs(results[i:i + batch])
            rates[batch].append(len(results) * METRICS / (time.perf_counter() - started))
    return tuple(statistics.median(r) for r in rates.values())


def record_runs(store: Store, exp_id: str, runs: int = 200) -> float:
    """Median seconds to record one run of the experiment (``finish_run``: each a transaction),
    over ``runs`` of its runs recorded again as the runner would record them."""
    env = machine()
    times = []
    for i, record in enumerate(store.runs(exp_id, logs=False)[:runs]):
        result = RunResult(run_id=record.run_id, status="succeeded", finished_at=time.time(), provenance=env,
                           metrics={f"m{k}": float(i + k) for k in range(METRICS)})
        started = time.perf_counter()
        store.finish_run(result)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def plan(store: Store, exp_id: str, trials: int, runs: int, created_at: float | None = None) -> list[str]:
    """Insert an experiment with ``trials`` trials and ``runs`` pending runs spread over them."""
    rows = experiment_rows(exp_id, trials, runs, created_at or time.time())
    with store.engine.begin() as conn:
        for table, values in zip((schema.experiments, schema.trials, schema.runs), rows):
            conn.execute(insert(table), values)
    return [r["id"] for r in rows[2]]


def experiment_rows(exp_id: str, trials: int, runs: int, created_at: float) -> tuple[list, list, list]:
    spec = "name: bench\njob: {command: [python, train.py]}\nparameters: {bs: [8, 16], lr: [0.1, 0.01]}\n"
    experiment = [{"id": exp_id, "name": "bench", "backend": "local", "source": "bench.yaml", "spec_text": spec,
                   "job_fingerprint": "f" * 16, "created_at": created_at, "updated_at": created_at}]
    trial_rows = [{"id": f"{exp_id}-t{t}"[-32:], "experiment_id": exp_id, "index": t,
                   "params": {"bs": 8 * (t % 4 + 1), "lr": 0.1, "workers": t % 8 + 1}} for t in range(trials)]
    run_rows = [{"id": f"{exp_id}-r{i}"[-32:], "experiment_id": exp_id, "trial_id": trial_rows[i % trials]["id"],
                 "repeat": i // trials, "warmup": False, "status": "pending", "reason": "", "log_tail": "",
                 "info": {}, "attempts": 0, "path": ""} for i in range(runs)]
    return experiment, trial_rows, run_rows


def seed(store: Store, total_runs: int, big_trials: int = 1000, big_runs: int = BIG) -> None:
    """One experiment of ``big_runs`` runs (``big``, over ``big_trials`` trials; none if 0), the
    rest in experiments of 9 runs: 10 metrics each and a log tail, succeeded; then ANALYZE.
    """
    started = time.perf_counter()
    small = max(0, (total_runs - big_runs) // SMALL_RUNS)
    groups = [("big", big_trials, big_runs)] * (big_runs > 0) + [(f"exp-{i:05d}", 1, SMALL_RUNS) for i in range(small)]
    env_id = _provenance_id(store)
    noise = random.Random(0)  # metrics with a spread (CV 3%), as measurements have
    # the last 20 lines of each run's log, as the runner keeps them
    tail = "\n".join(f"epoch 3 step {i:5d}/20000 loss=0.{i:04d} images/s=812.{i:02d} lr=0.1" for i in range(20))
    for chunk in range(0, len(groups), 500):
        rows: tuple[list, list, list] = ([], [], [])
        for n, (exp_id, trials, runs) in enumerate(groups[chunk:chunk + 500]):
            for mine, more in zip(rows, experiment_rows(exp_id, trials, runs, 1e9 + chunk + n)):
                mine.extend(more)
        for run in rows[2]:
            run.update(status="succeeded", started_at=1e9, finished_at=1e9 + 10, path=f"/x/{run['id']}",
                       provenance_id=env_id, attempts=1, log_tail=tail,
                       metric_values={f"m{k}": (k + 1) * noise.gauss(1, 0.03) for k in range(METRICS)})
        metrics = [{"run_id": r["id"], "name": name, "value": value}
                   for r in rows[2] for name, value in r["metric_values"].items()]
        with store.engine.begin() as conn:
            for table, values in ((schema.experiments, rows[0]), (schema.trials, rows[1]), (schema.runs, rows[2]),
                                  (schema.metrics, metrics)):
                conn.execute(insert(table), values)
    analyze(store)
    print(f"  seeded {big_runs + small * SMALL_RUNS:,} runs × {METRICS} metrics in {len(groups):,} experiments "
          f"in {time.perf_counter() - started:.1f} s", file=sys.stderr)


def _provenance_id(store: Store) -> str:
    """A provenance record of the store's, or a new one of this machine, as a runner records it."""
    with store.engine.begin() as conn:
        found = conn.scalar(schema.provenance.select().with_only_columns(schema.provenance.c.id).limit(1))
        return found or save_provenance(conn, {**machine(), "backend": "local"}, {})


def analyze(store: Store) -> None:
    """Refresh the planner's statistics, as autovacuum / a periodic ANALYZE would."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")


def best_of(times: int, action: Callable[[], object]) -> tuple[float, float]:
    """Median wall time and median CPU time of this process for ``action``, after one warm-up call.

    The CPU time is what the code costs when other processes share the machine; for the CLI and
    for PostgreSQL (a server process) it leaves out the time spent elsewhere.
    """
    action()
    walls, cpus = [], []
    for _ in range(times):
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def cli(url: str, *args: str) -> None:
    exe = Path(sys.executable).with_name("kubebench")
    subprocess.run([str(exe), *args, "--store", url], check=True, stdout=subprocess.DEVNULL)


FIGURES = (  # key, label, target (None: for information; a str: the figures' key of it), whether higher is better
    ("ingest_batched", "ingest, batches of 100 runs (metric rows/s)", 10_000, True),
    ("ingest_per_run", "ingest, one transaction per run (metric rows/s)", None, True),
    ("record_big", "recording a run of a 10,000-run experiment, the store's only one, after ANALYZE "
                   "(ms; target: 2× the per-run ingest above)", "record_big_target", False),
    ("ingest_seeded", "ingest, one transaction per run, with the runs below stored and analysed (metric rows/s)", None, True),
    ("results", "results of 10,000 runs as JSON, in process (s wall / CPU)", 1.0, False),
    ("listing", "listing 10,000 experiments with counts, in process (s wall / CPU)", 0.5, False),
    ("cli_results", "`kubebench results big -f json -o FILE` (s wall)", None, False),
    ("cli_listing", "`kubebench experiments --limit 10000 -f json` (s wall)", None, False),
)


def report(rows: list[tuple[str, dict]], total_runs: int) -> None:
    print(f"\nstore at scale: {total_runs:,} runs × {METRICS} metrics stored; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"| figure | target | {' | '.join(backend for backend, _ in rows)} |")
    print("| --- | --- |" + " --- |" * len(rows))
    verdicts = []
    for key, label, target, higher in FIGURES:
        cells = []
        for _, figures in rows:
            goal = figures[target] if isinstance(target, str) else target
            cells.append(_cell(key, figures[key], goal))
            if goal is not None:
                value = figures[key][0] if isinstance(figures[key], tuple) else figures[key]
                verdicts.append(value >= goal if higher else value < goal)
        shown = ("–" if target is None else "see cells" if isinstance(target, str)
                 else f"≥ {target:,}" if higher else f"< {target:g} s")
        print(f"| {label} | {shown} | {' | '.join(cells)} |")
    print("targets: " + ("PASS" if all(verdicts) else "FAIL (wall times; see the CPU times on a busy machine)"))


def _cell(key: str, value: object, goal: float | None) -> str:
    if key == "record_big":
        return f"{value * 1000:.2f} (target < {goal * 1000:.2f})"
    if isinstance(value, tuple):
        return f"{value[0]:.2f}" if key.startswith("cli") else f"{value[0]:.3f} / {value[1]:.3f}"
    return f"{value:,.0f}"


if __name__ == "__main__":
    main()
