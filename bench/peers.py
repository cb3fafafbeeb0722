"""kubebench's own cost beside what users would pick instead: Hydra's multirun and MLflow's SQLite store.

1. Overhead per run and fixed start-up cost: ``kubebench run`` of a Process spec whose job is
   ``python -c pass`` and a Hydra multirun (basic launcher) whose task starts the same command, each
   as a whole command with 1 and with ``--runs`` runs, beside the same processes started directly.
   Per round: slope = (T(N) - T(1)) / (N - 1); added per run = slope - one bare process; fixed cost
   = T(1) - slope (what the command costs before and after its runs). Target for kubebench's fixed
   cost: ≤ 0.4 s.
2. Reading 10,000 runs back (10 metrics, 3 parameters each; one experiment), whole commands in fresh
   interpreters: ``kubebench results ID -f json -o FILE`` against ``mlflow.search_runs`` (a list of
   Run objects, nothing exported: kinder to MLflow).
3. Recording a run, in a fresh interpreter each round, timed per run: kubebench's store
   (``start_run`` + ``finish_run`` with 10 metrics, as the runner records a run) against MLflow's
   client (``create_run`` + ``log_batch`` of 10 metrics and 3 parameters + ``set_terminated``), on
   an empty store and on the store of 10,000 runs (kubebench redoes runs of that experiment;
   MLflow adds runs to it). Each tool on its default SQLite settings (kubebench: WAL, no fsync per
   commit; MLflow: SQLAlchemy's defaults, an fsync per commit).

Every figure is the median over rounds in which the arms alternate (the order flips every round),
pinned to one CPU as ``bench/harness.py`` is, with kubebench's bytecode compiled. Wall times are
the figures; the CPU times (of the command and everything it waited for) are shown beside them,
since on a shared machine they move less. Hydra and MLflow run from their own environment,
``bench/.venv-peers``, made on first use from pinned versions (never the project's dependencies).
Seeding is not timed: kubebench's store by bulk inserts (``store_scale.seed``), MLflow's by copying
the rows of one run logged through its API.

    .venv/bin/python bench/peers.py [--rounds 5] [--runs 20] [--cpus last]     (make bench-peers)
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchlib import load_line, machine_line, pin, pinned_venv

import kubebench

BENCH = Path(__file__).resolve().parent
PEERS_VENV = BENCH / ".venv-peers"
PEERS_PYTHON = PEERS_VENV / "bin" / "python"
PEER_PACKAGES = ("hydra-core==1.3.8", "omegaconf==2.3.1", "mlflow-skinny==3.17.2", "sqlalchemy==2.1.9",
                 "alembic==1.20.1")
PYTHON = sys.executable
KUBEBENCH = [PYTHON, "-m", "kubebench"]
TRIALS_READ = 100

# The task starts the interpreter of the bare arm (and of kubebench's jobs), named by BARE_PYTHON.
HYDRA_APP = """
import os, subprocess
import hydra

@hydra.main(version_base=None, config_path=None, config_name=None)
def main(cfg) -> None:
    subprocess.run([os.environ["BARE_PYTHON"], "-c", "pass"], check=True, start_new_session=True)

main()
"""

# argv: store URL, experiment id, runs to record. Prints the median seconds per recorded run.
KUBEBENCH_RECORD = """
import statistics, sys, time
sys.path.insert(0, sys.argv[4])
import store_scale
from kubebench.store.records import RunResult
from kubebench.store.store import open_store

store = open_store(sys.argv[1])
exp_id, n = sys.argv[2], int(sys.argv[3])
found = [r.run_id for r in store.runs(exp_id, logs=False)[:n]] if exp_id == "big" else []
run_ids = found or store_scale.plan(store, exp_id, 1, n)
times = []
for i, run_id in enumerate(run_ids):
    started = time.perf_counter()
    store.start_run(run_id, f"/runs/{run_id}")
    store.finish_run(RunResult(run_id=run_id, status="succeeded", exit_code=0, finished_at=time.time(),
                               metrics={f"m{k}": float(i + k) for k in range(10)}))
    times.append(time.perf_counter() - started)
print(statistics.median(times))
"""

# argv: tracking URI, experiment name, runs to record. Prints the median seconds per recorded run.
MLFLOW_RECORD = """
import statistics, sys, time
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

