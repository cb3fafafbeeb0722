"""The SQL store: experiments, resume bookkeeping, run records, schema versions."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import update

from kubebench.errors import NotFoundError, StoreError
from kubebench.plan.plan import make_plan
from kubebench.spec.model import BenchmarkSpec
from kubebench.store import schema
from kubebench.store.reader import open_results
from kubebench.store.records import ExperimentRecord, RunResult
from kubebench.store.store import open_store
from kubebench.store.version import SCHEMA_VERSION


def spec() -> BenchmarkSpec:
    return BenchmarkSpec.model_validate(
        {"name": "s", "job": {"command": ["true"]}, "parameters": {"bs": [1, 2]}, "repeats": 2}
    )


def record(exp_id: str = "exp-1", fingerprint: str = "f1") -> ExperimentRecord:
    now = time.time()
    return ExperimentRecord(id=exp_id, name="s", backend="local", source="s.yaml", spec_text="name: s",
                            job_fingerprint=fingerprint, created_at=now, updated_at=now)


def test_runs_round_trip_with_params_and_metrics(store) -> None:
    plan = make_plan(spec(), "exp-1", "f1")
    store.begin_experiment(record(), plan)
    first = plan.runs[0]
    store.start_run(first.id, "/runs/x")
    store.finish_run(RunResult(run_id=first.id, status="succeeded", metrics={"ips": 10.5}, exit_code=0,
                               finished_at=time.time()))
    runs = store.runs("exp-1")
    assert len(runs) == 4
    done = next(r for r in runs if r.run_id == first.id)
    assert (done.status, done.metrics, done.params, done.attempts) == ("succeeded", {"ips": 10.5}, {"bs": 1}, 1)
    assert done.duration_s is not None and done.duration_s >= 0
    assert {r.status for r in runs if r.run_id != first.id} == {"pending"}
    assert store.succeeded_run_ids("exp-1") == {first.id}


def test_redoing_a_run_replaces_its_metrics(store) -> None:
    plan = make_plan(spec(), "exp-1", "f1")
    store.begin_experiment(record(), plan)
    run_id = plan.runs[0].id
    for status, metrics in (("succeeded", {"a": 1.0, "b": 2.0}), ("failed", {})):
        store.start_run(run_id, "")
        store.finish_run(RunResult(run_id=run_id, status=status, metrics=metrics, reason="r",
                                   finished_at=time.time()))
    again = next(r for r in store.runs("exp-1") if r.run_id == run_id)
    assert (again.status, again.metrics, again.attempts, again.reason) == ("failed", {}, 2, "r")


def test_resume_adds_only_new_runs_and_checks_the_job(store) -> None:
    store.begin_experiment(record(), make_plan(spec(), "exp-1", "f1"))
    store.begin_experiment(record(), make_plan(spec(), "exp-1", "f1", repeats=3))
    assert len(store.runs("exp-1")) == 6
    with pytest.raises(StoreError, match="different job definition"):
        store.begin_experiment(record(fingerprint="other"), make_plan(spec(), "exp-1", "other"))
    assert len(store.runs("exp-1")) == 6


def test_experiments_are_listed_newest_first_with_counts(store) -> None:
    store.begin_experiment(record("old"), make_plan(spec(), "old", "f1"))
    store.begin_experiment(record("new"), make_plan(spec(), "new", "f1"))
    listed = store.experiments()
    assert [e.id for e in listed] == ["new", "old"]
    assert listed[0].runs_by_status == {"pending": 4}


def test_unknown_experiment_is_not_found(store) -> None:
    with pytest.raises(NotFoundError, match="no experiment 'nope'"):
        store.runs("nope")


@pytest.mark.parametrize("opened", [open_store, open_results])
def test_a_newer_store_is_refused(store_url: str, opened) -> None:
    store = open_store(store_url)
    with store.engine.begin() as conn:
        conn.execute(update(schema.meta).values(value=str(SCHEMA_VERSION + 1)))
    store.engine.dispose()
    with pytest.raises(StoreError, match="newer than this kubebench understands"):
        opened(store_url)


@pytest.mark.parametrize("url", ["not a url", "nosuchdialect://x/y", "sqlite:////proc/no-such-folder/kb.db"])
def test_bad_store_urls_are_clear_errors(url: str) -> None:
    with pytest.raises(StoreError, match="store URL"):
        open_store(url)


def test_an_unwritable_store_is_a_store_error(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "kb.db").mkdir()  # a folder where the database file should be
    with pytest.raises(StoreError, match="cannot open the store"):
        open_store(f"sqlite:///{folder / 'kb.db'}")
