"""An experiment's ``updated_at`` moves whenever one of its runs changes state (review B6)."""

from __future__ import annotations

import time

from sqlalchemy import update

from kubebench.store import schema
from kubebench.store.records import RunResult


def _age(store, exp_id: str) -> None:
    """Put the experiment's updated_at back to the epoch, so that any later write shows."""
    with store.engine.begin() as conn:
        conn.execute(update(schema.experiments).where(schema.experiments.c.id == exp_id).values(updated_at=0.0))


def _updated_at(store, exp_id: str) -> float:
    return store.experiment(exp_id).updated_at


def test_starting_finishing_and_interrupting_runs_move_updated_at(store, begin) -> None:
    plan = begin(store, "exp-1", created_at=1000.0)
    first, second = plan.runs[0].id, plan.runs[1].id
    steps = [
        lambda: store.start_run(first, "/runs/a"),
        lambda: store.finish_run(RunResult(run_id=first, status="succeeded", metrics={"x": 1.0},
                                           finished_at=time.time())),
        lambda: store.start_run(second, "/runs/b"),
        lambda: store.interrupt_running("exp-1", "runner stopped"),
        lambda: store.finish_runs([RunResult(run_id=r.id, status="cancelled", finished_at=time.time())
                                   for r in plan.runs[1:]]),
    ]
    for step in steps:
        _age(store, "exp-1")
        before = time.time()
        step()
        assert _updated_at(store, "exp-1") >= before - 1e-3  # written by this step, not left at 0
    record = store.experiment("exp-1")
    assert record.created_at == 1000.0 and record.updated_at > record.created_at


def test_a_run_changing_leaves_other_experiments_alone(store, begin) -> None:
    plan = begin(store, "exp-1")
    begin(store, "exp-2")
    _age(store, "exp-2")
    store.start_run(plan.runs[0].id, "/runs/a")
    assert _updated_at(store, "exp-2") == 0.0
