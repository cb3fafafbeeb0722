"""Series in the store: the experiments of one benchmark in time order with their runs' values, run-time
labels, accepted step changes, noise floors from A/A runs, and notes and tags (schema 7).

A series is every experiment whose ``series`` column holds its name: the spec's ``series:``, else the
spec's ``name``. Reading one is one query over the covering index of experiments by series and time,
joined to the runs by experiment (what 500 experiments × 20 trials × 5 runs needs in well under a second).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, String, delete, func, insert, select, type_coerce

from ..errors import NotFoundError, SpecError
from . import schema
from .engine import transaction
from .records import json_objects
from .series_records import AcceptedChange, NoiseFloor, SeriesData, build_series, parse_labels

if TYPE_CHECKING:
    from .store import Store

#: The runs of one trial: its parameters, and the metrics of each of its succeeded counted runs.
TrialRuns = tuple[dict[str, object], list[dict[str, float]]]


def resolve_series(store: Store, name: str) -> str:
    """The series called ``name``, or the series of the experiment with that id; NotFoundError otherwise."""
    e = schema.experiments
    with transaction(store.engine, "read series") as conn:
        if conn.scalar(select(e.c.id).where(e.c.series == name).limit(1)) is not None:
            return name
        found: str | None = conn.scalar(select(e.c.series).where(e.c.id == name))
    if found is None:
        raise NotFoundError(f"no series or experiment {name!r} in the store (see `kubebench experiments`; "
                            "a series is a spec's name or its `series:`)")
    return found


def experiment_ref(store: Store, ref: str) -> str:
    """An experiment id, or ``SERIES@KEY=VALUE[,KEY=VALUE]``: the newest experiment of that series with
    those labels (``bench@cluster=a``); NotFoundError when it has none."""
    if "@" not in ref:
        return ref
    name, _, text = ref.partition("@")
    labels = parse_labels(item for item in text.split(",") if item.strip())
    if not labels:
        raise SpecError(f"{ref!r}: expected SERIES@KEY=VALUE (e.g. bench@cluster=a)")
    series = resolve_series(store, name)
    e = schema.experiments
    with transaction(store.engine, "read a series") as conn:
        rows = conn.execute(select(e.c.id, type_coerce(e.c.labels, String)).where(e.c.series == series)
                            .order_by(e.c.created_at.desc(), e.c.id.desc())).all()
    for exp_id, found in zip((r[0] for r in rows), json_objects([r[1] for r in rows])):
        if all((found or {}).get(k) == v for k, v in labels.items()):
            return str(exp_id)
    shown = ", ".join(f"{k}={v}" for k, v in labels.items())
    raise NotFoundError(f"{ref!r}: no experiment of series {series!r} has the labels {shown}")


def read_series(store: Store, series: str, since: float | None = None, environments: bool = False) -> SeriesData:
    """The series' experiments (oldest first, created at or after ``since``) and their runs' metrics."""
    e, t, r = schema.experiments, schema.trials, schema.runs
    where = [e.c.series == series] + ([e.c.created_at >= since] if since is not None else [])
    exp_query = (select(e.c.id, e.c.created_at, type_coerce(e.c.labels, String), e.c.name)
                 .where(*where).order_by(e.c.created_at, e.c.id))
    run_query = (select(r.c.experiment_id, type_coerce(t.c.params, String), type_coerce(r.c.metric_values, String))
                 .join(t, t.c.id == r.c.trial_id).join(e, e.c.id == r.c.experiment_id)
                 .where(*where, r.c.warmup.is_(False), r.c.status == "succeeded")
                 .order_by(t.c.index, r.c.repeat))
    with transaction(store.engine, "read a series") as conn:
        exp_rows = conn.execute(exp_query).all()
        run_rows = conn.execute(run_query).all()
        envs = _environments(conn, [row[0] for row in exp_rows]) if environments else {}
    return build_series(series, exp_rows, run_rows, envs)


def _environments(conn: Connection, experiment_ids: Sequence[str]) -> dict[str, dict[str, object]]:
    """The most used provenance record of each experiment (one grouped query)."""
    r, p = schema.runs, schema.provenance
    if not experiment_ids:
        return {}
    counts = (select(r.c.experiment_id, r.c.provenance_id, func.count().label("n"))
              .where(r.c.experiment_id.in_(experiment_ids), r.c.provenance_id.is_not(None))
              .group_by(r.c.experiment_id, r.c.provenance_id))
    best: dict[str, tuple[int, str]] = {}
    for exp_id, pid, n in conn.execute(counts):
        if exp_id not in best or (n, pid) > best[exp_id]:
            best[exp_id] = (n, pid)
    ids = {pid for _, pid in best.values()}
    data = dict(conn.execute(select(p.c.id, p.c.data).where(p.c.id.in_(ids))).all()) if ids else {}
    return {exp_id: data.get(pid) or {} for exp_id, (_, pid) in best.items()}


def series_list(store: Store) -> list[tuple[str, int, float]]:
    """Every series with its number of experiments and its newest experiment's time, newest first."""
    e = schema.experiments
    query = (select(e.c.series, func.count(), func.max(e.c.created_at)).group_by(e.c.series)
             .order_by(func.max(e.c.created_at).desc()))
    with transaction(store.engine, "read series") as conn:
        return [(s, n, last) for s, n, last in conn.execute(query)]


