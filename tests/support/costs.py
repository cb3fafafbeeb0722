"""Experiments whose runs carry a cost (as the runner's accounting stores it under ``prices:``), written
straight into a store: the figures are exact, so the tests of results, compare, the report and the
dashboard can assert what each shows."""

from __future__ import annotations

import time

import yaml

from kubebench.plan.plan import make_plan
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.records import ExperimentRecord, RunResult

SPEC = """\
name: priced
job: {command: ["true"]}
parameters: {batch: [8, 16]}
repeats: 3
metrics: [{name: tokens_per_sec, unit: tokens/s, primary: true}]
prices: {cpu_core_hour: 0.05}
"""

#: USD per hour of every run (what ``cost_usd`` and the price per token follow from).
RATE = 0.36


def run_metrics(tokens_per_sec: float, seconds: float) -> dict[str, float]:
    """What the accounting adds to a run that made ``tokens_per_sec`` for ``seconds`` at :data:`RATE`."""
    return {"tokens_per_sec": tokens_per_sec, "usd_per_hour": RATE, "cost_usd": RATE * seconds / 3600,
            "usd_per_million_tokens": RATE / 3600 / tokens_per_sec * 1e6}


def priced_experiment(store, exp_id: str, speed: float = 1.0, priced: bool = True) -> None:
    """``batch`` 8 and 16 × 3 runs: batch 8 runs 100, 110, 120 s at 1000 tokens/s, batch 16 twice as long
    at twice the rate; ``speed`` divides the times and multiplies the rates; without ``priced``, the
    same runs with no cost."""
    spec = BenchmarkSpec.model_validate(yaml.safe_load(SPEC))
    plan = make_plan(spec, exp_id, "f1")
    now = time.time()
    store.begin_experiment(ExperimentRecord(id=exp_id, name="priced", backend="local", source="priced.yaml",
                                            spec_text=SPEC, job_fingerprint="f1", created_at=now, updated_at=now), plan)
    results = []
    for run in plan.runs:
        scale = run.trial.params["batch"] / 8
        metrics = run_metrics(1000 * scale * speed, (100 + 10 * run.repeat) * scale / speed)
        if not priced:
            metrics = {"tokens_per_sec": metrics["tokens_per_sec"]}
        results.append(RunResult(run_id=run.id, status="succeeded", metrics=metrics, finished_at=now))
    store.finish_runs(results)
