"""Store a series of experiments with given values, without running anything (tests and bench/).

Each experiment is recorded as the runner records one (``begin_experiment`` then ``finish_runs``),
so everything that reads the store sees ordinary experiments.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from ..plan.plan import make_plan
from ..spec.model import BenchmarkSpec
from ..store.records import ExperimentRecord, RunResult


def spec_text(name: str, metrics: Sequence[tuple[str, str]], series: str | None = None) -> str:
    """A spec's YAML declaring ``metrics`` (name, goal); the first is primary."""
    lines = [f"name: {name}"] + ([f"series: {series}"] if series else []) + ["job: {command: ['true']}", "metrics:"]
    lines += [f"  - {{name: {m}, goal: {g}{', primary: true' if i == 0 else ''}}}" for i, (m, g) in enumerate(metrics)]
    return "\n".join(lines) + "\n"


def store_experiment(store, exp_id: str, name: str, values: dict[str, Sequence[Sequence[float]]],
                     params: Sequence[dict[str, object]] = ({},), created_at: float | None = None,
                     labels: dict[str, str] | None = None, goals: dict[str, str] | None = None,
                     series: str | None = None, provenance: dict[str, object] | None = None,
                     job_fingerprint: str = "f", text: str | None = None) -> None:
    """One succeeded experiment: ``values[metric][trial]`` lists the runs' values of that trial (``text``: the
    spec's text stored, default one declaring the metrics; ``job_fingerprint``: its job's, as the runner stores)."""
    metrics = list(values)
    goals = goals or {}
    text = text if text is not None else spec_text(name, [(m, goals.get(m, "maximize")) for m in metrics], series)
    parameters = {k: [p[k] for p in params] for k in (params[0] if params else {})}
    repeats = max(len(v) for trials in values.values() for v in trials)
    spec = BenchmarkSpec.model_validate({"name": name, "job": {"command": ["true"]}, "sweep": "zip",
                                         "parameters": parameters, "repeats": repeats})
    plan = make_plan(spec, exp_id, "f")
    now = created_at if created_at is not None else time.time()
    store.begin_experiment(ExperimentRecord(id=exp_id, name=name, backend="local", source=f"{name}.yaml",
                                            spec_text=text, job_fingerprint=job_fingerprint, created_at=now, updated_at=now,
                                            series=series or name, labels=labels or {}), plan)
    results = []
    for run in plan.runs:
        got = {m: values[m][run.trial.index][run.repeat] for m in metrics
               if run.repeat < len(values[m][run.trial.index])}
        results.append(RunResult(run_id=run.id, status="succeeded" if got else "failed", metrics=got,
                                 finished_at=now, provenance=provenance or {}))
    store.finish_runs(results)