def accept_change(store: Store, series: str, experiment_id: str, metric: str = "", note: str = "") -> AcceptedChange:
    """Record that the level of ``series`` changed on purpose at ``experiment_id`` (replaces an earlier note)."""
    e, c = schema.experiments, schema.series_changes
    change = AcceptedChange(series, experiment_id, metric, note, time.time())
    with transaction(store.engine, "accept a change", write=True) as conn:
        found = conn.scalar(select(e.c.series).where(e.c.id == experiment_id))
        if found is None:
            raise NotFoundError(f"no experiment {experiment_id!r} in the store (see `kubebench history {series}`)")
        if found != series:
            raise SpecError(f"experiment {experiment_id!r} belongs to series {found!r}, not {series!r}")
        conn.execute(delete(c).where(c.c.series == series, c.c.experiment_id == experiment_id, c.c.metric == metric))
        conn.execute(insert(c).values(**vars(change)))
    return change


def accepted_changes(store: Store, series: str) -> list[AcceptedChange]:
    """The accepted changes of a series, oldest first."""
    c = schema.series_changes
    query = select(c.c.series, c.c.experiment_id, c.c.metric, c.c.note, c.c.created_at).where(c.c.series == series)
    with transaction(store.engine, "read accepted changes") as conn:
        return sorted((AcceptedChange(*row) for row in conn.execute(query)), key=lambda a: a.created_at)


def save_noise_floors(store: Store, series: str, floors: Sequence[NoiseFloor]) -> None:
    """Store (replacing) the noise floors of a series' trials × metrics."""
    n = schema.noise_floors
    now = time.time()
    with transaction(store.engine, "record noise floors", write=True) as conn:
        for f in floors:
            conn.execute(delete(n).where(n.c.series == series, n.c.trial_key == f.trial_key, n.c.metric == f.metric))
        if floors:
            conn.execute(insert(n), [{"series": series, "trial_key": f.trial_key, "metric": f.metric,
                                      "spread": f.spread, "cv": f.cv, "experiments": list(f.experiments),
                                      "runs": f.runs, "updated_at": now} for f in floors])


def noise_floors(store: Store, series: str) -> dict[tuple[str, str], NoiseFloor]:
    """The noise floors of a series by (trial_key, metric); empty when it was never calibrated."""
    n = schema.noise_floors
    query = select(n.c.trial_key, n.c.metric, n.c.spread, n.c.cv, n.c.experiments, n.c.runs).where(n.c.series == series)
    with transaction(store.engine, "read noise floors") as conn:
        rows = conn.execute(query).all()
    return {(k, m): NoiseFloor(k, m, s, cv, tuple(exps), runs) for k, m, s, cv, exps, runs in rows}


