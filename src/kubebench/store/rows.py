"""Statements and row conversions behind the store's hot paths (recording runs, reading 10,000s).

Statements are built once: building a SQLAlchemy statement costs more than running it on SQLite.
A run's metrics are read from ``runs.metric_values`` (one JSON object per run) rather than from
the rows of ``metrics``: ten times fewer Python objects to make for the same numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from sqlalchemy import Connection, String, bindparam, delete, insert, literal, null, select, text, type_coerce, update

from . import schema
from .records import (
    JSON_RUN_COLUMNS,
    RUN_COLUMNS as RUN_COLUMN_NAMES,
    TRIAL_RUN_COLUMNS as TRIAL_RUN_COLUMN_NAMES,
    RunAttempt,
    RunResult,
)

if TYPE_CHECKING:
    from sqlalchemy import Insert

_r, _m, _p, _a = schema.runs, schema.metrics, schema.provenance, schema.run_attempts
UPDATE_RUN = update(_r).where(_r.c.id == bindparam("b_run_id"))
DELETE_METRICS = delete(_m).where(_m.c.run_id.in_(bindparam("run_ids", expanding=True)))
INSERT_METRICS = insert(_m)
_ATTEMPT_COLUMNS = ("run_id", "attempt", "status", "reason", "exit_code", "started_at", "finished_at")
#: The current attempt of runs (its row, if it was recorded already: a run ending twice keeps the last).
DELETE_CURRENT_ATTEMPTS = delete(_a).where(
    _a.c.run_id.in_(bindparam("run_ids", expanding=True)),
    _a.c.attempt == select(_r.c.attempts).where(_r.c.id == _a.c.run_id).scalar_subquery(),
)
#: The current attempt of runs that were started, as their rows say it ended (one statement per batch).
INSERT_CURRENT_ATTEMPTS = insert(_a).from_select(_ATTEMPT_COLUMNS, select(
    _r.c.id, _r.c.attempts, _r.c.status, _r.c.reason, _r.c.exit_code, _r.c.started_at, _r.c.finished_at,
).where(_r.c.id.in_(bindparam("run_ids", expanding=True)), _r.c.attempts > 0))
#: PostgreSQL: the metrics rows of runs made from their ``metric_values`` just written.
_PG_METRICS_FROM_JSON = text(
    "INSERT INTO metrics (run_id, name, value) SELECT runs.id, m.key, m.value::double precision "
    "FROM runs CROSS JOIN LATERAL json_each_text(runs.metric_values) AS m WHERE runs.id = ANY(:run_ids)"
)
#: ``records.RUN_COLUMNS``, JSON columns as text parsed by ``records.json_objects`` (SQLAlchemy's JSON
#: type costs twice as much).
RUN_COLUMNS = tuple(type_coerce(_r.c[name], String) if name in JSON_RUN_COLUMNS else _r.c[name]
                    for name in RUN_COLUMN_NAMES)
TRIAL_RUN_COLUMNS = tuple(RUN_COLUMNS[RUN_COLUMN_NAMES.index(name)] for name in TRIAL_RUN_COLUMN_NAMES)
RUN_COLUMNS_WITHOUT_LOGS = tuple(literal("").label("log_tail") if name == "log_tail" else column
                                 for name, column in zip(RUN_COLUMN_NAMES, RUN_COLUMNS))


def record_results(conn: Connection, results: Sequence[RunResult], known: dict[str, str]) -> None:
    """Update the runs, save their provenance and replace their metrics (one transaction: ``conn``'s)."""
    updates = []
    for result in results:
        values = result.model_dump(exclude={"run_id", "metrics", "provenance"})
        values["provenance_id"] = save_provenance(conn, result.provenance, known)
        values["metric_values"] = result.metrics
        values["b_run_id"] = result.run_id
        updates.append(values)
    conn.execute(UPDATE_RUN, updates)
    run_ids = [r.run_id for r in results]
    record_attempts(conn, run_ids)
    conn.execute(DELETE_METRICS, {"run_ids": run_ids})
    if conn.dialect.name == "postgresql":
        # one statement instead of a round of the pipeline per row: twice the rows per second
        conn.execute(_PG_METRICS_FROM_JSON, {"run_ids": run_ids})
        return
    metric_rows = [{"run_id": r.run_id, "name": k, "value": v} for r in results for k, v in r.metrics.items()]
    if metric_rows:
        conn.execute(INSERT_METRICS, metric_rows)


def record_attempts(conn: Connection, run_ids: list[str]) -> None:
    """Add the current attempt of these runs, as their rows now say it ended, to ``run_attempts``."""
    conn.execute(DELETE_CURRENT_ATTEMPTS, {"run_ids": run_ids})
    conn.execute(INSERT_CURRENT_ATTEMPTS, {"run_ids": run_ids})


def interrupt_running(conn: Connection, experiment_id: str, reason: str) -> list[str]:
    """Runs of the experiment left ``running`` by a runner that stopped: their attempt is recorded
    as ``interrupted`` and they become ``pending`` again (to be redone). Returns their ids."""
    ids = list(conn.scalars(select(_r.c.id).where(_r.c.experiment_id == experiment_id, _r.c.status == "running")))
    if ids:
        conn.execute(DELETE_CURRENT_ATTEMPTS, {"run_ids": ids})
        conn.execute(insert(_a).from_select(_ATTEMPT_COLUMNS, select(
            _r.c.id, _r.c.attempts, literal("interrupted"), literal(reason), null(), _r.c.started_at, null(),
        ).where(_r.c.id.in_(ids), _r.c.attempts > 0)))
        conn.execute(update(_r).where(_r.c.id.in_(ids)).values(status="pending", reason=reason, exit_code=None))
    return ids


def attempts_of(conn: Connection, experiment_id: str) -> dict[str, list[RunAttempt]]:
    """Every recorded attempt of the experiment's runs, by run id, in order (one query)."""
    query = (select(*(_a.c[c] for c in _ATTEMPT_COLUMNS)).join(_r, _r.c.id == _a.c.run_id)
             .where(_r.c.experiment_id == experiment_id).order_by(_a.c.run_id, _a.c.attempt))
    found: dict[str, list[RunAttempt]] = {}
    for row in conn.execute(query):
        found.setdefault(row.run_id, []).append(RunAttempt(**row._mapping))
    return found


def save_provenance(conn: Connection, data: dict[str, object], known: dict[str, str]) -> str | None:
    """Store a provenance record once, keyed by a hash of its content; return that id.

    ``known`` maps the JSON text of records this store has saved to their ids, so that a runner
    writes its environment once, not once per run.
    """
    if not data:
        return None
    text = json.dumps(_finite(data), sort_keys=True, default=str)
    if text in known:
        return known[text]
    pid = hashlib.sha256(text.encode()).hexdigest()[:32]
    row = {"id": pid, "data": json.loads(text), "created_at": time.time()}
    statement = _insert_or_ignore(conn.dialect.name)
    if statement is not None:
        conn.execute(statement, row)
    elif conn.scalar(select(_p.c.id).where(_p.c.id == pid)) is None:
        conn.execute(insert(_p), row)
    known[text] = pid
    return pid


def _finite(value: object) -> object:
    """``value`` with every float that is not finite as ``null``: JSON has no ``Infinity`` (PostgreSQL's
    ``json`` type refuses it)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


@cache
def _insert_or_ignore(dialect: str) -> Insert | None:
    """``INSERT … ON CONFLICT DO NOTHING`` into provenance where the dialect has it (imported when first used:
    the PostgreSQL dialect costs 70 ms to import)."""
    if dialect == "sqlite":
        from sqlalchemy.dialects import sqlite

        return sqlite.insert(_p).on_conflict_do_nothing()
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(_p).on_conflict_do_nothing()
    return None


def provenance_of(conn: Connection, ids: Iterable[str | None]) -> dict[str, dict[str, object]]:
    """Provenance records by id (one query)."""
    wanted = sorted({i for i in ids if i})
    if not wanted:
        return {}
    return dict(conn.execute(select(_p.c.id, _p.c.data).where(_p.c.id.in_(wanted))).all())
