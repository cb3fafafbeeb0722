"""What the store tests share: a small spec and an experiment begun from it."""

from __future__ import annotations

import time

from kubebench.plan.plan import make_plan
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.records import ExperimentRecord


def small_spec(repeats: int = 2) -> BenchmarkSpec:
    return BenchmarkSpec.model_validate(
        {"name": "s", "job": {"command": ["true"]}, "parameters": {"bs": [1, 2]}, "repeats": repeats}
    )


def begin_experiment(store, exp_id: str = "exp-1", repeats: int = 2, created_at: float | None = None):
    now = created_at or time.time()
    plan = make_plan(small_spec(repeats), exp_id, "f1")
    store.begin_experiment(ExperimentRecord(id=exp_id, name="s", backend="local", source="s.yaml",
                                            spec_text="name: s", job_fingerprint="f1", created_at=now,
                                            updated_at=now), plan)
    return plan