def set_note(store: Store, experiment_id: str, note: str | None = None, tags: Sequence[str] | None = None) -> dict[str, Any]:
    """Set an experiment's note and/or tags (``None`` keeps what it had); return both."""
    e, n = schema.experiments, schema.experiment_notes
    with transaction(store.engine, "write a note", write=True) as conn:
        if conn.scalar(select(e.c.id).where(e.c.id == experiment_id)) is None:
            raise NotFoundError(f"no experiment {experiment_id!r} in the store")
        row = conn.execute(select(n.c.note, n.c.tags).where(n.c.experiment_id == experiment_id)).first()
        old_note, old_tags = (row[0], list(row[1] or [])) if row else ("", [])
        values = {"note": old_note if note is None else note,
                  "tags": old_tags if tags is None else sorted(dict.fromkeys(t.strip() for t in tags if t.strip())),
                  "updated_at": time.time()}
        conn.execute(delete(n).where(n.c.experiment_id == experiment_id))
        conn.execute(insert(n).values(experiment_id=experiment_id, **values))
    return {"note": values["note"], "tags": values["tags"]}


def notes(store: Store, experiment_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{id: {"note": …, "tags": […]}}`` of the experiments that have any."""
    n = schema.experiment_notes
    if not experiment_ids:
        return {}
    query = select(n.c.experiment_id, n.c.note, n.c.tags).where(n.c.experiment_id.in_(list(experiment_ids)))
    with transaction(store.engine, "read notes") as conn:
        return {exp_id: {"note": note, "tags": list(tags or [])} for exp_id, note, tags in conn.execute(query)}


def series_version(store: Store, series: str) -> tuple[object, ...]:
    """What changes whenever the history of a series may: its experiments, accepted changes and floors
    (caches of a computed history are keyed by it)."""
    e, c, n = schema.experiments, schema.series_changes, schema.noise_floors
    with transaction(store.engine, "read series") as conn:
        exps = conn.execute(select(func.count(), func.max(e.c.updated_at)).where(e.c.series == series)).one()
        changes = conn.execute(select(func.count(), func.max(c.c.created_at)).where(c.c.series == series)).one()
        floors = conn.execute(select(func.count(), func.max(n.c.updated_at)).where(n.c.series == series)).one()
    return tuple(exps) + tuple(changes) + tuple(floors)


def trial_runs(store: Store, experiment_ids: Sequence[str]) -> dict[str, list[TrialRuns]]:
    """Each experiment's trials in order, with the metrics of their succeeded counted runs (one query)."""
    t, r = schema.trials, schema.runs
    if not experiment_ids:
        return {}
    query = (select(r.c.experiment_id, r.c.trial_id, type_coerce(t.c.params, String),
                    type_coerce(r.c.metric_values, String))
             .join(t, t.c.id == r.c.trial_id)
             .where(r.c.experiment_id.in_(list(experiment_ids)), r.c.warmup.is_(False), r.c.status == "succeeded")
             .order_by(r.c.experiment_id, t.c.index, r.c.repeat))
    with transaction(store.engine, "read runs") as conn:
        rows = conn.execute(query).all()
    params = json_objects([row[2] for row in rows])
    metrics = json_objects([row[3] for row in rows])
    found: dict[str, dict[str, TrialRuns]] = {}
    for (exp_id, trial_id, _, _), p, m in zip(rows, params, metrics):
        found.setdefault(exp_id, {}).setdefault(trial_id, (p, []))[1].append(m)
    return {exp_id: list(trials.values()) for exp_id, trials in found.items()}


def environments_of(store: Store, experiment_ids: Sequence[str]) -> dict[str, dict[str, object]]:
    """The most used provenance record of each experiment."""
    with transaction(store.engine, "read provenance") as conn:
        return _environments(conn, experiment_ids)


def recent_experiments(store: Store, series: str, until: float, count: int) -> list[str]:
    """Ids of the last ``count`` experiments of a series created at or before ``until``, oldest first."""
    e = schema.experiments
    query = (select(e.c.id).where(e.c.series == series, e.c.created_at <= until)
             .order_by(e.c.created_at.desc(), e.c.id.desc()).limit(count))
    with transaction(store.engine, "read series") as conn:
        return list(reversed(conn.scalars(query).all()))
