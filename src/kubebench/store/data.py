"""The datasets an experiment's trials read (schema 8), in SQL: recorded per start of the experiment,
read by experiment, and the experiments found by dataset key (see kubebench.data)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import Connection, func, insert, select, update

from ..errors import StoreError
from . import schema
from .data_records import DataRecord, changed_message


def record(conn: Connection, experiment_id: str, found: Sequence[DataRecord], seconds: float) -> None:
    """Add the datasets of one start of the experiment (``seconds``: the whole data step). A dataset
    recorded before with another key is refused: the experiment's runs would have read different data."""
    d, e = schema.experiment_data, schema.experiments
    known = {r.name: r for r in of_experiment(conn, experiment_id)}
    for item in found:
        before = known.get(item.name)
        if before is None:
            conn.execute(insert(d).values(**item.model_dump()))
            continue
        if before.key != item.key:
            raise StoreError(changed_message(experiment_id, item.name))
        conn.execute(update(d).where(d.c.experiment_id == experiment_id, d.c.name == item.name).values(
            seconds=before.seconds + item.seconds, prepared=before.prepared or item.prepared,
            trials=sorted(set(before.trials) | set(item.trials)), checksum=item.checksum, files=item.files,
            bytes=item.bytes, recorded_at=item.recorded_at))
    conn.execute(update(e).where(e.c.id == experiment_id).values(
        data_prepare_seconds=func.coalesce(e.c.data_prepare_seconds, 0.0) + seconds))


def of_experiment(conn: Connection, experiment_id: str) -> list[DataRecord]:
    """The experiment's datasets, by name."""
    d = schema.experiment_data
    rows = conn.execute(select(d).where(d.c.experiment_id == experiment_id).order_by(d.c.name)).mappings()
    return [DataRecord(**row) for row in rows]


def experiments_using(conn: Connection, keys: Collection[str]) -> dict[str, list[str]]:
    """The experiments that read each key, oldest first."""
    d, e = schema.experiment_data, schema.experiments
    query = (select(d.c.key, d.c.experiment_id).join(e, e.c.id == d.c.experiment_id)
             .where(d.c.key.in_(list(keys))).order_by(e.c.created_at, e.c.id))
    found: dict[str, list[str]] = {}
    for key, experiment_id in conn.execute(query):
        found.setdefault(key, []).append(experiment_id)
    return found
