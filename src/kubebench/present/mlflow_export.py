"""An experiment's runs in MLflow: one parent run per trial, a nested run per kubebench run.

The MLflow experiment is named after the kubebench experiment (or ``experiment_name``). Parent runs
carry the trial's parameters and the median of each metric over its succeeded runs; nested runs carry
the run's parameters, metrics, state and provenance (as ``kubebench.env.*`` tags). Exporting again
adds only runs not exported yet (found by their ``kubebench.run_id`` tag) and refreshes the medians.
Needs ``mlflow`` or ``mlflow-skinny`` (``pip install 'kubebench[mlflow]'``).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..errors import ExportError, KubebenchError
from ..provenance import flatten
from ..store.records import RunRecord
from ..store.store import Store

_STATES = {"succeeded": "FINISHED", "failed": "FAILED", "timeout": "FAILED", "cancelled": "KILLED"}
_TAG_LIMIT = 5000


@dataclass(frozen=True)
class MlflowExport:
    """What an export did."""

    mlflow_experiment_id: str
    exported: int
    already: int
    trials: int


def export_mlflow(store: Store, experiment_id: str, tracking_uri: str,
                  experiment_name: str | None = None) -> MlflowExport:
    """Log the experiment's finished runs to the MLflow tracking server or store at ``tracking_uri``."""
    record = store.experiment(experiment_id)
    runs = [r for r in store.runs(experiment_id) if r.status in _STATES]
    with _mlflow_errors(tracking_uri):
        client = _client(tracking_uri)
        exp_id = _experiment(client, experiment_name or experiment_id, experiment_id, record.source)
        known = _exported(client, exp_id, experiment_id)
        parents, exported = {}, 0
        for trial_id, trial_runs in _by_trial(runs).items():
            parents[trial_id] = _parent(client, exp_id, experiment_id, trial_runs, known.get(("trial", trial_id)))
            for run in trial_runs:
                if ("run", run.run_id) not in known:
                    _child(client, exp_id, parents[trial_id], run)
                    exported += 1
    return MlflowExport(exp_id, exported, len(runs) - exported, len(parents))


def _client(tracking_uri: str):
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as e:
        raise ExportError("exporting to MLflow needs mlflow: pip install 'kubebench[mlflow]'") from e
    return MlflowClient(tracking_uri=tracking_uri)


@contextmanager
def _mlflow_errors(tracking_uri: str) -> Iterator[None]:
    try:
        yield
    except KubebenchError:
        raise
    except Exception as e:  # noqa: BLE001  (MLflow raises many types: its own, HTTP, SQL, OS)
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(f"MLflow at {tracking_uri!r}: {text}") from e


def _experiment(client, name: str, experiment_id: str, source: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    return client.create_experiment(name, tags={"kubebench.experiment_id": experiment_id,
                                                "kubebench.source": source[:_TAG_LIMIT]})


def _exported(client, exp_id: str, experiment_id: str) -> dict[tuple[str, str], str]:
    """MLflow run ids of what an earlier export made: ('trial', id) and ('run', id) keys."""
    found: dict[tuple[str, str], str] = {}
    token = None
    while True:
        page = client.search_runs([exp_id], f"tags.`kubebench.experiment_id` = '{experiment_id}'",
                                  max_results=1000, page_token=token)
        for run in page:
            tags = run.data.tags
            key = ("run", tags["kubebench.run_id"]) if "kubebench.run_id" in tags else ("trial", tags.get("kubebench.trial_id", ""))
            found[key] = run.info.run_id
        token = page.token
        if not token:
            return found


def _parent(client, exp_id: str, experiment_id: str, runs: Sequence[RunRecord], existing: str | None) -> str:
    first = runs[0]
    if existing is None:
        tags = {"kubebench.experiment_id": experiment_id, "kubebench.trial_id": first.trial_id}
        existing = client.create_run(exp_id, run_name=f"trial {first.trial_id}", tags=tags).info.run_id
        _log(client, existing, params=first.params)
    ok = [r for r in runs if r.status == "succeeded"]
    names = sorted({name for r in ok for name in r.metrics})
    medians = {name: statistics.median(r.metrics[name] for r in ok if name in r.metrics) for name in names}
    _log(client, existing, metrics={**medians, "runs_succeeded": len(ok), "runs_failed": len(runs) - len(ok)})
    client.set_terminated(existing, "FINISHED")
    return existing


def _child(client, exp_id: str, parent: str, run: RunRecord) -> None:
    tags = {"mlflow.parentRunId": parent, "kubebench.experiment_id": run.experiment_id,
            "kubebench.trial_id": run.trial_id, "kubebench.run_id": run.run_id,
            "kubebench.repeat": str(run.repeat), "kubebench.status": run.status,
            "kubebench.exit_code": "" if run.exit_code is None else str(run.exit_code),
            "kubebench.reason": run.reason[:_TAG_LIMIT], "kubebench.path": run.path[:_TAG_LIMIT]}
    tags.update({f"kubebench.env.{k}": _text(v)[:_TAG_LIMIT] for k, v in flatten(run.provenance).items()})
    start = int((run.started_at or run.finished_at or 0) * 1000)
    created = client.create_run(exp_id, start_time=start, run_name=f"{run.trial_id} #{run.repeat}", tags=tags)
    mlflow_id = created.info.run_id
    _log(client, mlflow_id, params=run.params, metrics=run.metrics, timestamp=int((run.finished_at or 0) * 1000))
    end = int(run.finished_at * 1000) if run.finished_at else None
    client.set_terminated(mlflow_id, _STATES[run.status], end_time=end)


def _log(client, run_id: str, params: dict[str, Any] | None = None, metrics: dict[str, float] | None = None,
         timestamp: int = 0) -> None:
    from mlflow.entities import Metric, Param

    param_list = [Param(k, _text(v)[:6000]) for k, v in (params or {}).items()]
    metric_list = [Metric(k, float(v), timestamp, 0) for k, v in (metrics or {}).items()]
    for i in range(0, max(len(param_list), 1), 100):  # MLflow takes at most 100 params per batch
        client.log_batch(run_id, metrics=metric_list if i == 0 else [], params=param_list[i:i + 100])


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _by_trial(runs: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    grouped: dict[str, list[RunRecord]] = {}
    for run in runs:
        grouped.setdefault(run.trial_id, []).append(run)
    return grouped
