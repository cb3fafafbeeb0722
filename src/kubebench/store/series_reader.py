"""Reading a series for ``kubebench history`` and ``check``: a SQLite store of the current schema with
the standard library's sqlite3 (as :mod:`.reader` reads results: importing SQLAlchemy costs half a
second), any other store through the Store. Both answer the same values (a test compares them).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import NotFoundError
from .reader import SqliteReader, _open_sqlite
from .records import ExperimentRecord, json_objects
from .series_records import AcceptedChange, NoiseFloor, SeriesData, build_grouped, build_series

if TYPE_CHECKING:
    from .store import Store

_NOT_FOUND = ("no series or experiment {!r} in the store (see `kubebench experiments`; "
              "a series is a spec's name or its `series:`)")


class SeriesSource(Protocol):
    """What history and the gate read: a :class:`SqliteSeries` or a :class:`StoreSeries`."""

    def experiment(self, experiment_id: str) -> ExperimentRecord: ...
    def resolve_series(self, name: str) -> str: ...
    def newest_experiment(self, series: str) -> str: ...
    def read_series(self, series: str, since: float | None = None, metrics: Sequence[str] = ()) -> SeriesData: ...
    def accepted_changes(self, series: str) -> list[AcceptedChange]: ...
    def noise_floors(self, series: str) -> dict[tuple[str, str], NoiseFloor]: ...
    def environments(self, experiment_ids: Sequence[str]) -> dict[str, dict[str, object]]: ...


class SqliteSeries(SqliteReader):
    """The series queries of :mod:`.series`, on a SQLite store through sqlite3."""

    def resolve_series(self, name: str) -> str:
        with self._read("read series") as conn:
            if conn.execute("SELECT id FROM experiments WHERE series = ? LIMIT 1", (name,)).fetchone():
                return name
            found = conn.execute("SELECT series FROM experiments WHERE id = ?", (name,)).fetchone()
        if found is None:
            raise NotFoundError(_NOT_FOUND.format(name))
        series: str = found[0]
        return series

    def newest_experiment(self, series: str) -> str:
        with self._read("read series") as conn:
            row = conn.execute("SELECT id FROM experiments WHERE series = ? ORDER BY created_at DESC, id DESC LIMIT 1",
                               (series,)).fetchone()
        if row is None:
            raise NotFoundError(_NOT_FOUND.format(series))
        newest: str = row[0]
        return newest

    def read_series(self, series: str, since: float | None = None, metrics: Sequence[str] = ()) -> SeriesData:
        args: list[str | float]
        where, args = "experiments.series = ?", [series]
        if since is not None:
            where, args = where + " AND experiments.created_at >= ?", [series, since]
        with self._read("read a series") as conn:
            exp_rows = conn.execute(f"SELECT id, created_at, labels, name FROM experiments WHERE {where} "
                                    "ORDER BY created_at, id", args).fetchall()
            if len(metrics) == 1:
                return build_grouped(series, exp_rows, self._one_metric(conn, where, args, metrics[0]))
            run_rows = conn.execute(
                "SELECT runs.experiment_id, trials.params, runs.metric_values FROM runs "
                "JOIN trials ON trials.id = runs.trial_id JOIN experiments ON experiments.id = runs.experiment_id "
                f"WHERE {where} AND runs.warmup = 0 AND runs.status = 'succeeded' "
                "ORDER BY trials.\"index\", runs.repeat", args).fetchall()
        return build_series(series, exp_rows, run_rows)

    @staticmethod
    def _one_metric(conn: sqlite3.Connection, where: str, args: list[Any],
                    metric: str) -> list[tuple[str, str, list[dict[str, Any]]]]:
        """Rows of one metric, its values taken out of the runs' JSON and joined per trial by SQLite: a
        row per experiment × trial (10,000) instead of per run (50,000), and no JSON parsed here."""
        rows = conn.execute(
            f"SELECT runs.experiment_id, trials.params, group_concat(json_extract(runs.metric_values, ?), ' ') "
            "FROM runs JOIN trials ON trials.id = runs.trial_id JOIN experiments ON experiments.id = runs.experiment_id "
            f"WHERE {where} AND runs.warmup = 0 AND runs.status = 'succeeded' "
            "GROUP BY runs.experiment_id, trials.id ORDER BY min(trials.\"index\")",
            [f'$."{metric}"', *args]).fetchall()
        return [(exp_id, params, [{metric: float(v)} for v in (text or "").split()]) for exp_id, params, text in rows]

    def accepted_changes(self, series: str) -> list[AcceptedChange]:
        with self._read("read accepted changes") as conn:
            rows = conn.execute("SELECT series, experiment_id, metric, note, created_at FROM series_changes "
                                "WHERE series = ?", (series,)).fetchall()
        return sorted((AcceptedChange(*row) for row in rows), key=lambda a: a.created_at)

    def noise_floors(self, series: str) -> dict[tuple[str, str], NoiseFloor]:
        with self._read("read noise floors") as conn:
            rows = conn.execute("SELECT trial_key, metric, spread, cv, experiments, runs FROM noise_floors "
                                "WHERE series = ?", (series,)).fetchall()
        return {(k, m): NoiseFloor(k, m, s, cv, tuple(json.loads(exps)), n) for k, m, s, cv, exps, n in rows}

    def environments(self, experiment_ids: Sequence[str]) -> dict[str, dict[str, object]]:
        ids = list(dict.fromkeys(experiment_ids))
        if not ids:
            return {}
        marks = ", ".join("?" * len(ids))
        with self._read("read provenance") as conn:
            counts = conn.execute(f"SELECT experiment_id, provenance_id, count(*) FROM runs WHERE experiment_id "
                                  f"IN ({marks}) AND provenance_id IS NOT NULL GROUP BY experiment_id, provenance_id",
                                  ids).fetchall()
            best: dict[str, tuple[int, str]] = {}
            for exp_id, pid, n in counts:
                if exp_id not in best or (n, pid) > best[exp_id]:
                    best[exp_id] = (n, pid)
            wanted = sorted({pid for _, pid in best.values()})
            rows = conn.execute(f"SELECT id, data FROM provenance WHERE id IN ({', '.join('?' * len(wanted))})",
                                wanted).fetchall() if wanted else []
        data = dict(zip([r[0] for r in rows], json_objects([r[1] for r in rows])))
        return {exp_id: data.get(pid) or {} for exp_id, (_, pid) in best.items()}


class StoreSeries:
    """The same queries on any store, through :mod:`.series` (SQLAlchemy)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def experiment(self, experiment_id: str) -> ExperimentRecord:
        return self.store.experiment(experiment_id)

    def resolve_series(self, name: str) -> str:
        from .series import resolve_series

        return resolve_series(self.store, name)

    def newest_experiment(self, series: str) -> str:
        from .series import recent_experiments

        found = recent_experiments(self.store, series, float("inf"), 1)
        if not found:
            raise NotFoundError(_NOT_FOUND.format(series))
        return found[0]

    def read_series(self, series: str, since: float | None = None, metrics: Sequence[str] = ()) -> SeriesData:
        from .series import read_series

        return read_series(self.store, series, since=since)  # every metric: the caller picks

    def accepted_changes(self, series: str) -> list[AcceptedChange]:
        from .series import accepted_changes

        return accepted_changes(self.store, series)

    def noise_floors(self, series: str) -> dict[tuple[str, str], NoiseFloor]:
        from .series import noise_floors

        return noise_floors(self.store, series)

    def environments(self, experiment_ids: Sequence[str]) -> dict[str, dict[str, object]]:
        from .series import environments_of

        return environments_of(self.store, experiment_ids)


def open_series(url: str) -> SeriesSource:
    """sqlite3 on a SQLite store of the current schema, else the Store (which says what is wrong)."""
    found = _open_sqlite(url)
    if found is not None:
        return SqliteSeries(found._conn, found._path)  # the connection reader._open_sqlite checked
    from .store import open_store

    return StoreSeries(open_store(url))