client = MlflowClient(tracking_uri=sys.argv[1])
found = client.get_experiment_by_name(sys.argv[2])
exp_id = found.experiment_id if found else client.create_experiment(sys.argv[2])
times = []
for i in range(int(sys.argv[3])):
    started = time.perf_counter()
    run = client.create_run(exp_id)
    now = int(time.time() * 1000)
    client.log_batch(run.info.run_id, metrics=[Metric(f"m{k}", float(i + k), now, 0) for k in range(10)],
                     params=[Param("bs", str(8 * (i % 4 + 1))), Param("lr", "0.1"), Param("workers", str(i % 8 + 1))])
    client.set_terminated(run.info.run_id, "FINISHED")
    times.append(time.perf_counter() - started)
print(statistics.median(times))
"""

# argv: tracking URI, experiment name. What a user runs to get an experiment's runs back.
MLFLOW_READ = """
import sys, mlflow
mlflow.set_tracking_uri(sys.argv[1])
runs = mlflow.search_runs(experiment_names=[sys.argv[2]], output_format="list", max_results=100_000)
assert len(runs) == int(sys.argv[3]), len(runs)
"""

# argv: tracking URI, experiment name, runs. One run through MLflow's API, then copies of its rows
# (every table keyed by run_uuid) with new ids and metric values: the shape of what the API writes.
MLFLOW_SEED = """
import random, sqlite3, sys, uuid
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

client = MlflowClient(tracking_uri=sys.argv[1])
exp_id = client.create_experiment(sys.argv[2])
run = client.create_run(exp_id)
client.log_batch(run.info.run_id, metrics=[Metric(f"m{k}", float(k + 1), 1, 0) for k in range(10)],
                 params=[Param("bs", "8"), Param("lr", "0.1"), Param("workers", "1")])
client.set_terminated(run.info.run_id, "FINISHED")
db = sqlite3.connect(sys.argv[1].removeprefix("sqlite:///"))
noise = random.Random(0)
new_ids = [uuid.uuid4().hex for _ in range(int(sys.argv[3]) - 1)]
with db:
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})")]
        if "run_uuid" not in columns:
            continue
        rows = db.execute(f"SELECT * FROM {table} WHERE run_uuid = ?", (run.info.run_id,)).fetchall()
        copies = []
        for new_id in new_ids:
            for row in rows:
                values = dict(zip(columns, row), run_uuid=new_id)
                if table in ("metrics", "latest_metrics"):
                    values["value"] *= noise.gauss(1, 0.03)
                copies.append(tuple(values[c] for c in columns))
        db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", copies)
