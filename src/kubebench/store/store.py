"""The store's API over SQLAlchemy Core: every write is one transaction, reads avoid N+1 queries."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError

from ..errors import NotFoundError, StoreError
from ..plan.plan import Plan
from . import schema
from .records import ExperimentRecord, RunRecord, RunResult


class Store:
    """Experiments, trials, runs and metrics in one SQL database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def _tx(self, what: str) -> Iterator:
        try:
            with self.engine.begin() as conn:
                yield conn
        except SQLAlchemyError as e:
            raise StoreError(f"store {self.engine.url!r}: cannot {what}: {_first_line(e)}") from e

    def begin_experiment(self, record: ExperimentRecord, plan: Plan) -> None:
        """Create the experiment, or check that a resumed one has the same job; add new trials and runs."""
        with self._tx("record the experiment") as conn:
            row = conn.execute(select(schema.experiments).where(schema.experiments.c.id == record.id)).first()
            if row is None:
                conn.execute(insert(schema.experiments).values(**record.model_dump(exclude={"runs_by_status"})))
            elif row.job_fingerprint != record.job_fingerprint:
                raise StoreError(
                    f"experiment {record.id!r} was started with a different job definition; "
                    "resume it with the same job, or run under a new --id"
                )
            known_trials = set(conn.scalars(select(schema.trials.c.id).where(schema.trials.c.experiment_id == record.id)))
            new_trials = [t for t in plan.trials if t.id not in known_trials]
            if new_trials:
                conn.execute(insert(schema.trials), [
                    {"id": t.id, "experiment_id": record.id, "index": t.index, "params": t.params} for t in new_trials
                ])
            known_runs = set(conn.scalars(select(schema.runs.c.id).where(schema.runs.c.experiment_id == record.id)))
            new_runs = [r for r in plan.runs if r.id not in known_runs]
            if new_runs:
                conn.execute(insert(schema.runs), [
                    {"id": r.id, "experiment_id": record.id, "trial_id": r.trial.id, "repeat": r.repeat,
                     "warmup": r.warmup, "status": "pending", "reason": "", "log_tail": "", "info": {},
                     "attempts": 0, "path": ""}
                    for r in new_runs
                ])
            conn.execute(update(schema.experiments).where(schema.experiments.c.id == record.id)
                         .values(updated_at=time.time()))

    def succeeded_run_ids(self, experiment_id: str) -> set[str]:
        """Runs already done: resuming skips them."""
        runs = schema.runs
        with self._tx("read runs") as conn:
            query = select(runs.c.id).where(runs.c.experiment_id == experiment_id, runs.c.status == "succeeded")
            return set(conn.scalars(query))

    def start_run(self, run_id: str, path: str) -> None:
        """Mark a run running (an interrupted runner leaves it so; resuming redoes it)."""
        runs = schema.runs
        with self._tx("start a run") as conn:
            conn.execute(update(runs).where(runs.c.id == run_id).values(
                status="running", started_at=time.time(), finished_at=None, attempts=runs.c.attempts + 1,
                path=path, reason="", exit_code=None,
            ))

    def finish_run(self, result: RunResult) -> None:
        """Record how a run ended and replace its metrics, atomically."""
        runs, metrics = schema.runs, schema.metrics
        with self._tx("record a run") as conn:
            conn.execute(update(runs).where(runs.c.id == result.run_id).values(
                **result.model_dump(exclude={"run_id", "metrics"})
            ))
            conn.execute(metrics.delete().where(metrics.c.run_id == result.run_id))
            if result.metrics:
                conn.execute(insert(metrics), [
                    {"run_id": result.run_id, "name": k, "value": v} for k, v in result.metrics.items()
                ])

    def experiment(self, experiment_id: str) -> ExperimentRecord:
        """One experiment with its run counts; NotFoundError names the id."""
        found = self._experiments(schema.experiments.c.id == experiment_id)
        if not found:
            raise NotFoundError(f"no experiment {experiment_id!r} in the store (see `kubebench experiments`)")
        return found[0]

    def experiments(self, limit: int | None = None) -> list[ExperimentRecord]:
        """Experiments, newest first, with their run counts by status."""
        return self._experiments(None, limit)

    def _experiments(self, where, limit: int | None = None) -> list[ExperimentRecord]:
        e, r = schema.experiments, schema.runs
        query = select(e).order_by(e.c.created_at.desc())
        if where is not None:
            query = query.where(where)
        if limit:
            query = query.limit(limit)
        with self._tx("read experiments") as conn:
            rows = conn.execute(query).all()
            counts: dict[str, dict[str, int]] = {}
            ids = [row.id for row in rows]
            for chunk in _chunks(ids, 500):
                q = (select(r.c.experiment_id, r.c.status, func.count())
                     .where(r.c.experiment_id.in_(chunk), r.c.warmup.is_(False))
                     .group_by(r.c.experiment_id, r.c.status))
                for exp_id, status, n in conn.execute(q):
                    counts.setdefault(exp_id, {})[status] = n
        return [ExperimentRecord(**row._asdict(), runs_by_status=counts.get(row.id, {})) for row in rows]

    def runs(self, experiment_id: str, include_warmup: bool = False) -> list[RunRecord]:
        """All runs of an experiment with parameters and metrics (three queries, whatever the size)."""
        self.experiment(experiment_id)
        r, t, m = schema.runs, schema.trials, schema.metrics
        query = (select(r, t.c.params, t.c.index.label("trial_index"))
                 .join(t, t.c.id == r.c.trial_id)
                 .where(r.c.experiment_id == experiment_id)
                 .order_by(t.c.index, r.c.warmup.desc(), r.c.repeat))
        if not include_warmup:
            query = query.where(r.c.warmup.is_(False))
        with self._tx("read runs") as conn:
            rows = conn.execute(query).all()
            values: dict[str, dict[str, float]] = {}
            mq = select(m.c.run_id, m.c.name, m.c.value).join(r, r.c.id == m.c.run_id).where(
                r.c.experiment_id == experiment_id)
            for run_id, name, value in conn.execute(mq):
                values.setdefault(run_id, {})[name] = value
        return [_run_record(row, values.get(row.id, {})) for row in rows]


