"""Sequential decisions of an experiment's trials (schema 10) in SQL: recorded as each trial is
decided (again on a resume: the same runs give the same decision), read by experiment."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, insert, select

from . import schema
from .decision_records import DECISION_COLUMNS, DecisionRecord, decision_records


def record(conn: Connection, found: Sequence[DecisionRecord]) -> None:
    """Store these decisions, each replacing the one of its trial and metric."""
    d = schema.trial_decisions
    for item in found:
        conn.execute(delete(d).where(d.c.experiment_id == item.experiment_id, d.c.trial_id == item.trial_id,
                                     d.c.metric == item.metric))
        conn.execute(insert(d).values(**item.row()))


def of_experiment(conn: Connection, experiment_id: str) -> list[DecisionRecord]:
    """The experiment's decisions in trial order, with each trial's parameters."""
    d, t = schema.trial_decisions, schema.trials
    query = (select(*(d.c[name] for name in DECISION_COLUMNS), t.c.params).join(t, t.c.id == d.c.trial_id)
             .where(d.c.experiment_id == experiment_id).order_by(t.c.index, d.c.metric))
    rows = conn.execute(query).all()
    params = {str(row[1]): row[-1] for row in rows}
    return decision_records([tuple(row[:-1]) for row in rows], params)