"""


@dataclass(frozen=True)
class Timed:
    wall: float
    cpu: float


def timed(argv: list[str], cwd: Path | None = None) -> Timed:
    """Wall time of a whole command, and the CPU time of it and of everything it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd,
                   env={**os.environ, "BARE_PYTHON": PYTHON})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Timed(wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def printed(argv: list[str]) -> float:
    """The number a command prints last (a recorder's median seconds per run)."""
    done = subprocess.run(argv, check=True, capture_output=True, text=True)
    return float(done.stdout.split()[-1])


def ensure_peers() -> None:
    """bench/.venv-peers with Hydra and MLflow (pinned), made once."""
    pinned_venv(PEERS_VENV, PEER_PACKAGES)


# 1. Overhead per run and fixed cost ------------------------------------------------------------


def orchestration(folder: Path, runs: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per round and tool: added ms per run, fixed cost and the one-run command (s), wall and CPU."""
    spec = folder / "noop.yaml"
    spec.write_text('name: noop\njob:\n  kind: Process\n  command: [python, -c, "pass"]\n')
    app = folder / "hydra_app.py"
    app.write_text(HYDRA_APP)
    store = f"sqlite:///{folder / 'orchestration.db'}"
    sweep = folder / "hydra-sweeps"
    commands = {
        "kubebench": lambda n: timed([*KUBEBENCH, "run", str(spec), "--repeats", str(n), "--store", store]),
        "hydra": lambda n: timed([str(PEERS_PYTHON), str(app), "-m", f"+i=range(0,{n})",
                                  f"hydra.sweep.dir={sweep}/{time.monotonic_ns()}"], cwd=folder),
    }
    found: dict[str, dict[str, list[float]]] = {tool: {} for tool in commands}
    for tool in commands:
        commands[tool](1)  # warm-up: caches, the store's file
    for i in range(rounds):
        t: dict[tuple[str, int], Timed] = {}
        bare = Timed(0.0, 0.0)
        arms = [("kubebench", 1), ("kubebench", runs), ("hydra", 1), ("hydra", runs), ("bare", runs)]
        for tool, n in (arms if i % 2 == 0 else arms[::-1]):
            if tool == "bare":
                bare = sum_timed([timed([PYTHON, "-c", "pass"]) for _ in range(n)])
            else:
                t[tool, n] = commands[tool](n)
        for tool in commands:
            for clock in ("wall", "cpu"):
                one, many, base = getattr(t[tool, 1], clock), getattr(t[tool, runs], clock), getattr(bare, clock)
                slope = (many - one) / (runs - 1)
                add(found[tool], f"added_ms_{clock}", 1000 * (slope - base / runs))
                add(found[tool], f"fixed_s_{clock}", one - slope)
                add(found[tool], f"one_s_{clock}", one)
        print(f"  orchestration round {i}: " + "; ".join(
            f"{tool} +{found[tool]['added_ms_wall'][-1]:.0f} ms/run, fixed {found[tool]['fixed_s_wall'][-1]:.2f} s"
            for tool in commands) + f"  ({load_line()})", flush=True)
    return found


def sum_timed(items: list[Timed]) -> Timed:
    return Timed(sum(t.wall for t in items), sum(t.cpu for t in items))


def add(figures: dict[str, list[float]], key: str, value: float) -> None:
    figures.setdefault(key, []).append(value)


# 2. Reading 10,000 runs back -------------------------------------------------------------------


def seed_stores(folder: Path, runs: int) -> tuple[str, str]:
    """A kubebench store and an MLflow store, each holding one experiment ``big`` of ``runs`` runs."""
    import store_scale

    from kubebench.store.store import open_store

    url = f"sqlite:///{folder / 'kubebench-big.db'}"
    store = open_store(url)
    store_scale.seed(store, runs, big_trials=TRIALS_READ, big_runs=runs)
    store.engine.dispose()
    tracking = f"sqlite:///{folder / 'mlflow-big.db'}"
    started = time.perf_counter()
    subprocess.run([str(PEERS_PYTHON), "-c", MLFLOW_SEED, tracking, "big", str(runs)], check=True,
                   capture_output=True)
    print(f"  seeded MLflow with {runs:,} runs in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return url, tracking


def read_back(folder: Path, url: str, tracking: str, rounds: int, runs: int) -> dict[str, dict[str, list[float]]]:
    out = folder / "runs.json"
    commands = {
        "kubebench": lambda: timed([*KUBEBENCH, "results", "big", "-f", "json", "-o", str(out), "--store", url]),
        "mlflow": lambda: timed([str(PEERS_PYTHON), "-c", MLFLOW_READ, tracking, "big", str(runs)]),
    }
    # no warm-up round: seeding has just read both stores, and MLflow takes a minute or more here
    return alternate(commands, rounds, lambda t: {"s_wall": t.wall, "s_cpu": t.cpu}, warm_up=False)


# 3. Recording a run ----------------------------------------------------------------------------


def empty_stores(folder: Path) -> tuple[Path, Path]:
    """Empty stores of each tool at its current schema, copied for every round (MLflow's migrations
    take seconds, and a new store is not what is measured)."""
    from kubebench.store.store import open_store

    kubebench_db, mlflow_db = folder / "kubebench-empty.db", folder / "mlflow-empty.db"
    open_store(f"sqlite:///{kubebench_db}").engine.dispose()
    subprocess.run([str(PEERS_PYTHON), "-c", "import sys; from mlflow.tracking import MlflowClient; "
                    "MlflowClient(tracking_uri=sys.argv[1]).search_experiments()", f"sqlite:///{mlflow_db}"],
                   check=True, capture_output=True)
    return kubebench_db, mlflow_db


def record(folder: Path, url: str, tracking: str, rounds: int, runs: int) -> dict[str, dict[str, list[float]]]:
    kubebench_empty, mlflow_empty = empty_stores(folder)

    def fresh(template: Path) -> str:
        copy = folder / f"round-{time.monotonic_ns()}-{template.name}"
        shutil.copy(template, copy)
        return f"sqlite:///{copy}"

    commands = {
        "kubebench_empty": lambda: printed([PYTHON, "-c", KUBEBENCH_RECORD, fresh(kubebench_empty), "new", str(runs),
                                            str(BENCH)]),
        "mlflow_empty": lambda: printed([str(PEERS_PYTHON), "-c", MLFLOW_RECORD, fresh(mlflow_empty), "new", str(runs)]),
        "kubebench_big": lambda: printed([PYTHON, "-c", KUBEBENCH_RECORD, url, "big", str(runs), str(BENCH)]),
        "mlflow_big": lambda: printed([str(PEERS_PYTHON), "-c", MLFLOW_RECORD, tracking, "big", str(runs)]),
    }
    return alternate(commands, rounds, lambda seconds: {"ms": 1000 * seconds}, warm_up=False)


def alternate(commands: dict, rounds: int, figures, warm_up: bool = True) -> dict[str, dict[str, list[float]]]:
    """Each command once per round, in an order that flips every round; ``figures`` of each result."""
    if warm_up:
        for command in commands.values():
            command()
    found: dict[str, dict[str, list[float]]] = {name: {} for name in commands}
    for i in range(rounds):
        for name in (list(commands) if i % 2 == 0 else list(reversed(commands))):
            for key, value in figures(commands[name]()).items():
                add(found[name], key, value)
    return found


# The table ------------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values)


def rows(orch: dict, read: dict, rec: dict, runs: int, read_runs: int) -> list[tuple[str, str, str, str]]:
    k, h = orch["kubebench"], orch["hydra"]
    kr, mr = read["kubebench"], read["mlflow"]

    def pair(a: dict, b: dict, key: str, unit: str, digits: int) -> tuple[str, str, str]:
        wall_a, wall_b = median(a[f"{key}_wall"]), median(b[f"{key}_wall"])
        cpu_a, cpu_b = median(a[f"{key}_cpu"]), median(b[f"{key}_cpu"])
        return (f"{wall_a:.{digits}f} {unit} (CPU {cpu_a:.{digits}f})", f"{wall_b:.{digits}f} {unit} (CPU {cpu_b:.{digits}f})",
                f"{wall_b / wall_a:.1f}×")

    fixed = median(k["fixed_s_wall"])
    table = [
        (f"added per run to a bare `python -c pass` ({runs} runs, local backend vs Hydra's basic launcher)",
         *pair(k, h, "added_ms", "ms", 0)),
        (f"fixed cost of one command (T(1 run) − slope); target for kubebench ≤ 0.4 s: "
         f"{'PASS' if fixed <= 0.4 else 'FAIL'}", *pair(k, h, "fixed_s", "s", 2)),
        ("whole command, one run", *pair(k, h, "one_s", "s", 2)),
        (f"read {read_runs:,} runs back, whole command (`kubebench results -f json -o` vs `mlflow.search_runs`)",
         *pair(kr, mr, "s", "s", 2)),
    ]
    for store, label in (("empty", "an empty store"), ("big", f"a store of {read_runs:,} runs")):
        a, b = median(rec[f"kubebench_{store}"]["ms"]), median(rec[f"mlflow_{store}"]["ms"])
        table.append((f"record a run (start + 10 metrics + end) in {label}", f"{a:.2f} ms", f"{b:.2f} ms", f"{b / a:.1f}×"))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="runs of the many-run commands, and runs recorded per round")
    parser.add_argument("--read-runs", type=int, default=10_000, help="runs of the experiment read back")
    parser.add_argument("--read-rounds", type=int, default=3, help="rounds of reading them back")
    parser.add_argument("--cpus", default="last", help="CPUs to pin to: a list ('1', '0,1'), 'last', or 'none'")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds, 4 runs, 1,000 runs read")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.runs, args.read_runs, args.read_rounds = 2, 4, 1_000, 2
    ensure_peers()
    pinned = pin(args.cpus)
    print(machine_line(pinned), flush=True)
    compileall.compile_dir(Path(kubebench.__file__).parent, quiet=1)
    folder = Path(tempfile.mkdtemp(prefix="kubebench-peers-"))
    started = time.monotonic()
    try:
        orch = orchestration(folder, args.runs, args.rounds)
        url, tracking = seed_stores(folder, args.read_runs)
        read = read_back(folder, url, tracking, args.read_rounds, args.read_runs)
        rec = record(folder, url, tracking, args.rounds, args.runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\n| figure (median of {args.rounds} alternated rounds, {args.read_rounds} for reading back; wall) "
          "| kubebench | Hydra / MLflow | peer / kubebench |")
    print("| --- | --- | --- | --- |")
    for row in rows(orch, read, rec, args.runs, args.read_runs):
        print("| " + " | ".join(row) + " |")
    versions = json.dumps(PEER_PACKAGES[:3])
    print(f"\npeers: {versions}; pinned to CPU {','.join(map(str, pinned))}; {time.monotonic() - started:.0f} s; "
          f"at the end: {load_line()}")


if __name__ == "__main__":
    main()