def _run_record(row, metrics: dict[str, float]) -> RunRecord:
    data = row._asdict()
    data["run_id"] = data.pop("id")
    data.pop("trial_index")
    return RunRecord(**data, metrics=metrics)


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _first_line(e: Exception) -> str:
    text = str(getattr(e, "orig", None) or e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def open_store(url: str) -> Store:
    """Open (creating if new) the store at a SQLAlchemy URL; refuse a store of a newer schema."""
    try:
        parsed = make_url(url)
    except ArgumentError as e:
        raise StoreError(f"store URL {url!r} is not a valid SQLAlchemy URL: {e}") from e
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    try:
        engine = create_engine(parsed, **_engine_options(parsed.get_backend_name()))
    except (NoSuchModuleError, ImportError) as e:
        raise StoreError(f"store URL {url!r}: database driver not installed: {e}") from e
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    store = Store(engine)
    _ensure_schema(store)
    return store


def _engine_options(backend: str) -> dict:
    if backend == "sqlite":
        return {"connect_args": {"timeout": 30}}
    return {"pool_pre_ping": True}


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets readers work while a runner writes; with WAL, synchronous=NORMAL stays consistent
    # after a crash and saves an fsync per commit; foreign keys make deletes cascade.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _ensure_schema(store: Store) -> None:
    with store._tx("open the store") as conn:
        schema.metadata.create_all(conn)
        row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
        if row is None:
            conn.execute(insert(schema.meta).values(key="schema_version", value=str(schema.SCHEMA_VERSION)))
            return
    version = int(row.value)
    if version > schema.SCHEMA_VERSION:
        raise StoreError(
            f"the store {store.engine.url!r} has schema version {version}, newer than this kubebench "
            f"understands ({schema.SCHEMA_VERSION}); upgrade kubebench"
        )
