"""The experiments listing under the API: states kept by the store, filters, counts and pages in SQL
(SQLite and PostgreSQL), and the migration that adds the states to older stores."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubebench.plan.plan import make_plan
from kubebench.spec.model import BenchmarkSpec
from kubebench.store import migrate, schema
from kubebench.store.engine import make_engine
from kubebench.store.records import ExperimentRecord, RunResult, experiment_state
from kubebench.store.store import open_store
from kubebench.store.version import SCHEMA_VERSION


@pytest.mark.parametrize("statuses, state", [
    ([], "pending"), (["pending"], "pending"), (["running", "failed"], "running"),
    (["running", "pending", "succeeded"], "running"), (["succeeded"], "succeeded"),
    (["succeeded", "pending"], "interrupted"), (["failed", "succeeded"], "failed"), (["timeout"], "failed"),
    (["cancelled", "succeeded"], "cancelled"), (["cancelled", "failed"], "cancelled"),
    # partly done and nothing running it: the review's Ctrl-C'd sweep read "pending" (2026-12-02 #8)
    (["cancelled", "pending"], "interrupted"), (["failed", "pending"], "interrupted"),
])
def test_experiment_state_rule(statuses: list[str], state: str) -> None:
    assert experiment_state(statuses) == state


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'kb.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    opened = open_store(url)
    yield opened
    opened.engine.dispose()


def begin(store, exp_id: str, name: str = "bench", backend: str = "local", created_at: float | None = None,
          repeats: int = 2):
    spec = BenchmarkSpec.model_validate({"name": name, "job": {"command": ["true"]}, "parameters": {"bs": [1, 2]},
                                         "repeats": repeats})
    plan = make_plan(spec, exp_id, "f1")
    now = created_at or time.time()
    store.begin_experiment(ExperimentRecord(id=exp_id, name=name, backend=backend, source="s.yaml", spec_text="",
                                            job_fingerprint="f1", created_at=now, updated_at=now), plan)
    return [r.id for r in plan.runs]


def finish(store, run_ids, status: str) -> None:
    store.finish_runs([RunResult(run_id=r, status=status, finished_at=time.time()) for r in run_ids])


def state_of(store, exp_id: str) -> str:
    return store.experiment(exp_id).state


def test_the_store_keeps_each_experiment_s_state(store) -> None:
    runs = begin(store, "e1")
    assert state_of(store, "e1") == "pending"
    store.start_run(runs[0], "/x")
    assert state_of(store, "e1") == "running"
    finish(store, runs[:1], "succeeded")
    assert state_of(store, "e1") == "interrupted"  # partly done, nothing running
    finish(store, runs[1:3], "succeeded")
    store.start_run(runs[3], "/x")
    finish(store, runs[3:], "failed")
    assert state_of(store, "e1") == "failed"
    finish(store, runs[3:], "succeeded")  # redone by a resume
    assert state_of(store, "e1") == "succeeded"
    more = begin(store, "e1", repeats=3)  # a resume with more repeats adds pending runs
    assert state_of(store, "e1") == "interrupted" and len(more) == 6
    finish(store, more[4:], "cancelled")
    assert state_of(store, "e1") == "cancelled"


def test_page_filters_counts_and_pagination_in_sql(store) -> None:
    for i in range(12):
        runs = begin(store, f"exp-{i:02d}", name="alpha" if i % 2 else "Beta_1%", created_at=1000.0 + i,
                     backend="kubernetes" if i % 3 == 0 else "local")
        finish(store, runs, ("succeeded", "failed", "pending")[i % 3] if i % 3 != 2 else "succeeded")
        if i % 3 == 2:
            finish(store, runs[:1], "cancelled")
    page = store.experiment_page(limit=5)
    assert page.total == 12 and [e.id for e in page.items] == [f"exp-{i:02d}" for i in (11, 10, 9, 8, 7)]
    assert page.counts == {"succeeded": 4, "failed": 4, "cancelled": 4}
    assert page.items[0].runs_by_status == {"cancelled": 1, "succeeded": 3}
    assert [e.id for e in store.experiment_page(offset=10, limit=5).items] == ["exp-01", "exp-00"]
    failed = store.experiment_page(state="failed")
    assert {e.id for e in failed.items} == {"exp-01", "exp-04", "exp-07", "exp-10"} and failed.total == 4
    assert store.experiment_page(q="beta_1%").total == 6  # case-insensitive, '_' and '%' literal
    assert store.experiment_page(q="beta_1x").total == 0 and store.experiment_page(q="%").total == 6
    assert store.experiment_page(q="EXP-1").total == 2
    assert store.experiment_page(name="alpha", backend="kubernetes").total == 2  # exp-03, exp-09
    assert [e.id for e in store.experiment_page(since=1003.0, until=1005.0).items] == ["exp-05", "exp-04", "exp-03"]
    active = store.experiment_page(state="running", active=["exp-00", "nope"])
    assert [e.id for e in active.items] == ["exp-00"] and active.items[0].state == "running"
    assert active.counts == {"running": 1}
    assert store.experiment_page(active=["exp-00"]).counts == {"running": 1, "succeeded": 3, "failed": 4, "cancelled": 4}


def test_migration_0005_derives_the_states_of_an_older_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    migrate.upgrade(engine, "0003")
    experiments = [{"id": f"e{i}", "name": "n", "backend": "local", "source": "s", "spec_text": "",
                    "job_fingerprint": "f", "created_at": float(i), "updated_at": float(i)} for i in range(4)]
    statuses = {"e0": ["succeeded", "succeeded"], "e1": ["succeeded", "failed"], "e2": ["running", "pending"], "e3": []}
    with engine.begin() as conn:
        conn.execute(_old_experiments().insert(), experiments)
        conn.execute(schema.trials.insert(), [{"id": f"t{i}", "experiment_id": f"e{i}", "index": 0, "params": {}}
                                              for i in range(4)])
        conn.execute(schema.runs.insert(), [
            {"id": f"{e}-{k}", "experiment_id": e, "trial_id": f"t{e[1]}", "repeat": k, "warmup": False,
             "status": s, "reason": "", "log_tail": "", "info": {}, "attempts": 0, "path": ""}
            for e, ss in statuses.items() for k, s in enumerate(ss)])
    before, after = migrate.upgrade(engine)
    assert (before.version, after.version) == (3, SCHEMA_VERSION)
    store = open_store(url)
    assert {e: store.experiment(e).state for e in statuses} == {
        "e0": "succeeded", "e1": "failed", "e2": "running", "e3": "pending"}
    assert store.experiment_page(state="failed").total == 1
    engine.dispose()


def _old_experiments():
    """The experiments table as schema version 3 had it (no state)."""
    from sqlalchemy import Column, Float, MetaData, String, Table, Text

    return Table("experiments", MetaData(), Column("id", String(80), primary_key=True), Column("name", String(128)),
                 Column("backend", String(64)), Column("source", Text), Column("spec_text", Text),
                 Column("job_fingerprint", String(32)), Column("created_at", Float), Column("updated_at", Float))
