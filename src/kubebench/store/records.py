"""Records the store returns (and exports write): typed, versioned with the store's schema."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic_core import from_json

from ..errors import NotFoundError, SpecError

if TYPE_CHECKING:
    from ..rules import Goal

RunStatus = Literal["pending", "running", "succeeded", "failed", "timeout", "cancelled"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
FAILED_STATES = ("failed", "timeout", "cancelled")
#: Runs that ran and failed; a cancelled run was stopped (most never started) and is counted apart.
RAN_AND_FAILED = tuple(s for s in FAILED_STATES if s != "cancelled")
#: An experiment's state, derived from its counted runs (:func:`experiment_state`); the one vocabulary
#: of the store, the CLI and the dashboard.
ExperimentState = Literal["pending", "running", "interrupted", "succeeded", "failed", "cancelled"]
EXPERIMENT_STATES: tuple[str, ...] = get_args(ExperimentState)
#: How one attempt of a run ended; ``interrupted``: its runner was killed during it (then redone).
AttemptStatus = Literal["pending", "running", "succeeded", "failed", "timeout", "cancelled", "interrupted"]


def experiment_state(statuses: Collection[str]) -> ExperimentState:
    """The state of an experiment whose counted runs have these statuses (see :mod:`kubebench.store.listing`)."""
    present = set(statuses)
    if "running" in present:
        return "running"
    if present <= {"pending"}:
        return "pending"
    if "pending" in present:
        return "interrupted"
    if "cancelled" in present:
        return "cancelled"
    if present & {"failed", "timeout"}:
        return "failed"
    return "succeeded"


class Record(BaseModel):
    """Base of stored records."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ExperimentRecord(Record):
    """One experiment: a spec planned under an id (running it again with that id resumes it)."""

    id: str
    name: str
    backend: str
    source: str
    spec_text: str
    job_fingerprint: str
    created_at: float
    updated_at: float
    #: derived from its runs when they change (:func:`experiment_state`); see :attr:`current_state`
    state: ExperimentState = "pending"
    #: the series it belongs to (the spec's ``series:``, else its name) and its run-time labels (schema 7)
    series: str = ""
    labels: dict[str, str] = {}
    #: seconds spent on its input data before its runs, over all its starts (schema 8; None: no data)
    data_prepare_seconds: float | None = None
    runs_by_status: dict[str, int] = {}

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_text(cls, value: object) -> object:
        # sqlite3 (store.reader) hands JSON columns over as text
        return json.loads(value) if isinstance(value, str) else (value or {})

    @property
    def current_state(self) -> ExperimentState:
        """The state from the run counts read with the record (the stored column may lag a read by one
        transaction, and a store written before ``interrupted`` existed says ``pending`` for a partly
        done experiment)."""
        return experiment_state([s for s, n in self.runs_by_status.items() if n]) if self.runs_by_status else self.state

    def declared_metrics(self) -> list[dict[str, Any]]:
        """The ``metrics:`` entries of the spec the experiment was run from."""
        import yaml

        try:
            declared = (yaml.safe_load(self.spec_text) or {}).get("metrics") or []
        except (yaml.YAMLError, AttributeError):
            return []
        return [m for m in declared if isinstance(m, dict) and "name" in m]

    def primary_metric(self) -> str | None:
        """The metric marked primary, else the first declared one."""
        from .. import rules

        return rules.primary_metric(self.declared_metrics())

    def metric_goal(self, name: str | None) -> tuple[str, Goal]:
        """The metric to analyse (``name``, else the primary metric) and its goal."""
        name = name or self.primary_metric()
        if name is None:
            raise SpecError(f"experiment {self.id!r} declares no metrics: choose one with --metric")
        from .. import rules

        return name, rules.metric_goal(self.declared_metrics(), name)


class RunRecord(Record):
    """One run: its trial's parameters, state, failure reason and metrics."""

    run_id: str
    experiment_id: str
    trial_id: str
    repeat: int
    warmup: bool
    status: RunStatus
    params: dict[str, object]
    metrics: dict[str, float]
    info: dict[str, str] = {}
    exit_code: int | None = None
    reason: str = ""
    log_tail: str = ""
    attempts: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    path: str = ""
    provenance: dict[str, object] = {}

    @property
    def duration_s(self) -> float | None:
        """Wall time of the run (submit to end), in seconds."""
        if self.started_at is None or self.finished_at is None:
            return None
        return self.finished_at - self.started_at


class TrialResults(Record):
    """One trial as the results table shows it: its counted runs by state, and the metrics of those
    that succeeded, in repeat order (what 10,000 runs come to without reading 10,000 records)."""

    trial_id: str
    params: dict[str, object]
    runs_by_status: dict[str, int]
    metrics: list[dict[str, float]]
    #: succeeded runs whose step time drifted within the run (``info.drifting``: not in a steady state)
    drifting: int = 0


class RunAttempt(Record):
    """One attempt of a run: how it ended (``interrupted``: its runner stopped during it)."""

    run_id: str
    attempt: int
    status: AttemptStatus
    reason: str = ""
    exit_code: int | None = None
    started_at: float | None = None
    finished_at: float | None = None


