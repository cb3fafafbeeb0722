"""The store's API over SQLAlchemy Core: every write is one transaction, reads avoid N+1 queries."""

from __future__ import annotations

import math
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Connection, Engine, delete, func, insert, select, update

from .. import ids
from ..errors import NotFoundError, StoreError
from ..timeline import Boundary
from . import leases, listing, rows, schema
from .engine import make_engine, transaction
from .migrate import ensure_current
from .records import (
    ExperimentRecord,
    RunAttempt,
    RunRecord,
    RunResult,
    TrialResults,
    experiment_not_found,
    refuse_non_finite,
    run_records,
    trial_results,
)

if TYPE_CHECKING:  # the spec's models cost a third of a second to import; reading results needs none
    from ..plan.plan import Plan
    from .data_records import DataRecord
    from .decision_records import DecisionRecord


class Store:
    """Experiments, trials, runs, metrics and provenance in one SQL database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._provenance_ids: dict[str, str] = {}  # provenance this store saved: JSON text → id
        #: leases this store holds (experiment id → owner token): every write checks they are still its own
        self._held: dict[str, str] = {}

    @property
    def shared(self) -> bool:
        """Whether runners on other machines may use this store too (anything but a SQLite file): then an
        experiment's lock is a lease in the store (:mod:`.leases`), not only a file on this machine."""
        return self.engine.dialect.name != "sqlite"

    @contextmanager
    def _tx(self, what: str, write: bool = False) -> Iterator[Connection]:
        with transaction(self.engine, what, write) as conn:
            if write and self._held:  # fenced: no write lands after another runner took a lease over
                leases.check_held(conn, dict(self._held))
            yield conn

    def acquire_lease(self, experiment_id: str, owner: str, host: str, pid: int, ttl: float,
                      dead_owner: str | None = None) -> tuple[bool, leases.Lease | None]:
        """Take the experiment's lease (see :func:`.leases.acquire`); once taken, this store's writes
        are fenced by it until :meth:`release_lease`."""
        with transaction(self.engine, "take the experiment's lease", write=True) as conn:
            taken, other = leases.acquire(conn, experiment_id, owner, host, pid, ttl, dead_owner)
        if taken:
            self._held[experiment_id] = owner
        return taken, other

    def renew_lease(self, experiment_id: str, owner: str, ttl: float) -> bool:
        """The lease's heartbeat; False when another runner took it over."""
        with transaction(self.engine, "renew the experiment's lease", write=True) as conn:
            return leases.renew(conn, experiment_id, owner, ttl)

    def release_lease(self, experiment_id: str, owner: str) -> None:
        """Give the lease up; this store's writes are no longer fenced by it."""
        self._held.pop(experiment_id, None)
        with transaction(self.engine, "release the experiment's lease", write=True) as conn:
            leases.release(conn, experiment_id, owner)

    def lease(self, experiment_id: str) -> leases.Lease | None:
        """The experiment's lease as the store holds it (None: no runner has it)."""
        with transaction(self.engine, "read the experiment's lease") as conn:
            return leases.current(conn, experiment_id)

    def begin_experiment(self, record: ExperimentRecord, plan: Plan) -> None:
        """Create the experiment, or check that a resumed one has the same job; add new trials and runs."""
        ids.check(record.id)
        with self._tx("record the experiment", write=True) as conn:
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
            listing.refresh_states(conn, [record.id])

    def succeeded_run_ids(self, experiment_id: str) -> set[str]:
        """Runs already done: resuming skips them."""
        runs = schema.runs
        with self._tx("read runs") as conn:
            query = select(runs.c.id).where(runs.c.experiment_id == experiment_id, runs.c.status == "succeeded")
            return set(conn.scalars(query))

    def start_run(self, run_id: str, path: str) -> None:
        """Mark a run running (an interrupted runner leaves it so; resuming redoes it).

        ``path`` is where the run's folder ends up: a local path or a storage URL (``s3://…``).
        """
        runs = schema.runs
        with self._tx("start a run", write=True) as conn:
            conn.execute(update(runs).where(runs.c.id == run_id).values(
                status="running", started_at=time.time(), finished_at=None, attempts=runs.c.attempts + 1,
                path=path, reason="", exit_code=None,
            ))
            listing.refresh_states_of_runs(conn, [run_id])

    def interrupt_running(self, experiment_id: str, reason: str) -> list[str]:
        """Runs a stopped runner left ``running``: record their attempt as interrupted and make them
        pending again (call only while no other runner runs the experiment); return their ids."""
        with self._tx("record interrupted runs", write=True) as conn:
            ids = rows.interrupt_running(conn, experiment_id, reason)
            if ids:
                listing.refresh_states(conn, [experiment_id])
        return ids

    def attempts(self, experiment_id: str) -> dict[str, list[RunAttempt]]:
        """Every recorded attempt of the experiment's runs, by run id, in order."""
        with self._tx("read attempts") as conn:
            return rows.attempts_of(conn, experiment_id)

    def finish_run(self, result: RunResult) -> None:
        """Record how a run ended (and its attempt), its provenance, and replace its metrics, atomically."""
        self.finish_runs([result])

    def finish_runs(self, results: list[RunResult]) -> None:
        """Record several ended runs in one transaction (what importers and bulk loads use)."""
        if results:
            results = [refuse_non_finite(r) for r in results]
            known = dict(self._provenance_ids)
            with self._tx("record a run", write=True) as conn:
                rows.record_results(conn, results, known)
                listing.refresh_states_of_runs(conn, [r.run_id for r in results])
            self._provenance_ids = known  # only once committed: a rolled-back insert is not known

    def experiment(self, experiment_id: str) -> ExperimentRecord:
        """One experiment with its run counts; NotFoundError names the id (IdError: not an id at all)."""
        ids.check(experiment_id)
        found = self._experiments(schema.experiments.c.id == experiment_id)
        if not found:
            raise experiment_not_found(experiment_id)
        return found[0]

    def experiments(self, limit: int | None = None) -> list[ExperimentRecord]:
        """Experiments, newest first, with their run counts by status (two queries, whatever the number)."""
        return self._experiments(None, limit)

    def experiment_page(self, *, q: str | None = None, name: str | None = None, state: str | None = None,
                        backend: str | None = None, since: float | None = None, until: float | None = None,
                        offset: int = 0, limit: int = 50, active: Iterable[str] = ()) -> listing.ExperimentPage:
        """One page of experiments, newest first, filtered and counted in SQL (see :mod:`.listing`).

        ``q`` is a case-insensitive substring of id or name; ``state`` one of the experiment
        states; the ids in ``active`` (being run by the caller) count as running.
        """
        query = listing.PageQuery(q, name, state, backend, since, until, offset, limit, tuple(active))
        with self._tx("read experiments") as conn:
            return listing.read_page(conn, query)

    def trial_counts(self, experiment_ids: Collection[str]) -> dict[str, int]:
        """How many trials each of these experiments has (those with none are absent)."""
        with self._tx("read trials") as conn:
            return listing.trial_counts(conn, experiment_ids)

    def benchmark_names(self) -> list[str]:
        """Every benchmark (spec name) in the store, the one run most recently first."""
        with self._tx("read benchmarks") as conn:
            return listing.benchmark_names(conn)

    def _experiments(self, where: ColumnElement[bool] | None, limit: int | None = None) -> list[ExperimentRecord]:
        e, r = schema.experiments, schema.runs
        query = select(e).order_by(e.c.created_at.desc(), e.c.id)
        if where is not None:
            query = query.where(where)
        if limit:
            query = query.limit(limit)
        # grouped in the order of ix_runs_experiment_status_warmup_id: an index scan, no sort
        counts_query = (select(r.c.experiment_id, r.c.status, func.count()).where(r.c.warmup.is_(False))
                        .group_by(r.c.experiment_id, r.c.status))
        if where is not None or limit:
            counts_query = counts_query.where(r.c.experiment_id.in_(query.with_only_columns(e.c.id)))
        with self._tx("read experiments") as conn:
            result = conn.execute(query)
            keys, found = list(result.keys()), result.all()
            counts: dict[str, dict[str, int]] = {}
            for exp_id, status, n in conn.execute(counts_query).all():
                counts.setdefault(exp_id, {})[status] = n
        return [ExperimentRecord(**dict(zip(keys, row)), runs_by_status=counts.get(row.id, {})) for row in found]

    def runs(self, experiment_id: str, include_warmup: bool = False, logs: bool = True,
             statuses: Collection[str] = ()) -> list[RunRecord]:
        """All runs of an experiment with parameters, metrics and provenance (four queries, whatever the size).

        ``logs=False`` leaves ``log_tail`` empty: results never show it, and the tails of 10,000 runs
        are megabytes to read. ``statuses``: only the runs in these states.
        """
        r, t = schema.runs, schema.trials
        query = (select(*(rows.RUN_COLUMNS if logs else rows.RUN_COLUMNS_WITHOUT_LOGS)).join(t, t.c.id == r.c.trial_id)
                 .where(r.c.experiment_id == experiment_id)
                 .order_by(t.c.index, r.c.warmup.desc(), r.c.repeat))
        if not include_warmup:
            query = query.where(r.c.warmup.is_(False))
        if statuses:
            query = query.where(r.c.status.in_(statuses))
        with self._tx("read runs") as conn:
            self._require(conn, experiment_id)
            found = conn.execute(query).all()
            params = dict(conn.execute(select(t.c.id, t.c.params).where(t.c.experiment_id == experiment_id)).all())
            envs = rows.provenance_of(conn, (row[-1] for row in found))
        return run_records(experiment_id, found, params, envs)

    def trial_results(self, experiment_id: str) -> list[TrialResults]:
        """Each trial's counted runs by state and the metrics of the succeeded ones (two queries)."""
        r, t = schema.runs, schema.trials
        query = (select(*rows.TRIAL_RUN_COLUMNS)
                 .join(t, t.c.id == r.c.trial_id).where(r.c.experiment_id == experiment_id, r.c.warmup.is_(False))
                 .order_by(t.c.index, r.c.repeat))
        with self._tx("read runs") as conn:
            self._require(conn, experiment_id)
            found = conn.execute(query).all()
            params = dict(conn.execute(select(t.c.id, t.c.params).where(t.c.experiment_id == experiment_id)).all())
        return trial_results(found, params)

    def run(self, run_id: str) -> RunRecord:
        """One run by id; NotFoundError names the id (IdError: not an id at all)."""
        ids.check(run_id, "run id")
        r, t = schema.runs, schema.trials
        query = (select(*rows.RUN_COLUMNS, r.c.experiment_id, t.c.params)
                 .join(t, t.c.id == r.c.trial_id).where(r.c.id == run_id))
        with self._tx("read a run") as conn:
            row = conn.execute(query).first()
            if row is None:
                raise NotFoundError(f"no run {run_id!r} in the store (see `kubebench results EXPERIMENT_ID`)")
            *columns, experiment_id, params = row
            envs = rows.provenance_of(conn, [row.provenance_id])
        return run_records(experiment_id, [tuple(columns)], {row.trial_id: params}, envs)[0]

    def _require(self, conn: Connection, experiment_id: str) -> None:
        ids.check(experiment_id)
        e = schema.experiments
        if conn.scalar(select(e.c.id).where(e.c.id == experiment_id)) is None:
            raise experiment_not_found(experiment_id)

    def add_telemetry(self, run_id: str, samples: Iterable[tuple[str, float, float]]) -> None:
        """Store a run's telemetry, ``(series, t, value)`` samples, in place of any it had (one bulk insert).
        A sample that is not a finite number is no measurement (and SQLite stores NaN as NULL): left out."""
        tel = schema.telemetry
        values = [{"run_id": run_id, "series": s, "t": t, "value": v} for s, t, v in samples
                  if math.isfinite(t) and math.isfinite(v)]
        with self._tx("record telemetry", write=True) as conn:
            conn.execute(delete(tel).where(tel.c.run_id == run_id))  # a redone run replaces its series
            if values:
                conn.execute(insert(tel), values)

    def telemetry(self, run_id: str) -> dict[str, list[tuple[float, float]]]:
        """A run's telemetry: ``series → [(t, value), …]`` in time order (empty without any)."""
        tel = schema.telemetry
        query = select(tel.c.series, tel.c.t, tel.c.value).where(tel.c.run_id == run_id).order_by(tel.c.series, tel.c.t)
        found: dict[str, list[tuple[float, float]]] = {}
        with self._tx("read telemetry") as conn:
            for series, t, value in conn.execute(query):
                found.setdefault(series, []).append((t, value))
        return found

    def add_timeline(self, run_id: str, timeline: Iterable[Boundary]) -> None:
        """Store a run's timeline in place of any it had (a redone run replaces it)."""
        tl = schema.run_timeline
        values = [{"run_id": run_id, "name": b.name[:128], "replica": b.replica[:128], "t": b.t, "source": b.source,
                   "precision": b.precision, "origin": b.origin[:256]} for b in timeline]
        with self._tx("record a timeline", write=True) as conn:
            conn.execute(delete(tl).where(tl.c.run_id == run_id))
            if values:
                conn.execute(insert(tl), values)

    def timelines(self, run_ids: Iterable[str]) -> dict[str, list[Boundary]]:
        """The timelines of these runs, each in time order (a run without one is left out)."""
        tl, wanted = schema.run_timeline, list(run_ids)
        found: dict[str, list[Boundary]] = {}
        query = select(tl.c.run_id, tl.c.name, tl.c.t, tl.c.source, tl.c.precision, tl.c.replica, tl.c.origin)
        with self._tx("read timelines") as conn:
            for start in range(0, len(wanted), 500):  # bounded IN lists
                for run_id, *row in conn.execute(query.where(tl.c.run_id.in_(wanted[start:start + 500]))):
                    found.setdefault(run_id, []).append(Boundary(*row))
        return {run_id: sorted(found[run_id], key=lambda b: b.t) for run_id in wanted if run_id in found}

    def run_folders(self, experiment_id: str) -> list[str]:
        """Where the experiment's runs' folders are (storage URLs or local paths) — runs that started."""
        r = schema.runs
        query = select(r.c.path).where(r.c.experiment_id == experiment_id, r.c.path != "").distinct()
        with self._tx("read runs") as conn:
            return sorted(conn.scalars(query))

    def environments(self, experiment_id: str) -> list[tuple[dict[str, object], int]]:
        """The provenance records of an experiment's runs, each with its number of runs, most used first."""
        r, p = schema.runs, schema.provenance
        counts = (select(r.c.provenance_id.label("pid"), func.count().label("n"))
                  .where(r.c.experiment_id == experiment_id, r.c.provenance_id.is_not(None))
                  .group_by(r.c.provenance_id).subquery())
        query = (select(p.c.data, counts.c.n).join(counts, counts.c.pid == p.c.id)
                 .order_by(counts.c.n.desc(), p.c.id))
        with self._tx("read provenance") as conn:
            return [(data, n) for data, n in conn.execute(query)]

    def record_data(self, experiment_id: str, found: list[DataRecord], seconds: float) -> None:
        """Record the datasets one start of the experiment read and the seconds its data step took
        (see :mod:`.data`); StoreError when a dataset's key changed since an earlier start."""
        from . import data

        with self._tx("record the experiment's data", write=True) as conn:
            data.record(conn, experiment_id, found, seconds)

    def data(self, experiment_id: str) -> list[DataRecord]:
        """The datasets the experiment's trials read (empty without ``data:``, or in stores before schema 8)."""
        from . import data

        with self._tx("read the experiment's data") as conn:
            return data.of_experiment(conn, experiment_id)

    def record_decisions(self, found: list[DecisionRecord]) -> None:
        """Store sequential decisions of trials (each replaces its trial's and metric's earlier one)."""
        from . import decisions

        if found:
            with self._tx("record the trials' decisions", write=True) as conn:
                decisions.record(conn, found)

    def decisions(self, experiment_id: str) -> list[DecisionRecord]:
        """The experiment's sequential decisions in trial order (none: it was not run with --decide-against)."""
        from . import decisions

        with self._tx("read the trials' decisions") as conn:
            self._require(conn, experiment_id)
            return decisions.of_experiment(conn, experiment_id)

    def experiments_using(self, keys: Collection[str]) -> dict[str, list[str]]:
        """The experiments that read each dataset key, oldest first."""
        from . import data

        with self._tx("read the experiments' data") as conn:
            return data.experiments_using(conn, keys)

    def delete_experiment(self, experiment_id: str) -> int:
        """Delete an experiment with its trials, runs and metrics; return its number of runs."""
        self.experiment(experiment_id)
        e, t, r, m, p = schema.experiments, schema.trials, schema.runs, schema.metrics, schema.provenance
        with self._tx("delete the experiment", write=True) as conn:
            # explicit, child tables first: correct whether or not the database cascades
            run_ids = select(r.c.id).where(r.c.experiment_id == experiment_id)
            conn.execute(delete(m).where(m.c.run_id.in_(run_ids)))
            conn.execute(delete(schema.telemetry).where(schema.telemetry.c.run_id.in_(run_ids)))
            conn.execute(delete(schema.run_timeline).where(schema.run_timeline.c.run_id.in_(run_ids)))
            conn.execute(delete(schema.run_attempts).where(schema.run_attempts.c.run_id.in_(run_ids)))
            conn.execute(delete(schema.experiment_data).where(schema.experiment_data.c.experiment_id == experiment_id))
            conn.execute(delete(schema.trial_decisions).where(schema.trial_decisions.c.experiment_id == experiment_id))
            deleted = conn.execute(delete(r).where(r.c.experiment_id == experiment_id)).rowcount
            conn.execute(delete(t).where(t.c.experiment_id == experiment_id))
            conn.execute(delete(e).where(e.c.id == experiment_id))
            used = select(r.c.provenance_id).where(r.c.provenance_id.is_not(None))
            conn.execute(delete(p).where(p.c.id.not_in(used)))
        self._provenance_ids.clear()
        return deleted


def open_store(url: str) -> Store:
    """Open the store at a SQLAlchemy URL, creating a new one at the newest schema.

    A store of another schema version is refused with what to do: upgrade kubebench (newer store)
    or run ``kubebench db upgrade`` (older store).
    """
    store = Store(make_engine(url))
    ensure_current(store.engine)
    return store
