"""Every read endpoint of the dashboard on a 600-experiment store, as anyone who reaches it may ask
(no token): server CPU, wall time and size of each answer, against a budget (review 2026-12-02 N4).

The store holds one series, ``long``: ``--experiments`` experiments × ``--trials`` trials × 3 runs
(the review's ``mkseries.py``: a parameter ``bs`` swept, the newest experiment 20% slower). ``kubebench
serve`` runs in a process of its own; each request's server CPU is read from ``/proc/<pid>/stat``
around it, so the figures hold on a busy machine where wall times do not. Requests that compute (a
series' history, sparklines, the runs table) are asked cold (the server's caches empty) and again
warm, then with what a client chooses to make them compute again (another ``trial=``, a metric the
series does not have, a trial that matches nothing, more sparkline ids than allowed).

    PYTHONPATH=src python bench/web_reads.py [--experiments 600] [--trials 20] [--home DIR]

``--home`` reuses (or makes, the first time) a store there. Exit status 1 when an answer is over its budget.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

#: Server CPU one answer may take (s); the first history of a series (computed, then kept) and the
#: server's first comparison (it imports SciPy) have their own.
BUDGET_S = 1.0
BUDGET_COLD_HISTORY_S = 3.0
#: Bytes one answer may be (a series' every point, ``points=true``, is the largest).
BUDGET_BYTES = 32 * 2**20


def seed(home: Path, experiments: int, trials: int) -> None:
    """Series ``long`` as the review's ``mkseries.py`` makes it."""
    home.mkdir(parents=True, exist_ok=True)
    store = open_store(f"sqlite:///{home / 'kubebench.db'}")
    rnd = random.Random(1)
    start = time.time() - experiments * 3600
    for i in range(experiments):
        level = 100.0 if i < experiments - 1 else 80.0
        values = {"x": [[rnd.gauss(level, 1) for _ in range(3)] for _ in range(trials)]}
        params = [{"bs": b, "mode": f"m{b}"} for b in range(trials)]
        store_experiment(store, f"s-{i:05d}", "long", values, params, created_at=start + i * 3600,
                         labels={"version": f"1.{i}", "commit": f"c{i:05d}"})
    store.engine.dispose()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get(port: int, pid: int, path: str) -> tuple[int, float, float, int]:
    """(status, wall s, server CPU s, bytes) of one GET."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    before, start = cpu(pid), time.perf_counter()
    conn.request("GET", path)
    answer = conn.getresponse()
    body = answer.read()
    wall = time.perf_counter() - start
    conn.close()
    return answer.status, wall, cpu(pid) - before, len(body)


def requests(experiments: int) -> list[tuple[str, str, float]]:
    """(what, path, CPU budget) in the order asked: each cold request before its warm twin."""
    newest, some = f"s-{experiments - 1:05d}", f"s-{experiments // 2:05d}"
    fifty = ",".join(f"s-{i:05d}" for i in range(experiments - 50, experiments))
    older = ",".join(f"s-{i:05d}" for i in range(experiments - 100, experiments - 50))
    run = "{run}"  # filled in once the store is read
    return [
        ("config", "/api/config", BUDGET_S),
        ("experiments, first page", "/api/experiments", BUDGET_S),
        ("experiments, 500 a page", "/api/experiments?limit=500", BUDGET_S),
        ("experiment", f"/api/experiments/{newest}", BUDGET_S),
        ("experiment events (ended)", f"/api/experiments/{newest}/events", BUDGET_S),
        ("experiment serving view", f"/api/experiments/{newest}/serving", BUDGET_S),
        ("experiment phases", f"/api/experiments/{newest}/phases", BUDGET_S),
        ("compare, first (imports scipy once)", f"/api/compare?a={some}&b={newest}", BUDGET_COLD_HISTORY_S),
        ("compare", f"/api/compare?a={some}&b={newest}", BUDGET_S),
        ("run", f"/api/runs/{run}", BUDGET_S),
        ("run telemetry", f"/api/runs/{run}/telemetry", BUDGET_S),
        ("run timeline", f"/api/runs/{run}/timeline", BUDGET_S),
        ("run files (no folder: 404)", f"/api/runs/{run}/files", BUDGET_S),
        ("history, cold", "/api/history/long", BUDGET_COLD_HISTORY_S),
        ("history, warm", "/api/history/long", BUDGET_S),
        ("history, trial=bs=1", "/api/history/long?trial=bs%3D1", BUDGET_S),
        ("history, trial=bs=2", "/api/history/long?trial=bs%3D2", BUDGET_S),
        ("history, trial matching none", "/api/history/long?trial=nonexistent%3D1", BUDGET_S),
        ("history, a metric it lacks", "/api/history/long?metric=nope", BUDGET_S),
        ("history, every point", "/api/history/long?points=true", BUDGET_S),
        ("sparklines, 50 ids, cold", f"/api/sparklines?points=50&ids={fifty}", BUDGET_S),
        ("sparklines, 50 ids, warm", f"/api/sparklines?points=50&ids={fifty}", BUDGET_S),
        ("sparklines, 50 other ids", f"/api/sparklines?points=50&ids={older}", BUDGET_S),
        ("sparklines, 51 ids (422)", f"/api/sparklines?ids={fifty},s-00000", BUDGET_S),
        ("runs table, default", "/api/table", BUDGET_S),
        ("runs table, limit=2000", "/api/table?limit=2000", BUDGET_S),
        ("runs table, a query", "/api/table?limit=2000&q=params.bs%20%3E%3D%2010", BUDGET_S),
        ("/metrics", "/metrics", BUDGET_S),
        ("page: list", "/", BUDGET_S),
        ("page: history", "/history/long", BUDGET_S),
        ("page: runs table", "/table", BUDGET_S),
        ("page: experiment", f"/experiments/{newest}", BUDGET_S),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiments", type=int, default=600)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--home", type=Path, default=None, help="a store to reuse (made there if missing)")
    args = parser.parse_args()
    scratch = None if args.home else Path(tempfile.mkdtemp(prefix="kb-web-reads-"))
    home = args.home or scratch
    assert home is not None
    if not (home / "kubebench.db").exists():
        started = time.perf_counter()
        seed(home, args.experiments, args.trials)
        print(f"seeded {args.experiments} experiments × {args.trials} trials × 3 runs in "
              f"{time.perf_counter() - started:.0f} s")
    run_id = open_store(f"sqlite:///{home / 'kubebench.db'}").runs(f"s-{args.experiments - 1:05d}")[0].run_id
    port = free_port()
    env = {**os.environ, "KUBEBENCH_HOME": str(home)}
    server = subprocess.Popen([sys.executable, "-m", "kubebench", "serve", "--port", str(port), "--read-only"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    over = 0
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        print(f"load average {os.getloadavg()[0]:.1f}; budget {BUDGET_S} s of server CPU "
              f"({BUDGET_COLD_HISTORY_S} s for a series' first history), {BUDGET_BYTES // 2**20} MiB\n")
        print("| request | status | server CPU (s) | wall (s) | size (KB) | within budget |\n|---|---|---|---|---|---|")
        for what, path, budget in requests(args.experiments):
            status, wall, spent, size = get(port, server.pid, path.replace("{run}", run_id))
            fine = spent <= budget and size <= BUDGET_BYTES and status < 500
            over += not fine
            print(f"| {what} | {status} | {spent:.2f} | {wall:.2f} | {size / 1024:,.0f} | {'yes' if fine else 'NO'} |")
    finally:
        server.terminate()
        server.wait()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