class RunResult(Record):
    """What the runner records when a run ends."""

    run_id: str
    status: RunStatus
    metrics: dict[str, float] = {}
    info: dict[str, str] = {}
    exit_code: int | None = None
    reason: str = ""
    log_tail: str = ""
    finished_at: float
    provenance: dict[str, object] = {}


def refuse_non_finite(result: RunResult) -> RunResult:
    """``result``, or, when a metric is not a finite number (``inf``, ``nan``: no measurement, and no JSON
    either), the run recorded failed with the metrics named and none stored. The collectors and the
    derived metrics drop such values before; this is the store's own guard, so that no path can make
    the store refuse a run (PostgreSQL's ``json`` refuses ``Infinity``) and stop every resume there."""
    bad = sorted(name for name, value in result.metrics.items() if not math.isfinite(value))
    if not bad:
        return result
    named = ", ".join(f"{name}={result.metrics[name]}" for name in bad[:10]) + (" …" if len(bad) > 10 else "")
    reason = f"metrics that are not finite numbers refused: {named}"
    return result.model_copy(update={"metrics": {}, "status": "failed" if result.status == "succeeded" else result.status,
                                     "reason": f"{result.reason}; {reason}" if result.reason else reason})


#: Columns of ``runs`` a RunRecord is made of, in the order both ways of reading a store select them
#: (:mod:`.store` with SQLAlchemy, :mod:`.reader` with sqlite3); the JSON ones are read as text.
RUN_COLUMNS = ("id", "trial_id", "repeat", "warmup", "status", "exit_code", "reason", "log_tail", "info",
               "attempts", "started_at", "finished_at", "path", "metric_values", "provenance_id")
JSON_RUN_COLUMNS = ("info", "metric_values")
_INFO, _METRICS = (RUN_COLUMNS.index(name) for name in JSON_RUN_COLUMNS)


def run_records(experiment_id: str, rows: Sequence[Sequence[Any]], params: dict[str, dict[str, object]],
                envs: dict[str, dict[str, object]]) -> list[RunRecord]:
    """RunRecords from rows of ``RUN_COLUMNS``, with their trial's params and their provenance."""
    infos = json_objects([row[_INFO] for row in rows])
    metrics = json_objects([row[_METRICS] for row in rows])
    return [RunRecord(run_id=run_id, experiment_id=experiment_id, trial_id=trial_id, repeat=repeat,
                      warmup=bool(warmup), status=status, params=params.get(trial_id, {}), metrics=values,
                      info=info, exit_code=exit_code, reason=reason, log_tail=log_tail, attempts=attempts,
                      started_at=started_at, finished_at=finished_at, path=path,
                      provenance=envs.get(provenance_id, {}))
            for (run_id, trial_id, repeat, warmup, status, exit_code, reason, log_tail, _, attempts, started_at,
                 finished_at, path, _, provenance_id), info, values in zip(rows, infos, metrics)]


#: Columns of the counted runs that TrialResults are made of, selected in trial and repeat order.
TRIAL_RUN_COLUMNS = ("trial_id", "status", "metric_values", "info")


def trial_results(rows: Sequence[Sequence[Any]], params: dict[str, dict[str, object]]) -> list[TrialResults]:
    """TrialResults from rows of ``TRIAL_RUN_COLUMNS``, in the rows' order of trials."""
    counts: dict[str, dict[str, int]] = {}
    succeeded: dict[str, list[str | dict[str, Any] | None]] = {}
    drifting: dict[str, int] = {}
    for trial_id, status, values, *info in rows:
        by_status = counts.setdefault(trial_id, {})
        by_status[status] = by_status.get(status, 0) + 1
        if status == "succeeded":
            succeeded.setdefault(trial_id, []).append(values)
            # the key is enough, text (SQLite) or parsed (psycopg): no parse of every run's info
            if info and info[0] and ('"drifting"' in info[0] if isinstance(info[0], str) else "drifting" in info[0]):
                drifting[trial_id] = drifting.get(trial_id, 0) + 1
    parsed = iter(json_objects([values for texts in succeeded.values() for values in texts]))
    metrics = {trial_id: [next(parsed) for _ in texts] for trial_id, texts in succeeded.items()}
    return [TrialResults(trial_id=trial_id, params=params.get(trial_id, {}), runs_by_status=by_status,
                         metrics=metrics.get(trial_id, []), drifting=drifting.get(trial_id, 0))
            for trial_id, by_status in counts.items()]


def json_objects(values: Sequence[str | dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Values of a JSON object column, ``null`` as empty: texts (SQLite) parsed in one call of
    pydantic-core's parser (four times faster than ``json.loads`` one by one), or already parsed (psycopg)."""
    texts = [v for v in values if v is None or isinstance(v, str)]
    if len(texts) == len(values):
        parsed = from_json("[" + ",".join(v or "null" for v in texts) + "]")
    else:
        parsed = [json.loads(v) if isinstance(v, str) else v for v in values]
    return [p or {} for p in parsed]


def experiment_not_found(experiment_id: str) -> NotFoundError:
    """The error for an experiment id the store does not have."""
    return NotFoundError(f"no experiment {experiment_id!r} in the store (see `kubebench experiments`)")
