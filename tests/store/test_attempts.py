"""Every attempt of a run (SQLite and PostgreSQL): recorded with the run's end in one transaction,
interrupted ones marked by a resuming runner, removed with their experiment, and filled in by the
migration for runs that ended before attempts were kept."""

from __future__ import annotations

import time

from sqlalchemy import func, select, text

from kubebench.store import migrate, schema
from kubebench.store.engine import make_engine
from kubebench.store.records import RunResult
from kubebench.store.store import open_store


def end(store, run_id: str, status: str = "succeeded", reason: str = "", code: int | None = 0) -> None:
    store.finish_run(RunResult(run_id=run_id, status=status, reason=reason, exit_code=code, finished_at=time.time()))


def summary(store, exp_id: str = "exp-1") -> dict[str, list[tuple]]:
    return {run_id: [(a.attempt, a.status, a.reason, a.exit_code) for a in found]
            for run_id, found in store.attempts(exp_id).items()}


def test_each_end_of_a_run_records_its_attempt(store, begin) -> None:
    first, second = (r.id for r in begin(store).runs[:2])
    store.start_run(first, "")
    end(store, first, "failed", "create PyTorchJob …: HTTP 500", None)
    store.start_run(first, "")
    end(store, first)
    store.start_run(second, "")
    end(store, second, "failed", "worker-0 exited with code 3", 3)
    end(store, second, "failed", "cannot write the run's folder …", 3)  # the same attempt ended again: the last wins
    assert summary(store) == {
        first: [(1, "failed", "create PyTorchJob …: HTTP 500", None), (2, "succeeded", "", 0)],
        second: [(1, "failed", "cannot write the run's folder …", 3)],
    }
    found = store.attempts("exp-1")[first]
    assert all(a.started_at is not None and a.finished_at >= a.started_at for a in found)


def test_runs_left_running_are_recorded_interrupted_and_made_pending(store, begin) -> None:
    runs = [r.id for r in begin(store).runs]
    store.start_run(runs[0], "")
    end(store, runs[0])
    store.start_run(runs[1], "")
    store.start_run(runs[2], "")
    assert sorted(store.interrupt_running("exp-1", "interrupted: gone")) == sorted(runs[1:3])
    assert store.interrupt_running("exp-1", "interrupted: gone") == []  # nothing left running: nothing twice
    by_id = {r.run_id: r for r in store.runs("exp-1")}
    assert [(by_id[i].status, by_id[i].reason) for i in runs[1:3]] == [("pending", "interrupted: gone")] * 2
    assert summary(store)[runs[1]] == [(1, "interrupted", "interrupted: gone", None)]
    store.start_run(runs[1], "")
    end(store, runs[1])
    assert [a[:2] for a in summary(store)[runs[1]]] == [(1, "interrupted"), (2, "succeeded")]
    assert store.succeeded_run_ids("exp-1") == {runs[0], runs[1]}


def test_bulk_loaded_runs_have_no_attempts_and_deleting_removes_them(store, begin) -> None:
    plan = begin(store)
    store.finish_runs([RunResult(run_id=r.id, status="succeeded", finished_at=1.0) for r in plan.runs])
    assert store.attempts("exp-1") == {}
    store.start_run(plan.runs[0].id, "")
    end(store, plan.runs[0].id)
    store.delete_experiment("exp-1")
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(schema.run_attempts)) == 0


def test_upgrading_fills_in_the_last_attempt_of_runs_that_ended(store_url: str) -> None:
    engine = make_engine(store_url)
    migrate.upgrade(engine, "0003")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO experiments VALUES ('old', 'old', 'local', 's.yaml', 'name: old', 'f1', 1, 2)"))
        conn.execute(text("INSERT INTO trials VALUES ('t1', 'old', 0, '{}')"))
        for run_id, status, attempts in (("done", "succeeded", 2), ("broken", "failed", 1), ("todo", "pending", 0)):
            conn.execute(text("INSERT INTO runs (id, experiment_id, trial_id, repeat, warmup, status, exit_code, reason, "
                              "log_tail, info, attempts, started_at, finished_at, path) VALUES "
                              f"('{run_id}', 'old', 't1', 0, false, '{status}', 0, 'why', '', '{{}}', {attempts}, 5, 6, '')"))
    migrate.upgrade(engine)
    engine.dispose()
    store = open_store(store_url)
    assert summary(store, "old") == {"broken": [(1, "failed", "why", 0)], "done": [(2, "succeeded", "why", 0)]}
    store.engine.dispose()
