"""Provenance, single runs, deletion and query counts of the store (SQLite and PostgreSQL)."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import event, func, select

from kubebench.errors import NotFoundError
from kubebench.store import schema
from kubebench.store.records import RunResult

ENV_A = {"format_version": 1, "host": "a", "cpu_model": "X", "packages": {"torch": "2.3.0"}}
ENV_B = {**ENV_A, "host": "b"}


def finish(store, run_id: str, provenance: dict, metrics: dict | None = None) -> None:
    store.start_run(run_id, f"s3://bucket/exp-1/{run_id}")
    store.finish_run(RunResult(run_id=run_id, status="succeeded", metrics=metrics or {"ips": 1.0},
                               finished_at=time.time(), provenance=provenance))


def count_rows(store, table) -> int:
    with store.engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(table))


def test_provenance_is_stored_once_per_environment_and_returned_with_each_run(store, begin) -> None:
    plan = begin(store)
    ids = [r.id for r in plan.runs]
    for run_id, env in zip(ids, (ENV_A, ENV_A, ENV_A, ENV_B)):
        finish(store, run_id, env)
    runs = {r.run_id: r for r in store.runs("exp-1")}
    assert runs[ids[0]].provenance == ENV_A and runs[ids[3]].provenance == ENV_B
    assert count_rows(store, schema.provenance) == 2
    assert store.environments("exp-1") == [(ENV_A, 3), (ENV_B, 1)]


def test_a_run_is_found_by_id_with_its_storage_folder(store, begin) -> None:
    plan = begin(store)
    planned = plan.runs[1]
    run_id = planned.id
    finish(store, run_id, ENV_A, {"ips": 7.5})
    run = store.run(run_id)
    assert (run.path, run.metrics, run.params, run.provenance) == (
        f"s3://bucket/exp-1/{run_id}", {"ips": 7.5}, planned.trial.params, ENV_A)
    assert store.run_folders("exp-1") == [f"s3://bucket/exp-1/{run_id}"]
    with pytest.raises(NotFoundError, match="no run 'nope'"):
        store.run("nope")


def test_deleting_an_experiment_removes_its_rows_and_only_its_rows(store, begin) -> None:
    keep, gone = begin(store, "keep"), begin(store, "gone")
    finish(store, keep.runs[0].id, ENV_A)
    for run in gone.runs:
        finish(store, run.id, ENV_B)
    assert store.delete_experiment("gone") == 4
    assert [e.id for e in store.experiments()] == ["keep"]
    assert count_rows(store, schema.runs) == 4 and count_rows(store, schema.trials) == 2
    assert count_rows(store, schema.metrics) == 1
    assert count_rows(store, schema.provenance) == 1  # ENV_B is used by no run any more
    with pytest.raises(NotFoundError):
        store.delete_experiment("gone")


def test_bulk_finish_records_every_run_and_replaces_metrics(store, begin) -> None:
    plan = begin(store, repeats=5)
    results = [RunResult(run_id=r.id, status="succeeded", metrics={"a": float(i), "b": 2.0},
                         finished_at=time.time(), provenance=ENV_A) for i, r in enumerate(plan.runs)]
    store.finish_runs(results)
    store.finish_runs(results[:1])
    runs = store.runs("exp-1")
    assert sorted(r.metrics["a"] for r in runs) == [float(i) for i in range(10)]
    assert count_rows(store, schema.metrics) == 20


def test_listings_take_a_fixed_number_of_queries(store, begin) -> None:
    for i in range(30):
        begin(store, f"exp-{i:02d}", created_at=1000.0 + i)
    statements: list[str] = []
    event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    listed = store.experiments()
    newest = store.experiments(limit=5)
    runs = store.runs("exp-07")
    assert len(listed) == 30 and all(e.runs_by_status == {"pending": 4} for e in listed)
    assert [e.id for e in newest] == [f"exp-{i:02d}" for i in range(29, 24, -1)]
    assert all(e.runs_by_status == {"pending": 4} for e in newest)
    assert len(runs) == 4
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) <= 2 + 2 + 5, selects  # 2 per listing; runs: experiment (2), runs, metrics, provenance
