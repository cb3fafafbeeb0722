"""Reading results from a store, fast enough for a command line: SQLite stores through sqlite3.

Importing SQLAlchemy takes half a second on a small machine, half of what ``kubebench results`` may
take on an experiment of 10,000 runs. So the read-only commands open a SQLite store of the current
schema with the standard library's sqlite3 and run the same queries as :class:`~.store.Store`,
returning the same records (a test compares the two on the same stores). Every other store — a
server database, a URL with options only SQLAlchemy reads, a missing file, another schema version —
is opened as a :class:`~.store.Store`, which also says what is wrong with it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .. import ids
from ..errors import StoreError
from .decision_records import DECISION_COLUMNS, DecisionRecord, decision_records
from .records import (
    RUN_COLUMNS,
    TRIAL_RUN_COLUMNS,
    ExperimentRecord,
    RunRecord,
    TrialResults,
    experiment_not_found,
    run_records,
    trial_results,
)
from .sqlite import explain, plain_file
from .version import SCHEMA_VERSION

if TYPE_CHECKING:
    from .store import Store

_EXPERIMENT_COLUMNS = tuple(name for name in ExperimentRecord.model_fields if name != "runs_by_status")
_RUNS = ("SELECT {columns} FROM runs JOIN trials ON trials.id = runs.trial_id "
         "WHERE runs.experiment_id = ? {where}ORDER BY trials.\"index\", runs.warmup DESC, runs.repeat")


class ResultsSource(Protocol):
    """What reading an experiment's results needs: a :class:`SqliteReader` or a :class:`~.store.Store`."""

    def experiment(self, experiment_id: str) -> ExperimentRecord: ...

    def runs(self, experiment_id: str, include_warmup: bool = False, logs: bool = True,
             statuses: Collection[str] = ()) -> list[RunRecord]: ...

    def trial_results(self, experiment_id: str) -> list[TrialResults]: ...

    def decisions(self, experiment_id: str) -> list[DecisionRecord]: ...


class SqliteReader:
    """Experiments and runs of a SQLite store at the current schema, read with sqlite3."""

    def __init__(self, connection: sqlite3.Connection, path: str) -> None:
        self._conn = connection
        self._path = path

    @contextmanager
    def _read(self, what: str) -> Iterator[sqlite3.Connection]:
        """One read transaction (a consistent snapshot while runners write); errors as StoreError."""
        try:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")
        except sqlite3.Error as e:
            raise StoreError(f"store sqlite:///{self._path}: cannot {what}: {explain(str(e))}") from e

    def experiment(self, experiment_id: str) -> ExperimentRecord:
        """One experiment with its counted runs by status; NotFoundError names the id."""
        ids.check(experiment_id)
        with self._read("read experiments") as conn:
            row = conn.execute(f"SELECT {', '.join(_EXPERIMENT_COLUMNS)} FROM experiments WHERE id = ?",
                               (experiment_id,)).fetchone()
            if row is None:
                raise experiment_not_found(experiment_id)
            counts = dict(conn.execute("SELECT status, count(*) FROM runs WHERE experiment_id = ? AND warmup = 0 "
                                       "GROUP BY status", (experiment_id,)))
        return ExperimentRecord(**dict(zip(_EXPERIMENT_COLUMNS, row)), runs_by_status=counts)

    def runs(self, experiment_id: str, include_warmup: bool = False, logs: bool = True,
             statuses: Collection[str] = ()) -> list[RunRecord]:
        """All runs of an experiment with parameters, metrics and provenance, in trial and repeat order
        (``logs=False``: ``log_tail`` left empty; ``statuses``: only those: as :meth:`.Store.runs`)."""
        columns = ", ".join(f"runs.{c}" if logs or c != "log_tail" else "''" for c in RUN_COLUMNS)
        where = "" if include_warmup else "AND runs.warmup = 0 "
        if statuses:
            where += f"AND runs.status IN ({', '.join('?' * len(statuses))}) "
        with self._read("read runs") as conn:
            self._require(conn, experiment_id)
            found = conn.execute(_RUNS.format(columns=columns, where=where), (experiment_id, *statuses)).fetchall()
            params = self._params(conn, experiment_id)
            wanted = sorted({row[-1] for row in found if row[-1]})  # the few environments the runs ran in
            envs = {pid: json.loads(text) for pid, text in conn.execute(
                f"SELECT id, data FROM provenance WHERE id IN ({', '.join('?' * len(wanted))})", wanted)}
        return run_records(experiment_id, found, params, envs)

    def trial_results(self, experiment_id: str) -> list[TrialResults]:
        """Each trial's counted runs by state and the metrics of the succeeded ones (:meth:`.Store.trial_results`)."""
        columns = ", ".join(f"runs.{c}" for c in TRIAL_RUN_COLUMNS)
        with self._read("read runs") as conn:
            self._require(conn, experiment_id)
            found = conn.execute(_RUNS.format(columns=columns, where="AND runs.warmup = 0 "), (experiment_id,))
            return trial_results(found.fetchall(), self._params(conn, experiment_id))

    def decisions(self, experiment_id: str) -> list[DecisionRecord]:
        """The experiment's sequential decisions in trial order (:meth:`.Store.decisions`)."""
        columns = ", ".join(f"trial_decisions.{c}" for c in DECISION_COLUMNS)
        with self._read("read the trials' decisions") as conn:
            self._require(conn, experiment_id)
            found = conn.execute(f"SELECT {columns} FROM trial_decisions JOIN trials ON trials.id = "
                                 "trial_decisions.trial_id WHERE trial_decisions.experiment_id = ? "
                                 "ORDER BY trials.\"index\", trial_decisions.metric", (experiment_id,)).fetchall()
            return decision_records(found, self._params(conn, experiment_id))

    @staticmethod
    def _require(conn: sqlite3.Connection, experiment_id: str) -> None:
        ids.check(experiment_id)
        if conn.execute("SELECT 1 FROM experiments WHERE id = ?", (experiment_id,)).fetchone() is None:
            raise experiment_not_found(experiment_id)

    @staticmethod
    def _params(conn: sqlite3.Connection, experiment_id: str) -> dict[str, dict[str, object]]:
        return {trial_id: json.loads(text) for trial_id, text in
                conn.execute("SELECT id, params FROM trials WHERE experiment_id = ?", (experiment_id,))}


def open_results(url: str) -> ResultsSource:
    """What to read an experiment's results from: a :class:`SqliteReader` where it can, else the Store."""
    return _open_sqlite(url) or _open_store(url)


def _open_sqlite(url: str) -> SqliteReader | None:
    found = plain_file(url)
    if found is None or not Path(found[0]).is_file():
        return None
    path, busy_timeout = found
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                               timeout=busy_timeout, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        version = conn.execute("SELECT value FROM kubebench_meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.Error:
        version = None
    if version is None or version[0] != str(SCHEMA_VERSION):
        conn.close()
        return None
    return SqliteReader(conn, path)


def _open_store(url: str) -> Store:
    from .store import open_store

    return open_store(url)
