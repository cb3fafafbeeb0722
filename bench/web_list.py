"""The dashboard's experiments list at scale: 10,000 experiments in the store, served over HTTP.

Times, through a real uvicorn server on loopback with an httpx client (so HTTP parsing, routing,
the SQL and JSON are all in the figure):

- ``GET /api/experiments`` — the first page, a page filtered by state and backend, a search (``q``),
  and a deep page (offset 9,000); target p95 < 100 ms;
- ``GET /`` — the page shell (its data comes from the API); target p95 < 300 ms.

The store holds 10,000 experiments of 9 counted runs each (90,000 runs) in a mix of states, built
with bulk inserts. SQLite by default; ``--store URL`` for another database (e.g. PostgreSQL).

    .venv/bin/python bench/web_list.py [--experiments 10000] [--requests 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from sqlalchemy import insert

from kubebench.settings import settings as make_settings
from kubebench.store import schema
from kubebench.store.records import experiment_state
from kubebench.store.store import Store, open_store

RUNS = 9
# run statuses of an experiment, cycled: most succeeded, some failed, running, pending, cancelled
MIXES = (["succeeded"] * 9,) * 6 + (
    ["succeeded"] * 8 + ["failed"], ["succeeded"] * 4 + ["running"] + ["pending"] * 4, ["pending"] * 9,
    ["succeeded"] * 3 + ["cancelled"] * 6,
)
BACKENDS = ("local", "local", "local", "kubernetes")


def seed(store: Store, experiments: int) -> None:
    """``experiments`` experiments of ``RUNS`` runs each, in chunks of 500 per transaction."""
    started = time.perf_counter()
    spec = "name: bench\njob: {command: [python, train.py]}\nparameters: {bs: [8, 16]}\nmetrics: [{name: v}]\n"
    for chunk in range(0, experiments, 500):
        exps, trials, runs = [], [], []
        for i in range(chunk, min(chunk + 500, experiments)):
            exp_id = f"exp-{i:05d}"
            exps.append({"id": exp_id, "name": f"bench-{i % 50}", "backend": BACKENDS[i % len(BACKENDS)],
                         "source": "bench.yaml", "spec_text": spec, "job_fingerprint": "f" * 16,
                         "created_at": 1.7e9 + i * 60.0, "updated_at": 1.7e9 + i * 60.0,
                         "state": experiment_state(MIXES[i % len(MIXES)])})
            trials.append({"id": f"{exp_id}-t", "experiment_id": exp_id, "index": 0, "params": {"bs": 8}})
            for k, status in enumerate(MIXES[i % len(MIXES)]):
                runs.append({"id": f"{exp_id}-r{k}", "experiment_id": exp_id, "trial_id": f"{exp_id}-t",
                             "repeat": k, "warmup": False, "status": status, "reason": "", "log_tail": "",
                             "info": {}, "attempts": 1, "path": "", "metric_values": {"v": float(k)}})
        with store.engine.begin() as conn:
            for table, values in ((schema.experiments, exps), (schema.trials, trials), (schema.runs, runs)):
                conn.execute(insert(table), values)
    with store.engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    print(f"seeded {experiments:,} experiments × {RUNS} runs in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)


def timings(client: httpx.Client, path: str, requests: int) -> tuple[float, float, float, int]:
    """p50 and p95 of ``requests`` GETs of ``path`` (ms) after 5 warm-up ones, the CPU time per
    request of this process (server and client: what a request costs, however busy the machine),
    and the answer's size."""
    for _ in range(5):
        answer = client.get(path)
        answer.raise_for_status()
    took = []
    cpu = time.process_time()
    for _ in range(requests):
        start = time.perf_counter()
        answer = client.get(path)
        took.append((time.perf_counter() - start) * 1000)
        answer.raise_for_status()
    cpu_ms = (time.process_time() - cpu) * 1000 / requests
    took.sort()
    return statistics.median(took), took[max(0, int(len(took) * 0.95) - 1)], cpu_ms, len(answer.content)


CASES = (  # label, path, target p95 (ms)
    ("API first page (50)", "/api/experiments", 100),
    ("API filtered: state=failed&backend=local", "/api/experiments?state=failed&backend=local", 100),
    ("API search q=00042", "/api/experiments?q=00042", 100),
    ("API search q=bench-7 (1,000 hits)", "/api/experiments?q=bench-7", 100),
    ("API deep page offset=9000", "/api/experiments?offset=9000&limit=50", 100),
    ("page shell GET /", "/", 300),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--store", default=None, help="store URL (default: a new SQLite file)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kubebench-web-bench-"))
    try:
        config = make_settings(home=folder, store=args.store or f"sqlite:///{folder / 'bench.db'}")
        store = open_store(config.store_url)
        seed(store, args.experiments)
        rows = serve_and_measure(store, config, args.requests)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(rows, args.experiments, args.requests)


def serve_and_measure(store: Store, config, requests: int) -> list[tuple]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "web"))
    from web_support import serving  # the tests' uvicorn-in-a-thread helper

    from kubebench.web.app import make_app

    rows = []
    with serving(make_app(store, config, token="bench")) as url, httpx.Client(base_url=url) as client:
        total = client.get("/api/experiments").json()["total"]
        assert total == store_count(store), total
        for label, path, target in CASES:
            p50, p95, cpu, size = timings(client, path, requests)
            rows.append((label, p50, p95, cpu, size, target))
    return rows


def store_count(store: Store) -> int:
    with store.engine.connect() as conn:
        return conn.exec_driver_sql("SELECT count(*) FROM experiments").scalar_one()


def report(rows, experiments: int, requests: int) -> None:
    one, five, _ = os.getloadavg()
    print(f"\nweb list: {experiments:,} experiments × {RUNS} runs; {requests} requests per case over HTTP "
          f"(uvicorn + httpx, one client); load average {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs")
    print("| request | p50 ms | p95 ms | CPU ms/request | bytes | target p95 |")
    print("| --- | --- | --- | --- | --- | --- |")
    for label, p50, p95, cpu, size, target in rows:
        verdict = "ok" if p95 < target else "MISSED"
        print(f"| {label} | {p50:.1f} | {p95:.1f} | {cpu:.1f} | {size:,} | < {target} ms ({verdict}) |")


if __name__ == "__main__":
    main()
