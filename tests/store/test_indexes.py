"""The queries run whenever a run is recorded read an index, whatever the planner's statistics say.

A store whose one experiment holds every run is where statistics mislead: once ANALYZE (or PRAGMA
optimize) has recorded that an experiment id matches all the rows, a plan that needs a table read
per index entry loses to a full scan, and a scan for a status that no run has reads every row
(recording a run of a 10,000-run experiment took 22 ms instead of 0.5 ms; bench/store_scale.py
times it). The plans are checked, not the times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import event

from kubebench.store.records import RunResult
from kubebench.store.store import Store, open_store

from store_support import begin_experiment

RUNS = 400  # 2 trials × 200 repeats: enough for ANALYZE to see that one experiment holds them all


def _one_big_experiment(url: str, analyze: str) -> tuple[Store, list[str]]:
    store = open_store(url)
    plan = begin_experiment(store, "big", repeats=RUNS // 2)
    ids = [r.id for r in plan.runs]
    store.finish_runs([RunResult(run_id=i, status="succeeded", metrics={"ips": 1.0}, finished_at=time.time())
                       for i in ids])
    with store.engine.begin() as conn:
        conn.exec_driver_sql(analyze)
        assert conn.exec_driver_sql("SELECT stat FROM sqlite_stat1 WHERE tbl = 'runs'").all()  # statistics were taken
    store.engine.dispose()  # new connections, which read the statistics
    return store, ids


def _statements(store: Store, action: Callable[[], object]) -> list[tuple[str, tuple]]:
    """The SQL statements that ``action`` runs on the store, each with its (first) parameters."""
    seen: dict[str, tuple] = {}

    def capture(conn, cursor, statement, parameters, context, executemany) -> None:
        seen.setdefault(statement, tuple(parameters[0] if executemany else parameters))

    event.listen(store.engine, "before_cursor_execute", capture)
    try:
        action()
    finally:
        event.remove(store.engine, "before_cursor_execute", capture)
    return [(s, p) for s, p in seen.items() if s.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "INSERT"))]


def _table_scans(store: Store, statements: list[tuple[str, tuple]]) -> dict[str, list[str]]:
    """Statements whose plan reads the whole ``runs`` table or a whole index of it, with that plan."""
    scans = {}
    with store.engine.connect() as conn:
        for statement, parameters in statements:
            plan = [row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)]
            if any(step.startswith("SCAN runs") for step in plan):
                scans[" ".join(statement.split())] = plan
    return scans


@pytest.mark.parametrize("analyze", ["ANALYZE", "PRAGMA optimize=0x10002"])
def test_recording_a_run_reads_indexes_after_the_statistics_are_taken(tmp_path: Path, analyze: str) -> None:
    store, ids = _one_big_experiment(f"sqlite:///{tmp_path / 'kb.db'}", analyze)

    def a_runner_resumes_and_records_a_run() -> None:
        store.interrupt_running("big", "interrupted")
        store.succeeded_run_ids("big")
        store.start_run(ids[0], "/runs/0")
        store.finish_run(RunResult(run_id=ids[0], status="failed", reason="x", finished_at=time.time()))

    statements = _statements(store, a_runner_resumes_and_records_a_run)
    assert any("EXISTS" in s for s, _ in statements)  # the experiment's state was refreshed
    assert _table_scans(store, statements) == {}
    assert store.experiment("big").state == "failed"  # and the state is still right
    store.engine.dispose()


def test_the_listings_run_counts_need_no_sort(tmp_path: Path) -> None:
    store, _ = _one_big_experiment(f"sqlite:///{tmp_path / 'kb.db'}", "ANALYZE")
    statements = _statements(store, lambda: (store.experiments(), store.experiment_page()))
    counts = [(s, p) for s, p in statements if "count(*)" in s and "FROM runs" in s]
    assert counts
    with store.engine.connect() as conn:
        for statement, parameters in counts:
            plan = [row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)]
            assert "USE TEMP B-TREE FOR GROUP BY" not in plan, (statement, plan)
            assert any("USING COVERING INDEX ix_runs_experiment_status_warmup_id" in step for step in plan), plan
    store.engine.dispose()
