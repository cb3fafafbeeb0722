"""Experiment states, kept in the ``experiments`` table, and the dashboard's listing built on them.

An experiment's state comes from the statuses present among its counted (non warm-up) runs, in
this order: running if any run runs; pending if all are pending (or it has none); interrupted if
some are pending and others ended, none running: partly done, and nothing runs it now (a Ctrl-C'd
or killed runner; ``kubebench run SPEC --id ID`` resumes it); cancelled if any was cancelled;
failed if any failed or timed out; else succeeded. The store writes it whenever runs change (:func:`refresh_states`, in
the same transaction), so that listing, filtering and counting 10,000s of experiments by state
reads one table: aggregating their runs took 80–120 ms on SQLite for 90,000 runs.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, Connection, bindparam, case, func, literal, or_, select, update

from . import schema
from .records import RUN_STATUSES, ExperimentRecord, experiment_state

_r, _e = schema.runs, schema.experiments
#: Which statuses an experiment's counted runs have: one index seek per status, whatever the size.
#: Each EXISTS selects an indexed column, not ``*`` (what ``exists()`` writes): for ``*`` SQLite costs
#: a table read per row, and once ANALYZE has seen one experiment hold all the runs it scans the
#: table instead, 10,000 rows for each status that is absent, whenever a run is recorded.
_STATUSES_PRESENT = select(*(
    select(_r.c.status).where(_r.c.experiment_id == bindparam("exp_id"), _r.c.status == s,
                              _r.c.warmup.is_(False)).exists().label(s)
    for s in RUN_STATUSES
))
# a run changing state changes its experiment: its updated_at moves with its state
_SET_STATE = (update(_e).where(_e.c.id == bindparam("b_id"))
              .values(state=bindparam("b_state"), updated_at=bindparam("b_now")))


def refresh_states(conn: Connection, experiment_ids: Iterable[str]) -> None:
    """Write the state of these experiments from their runs, and now as their ``updated_at`` (call in
    the transaction that changed them)."""
    updates = []
    now = time.time()
    for exp_id in dict.fromkeys(experiment_ids):
        row = conn.execute(_STATUSES_PRESENT, {"exp_id": exp_id}).one()
        state = experiment_state([s for s, has in zip(RUN_STATUSES, row) if has])
        updates.append({"b_id": exp_id, "b_state": state, "b_now": now})
    if updates:
        conn.execute(_SET_STATE, updates)


def refresh_states_of_runs(conn: Connection, run_ids: Collection[str]) -> None:
    """:func:`refresh_states` of the experiments these runs belong to."""
    if run_ids:
        found = conn.scalars(select(_r.c.experiment_id).where(_r.c.id.in_(run_ids)).distinct())
        refresh_states(conn, list(found))


@dataclass(frozen=True)
class PageQuery:
    """Filters and window of one page (``None``: no filter); ``active``: ids that count as running."""

    q: str | None = None
    name: str | None = None
    state: str | None = None
    backend: str | None = None
    since: float | None = None
    until: float | None = None
    offset: int = 0
    limit: int = 50
    active: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExperimentPage:
    """A page of experiments (with their run counts), the filtered set's size and its counts by state."""

    total: int
    counts: dict[str, int]
    items: list[ExperimentRecord] = field(default_factory=list)


def _filters(query: PageQuery, state: ColumnElement[str], dialect: str) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if query.q:
        # one bound pattern (SQLAlchemy's contains() builds '%' || ? || '%' again for every row)
        pattern = "%" + query.q.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"
        if dialect == "sqlite":  # SQLite's LIKE ignores case already, and is 2.5× faster than lower() LIKE
            where.append(or_(_e.c.id.like(pattern, escape="/"), _e.c.name.like(pattern, escape="/")))
        else:  # ILIKE on PostgreSQL, lower() LIKE lower() elsewhere
            where.append(or_(_e.c.id.ilike(pattern, escape="/"), _e.c.name.ilike(pattern, escape="/")))
    if query.name:
        where.append(_e.c.name == query.name)
    if query.backend:
        where.append(_e.c.backend == query.backend)
    if query.since is not None:
        where.append(_e.c.created_at >= query.since)
    if query.until is not None:
        where.append(_e.c.created_at <= query.until)
    if query.state:
        where.append(state == query.state)
    return where


def read_page(conn: Connection, query: PageQuery) -> ExperimentPage:
    """Four small queries: counts by state of the filtered set and the page's ids (both from the
    listing's covering index), then the page's rows and their run counts."""
    # an experiment the caller runs is running even before its first run starts
    state = case((_e.c.id.in_(query.active), literal("running")), else_=_e.c.state) if query.active else _e.c.state
    where = _filters(query, state, conn.dialect.name)
    # grouped over a subquery that SQLite may not flatten (OFFSET 0): flattened, it walks the state
    # index (no sort for GROUP BY) and reads every row for a search, 4× slower than the covering index
    filtered = select(state.label("state")).where(*where).offset(0).subquery()
    counts: dict[str, int] = dict(conn.execute(select(filtered.c.state, func.count()).group_by(filtered.c.state)).all())
    ids = list(conn.scalars(select(_e.c.id).where(*where).order_by(_e.c.created_at.desc(), _e.c.id.desc())
                            .offset(query.offset).limit(query.limit)))
    if not ids:
        return ExperimentPage(sum(counts.values()), counts, [])
    result = conn.execute(select(_e, state.label("shown_state")).where(_e.c.id.in_(ids)))
    keys, rows = list(result.keys()), {row.id: row for row in result.all()}
    by_status: dict[str, dict[str, int]] = {}
    grouped = (select(_r.c.experiment_id, _r.c.status, func.count())
               .where(_r.c.experiment_id.in_(ids), _r.c.warmup.is_(False))
               .group_by(_r.c.experiment_id, _r.c.status))  # the index's order: no sort
    for exp_id, status, n in conn.execute(grouped).all():
        by_status.setdefault(exp_id, {})[status] = n
    items = []
    for exp_id in ids:
        values = dict(zip(keys, rows[exp_id]))
        values["state"] = values.pop("shown_state")
        items.append(ExperimentRecord(**values, runs_by_status=by_status.get(exp_id, {})))
    return ExperimentPage(sum(counts.values()), counts, items)


def benchmark_names(conn: Connection) -> list[str]:
    """Every benchmark (spec name) in the store, the one run most recently first."""
    query = select(_e.c.name).group_by(_e.c.name).order_by(func.max(_e.c.created_at).desc())
    return list(conn.scalars(query))


def trial_counts(conn: Connection, experiment_ids: Collection[str]) -> dict[str, int]:
    """How many trials each of these experiments has (those with none are absent)."""
    t = schema.trials
    query = select(t.c.experiment_id, func.count()).where(t.c.experiment_id.in_(list(experiment_ids))).group_by(t.c.experiment_id)
    return {exp_id: count for exp_id, count in conn.execute(query).all()}
