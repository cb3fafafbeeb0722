"""The store suite runs on SQLite and on a real PostgreSQL server (started by the session)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubebench.plan.plan import make_plan
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.records import ExperimentRecord
from kubebench.store.store import open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path) -> str:
    """A URL of a new store: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sub' / 'kb.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url: str):
    opened = open_store(store_url)
    yield opened
    opened.engine.dispose()


def small_spec(repeats: int = 2) -> BenchmarkSpec:
    return BenchmarkSpec.model_validate(
        {"name": "s", "job": {"command": ["true"]}, "parameters": {"bs": [1, 2]}, "repeats": repeats}
    )


@pytest.fixture
def begin():
    """``begin(store, exp_id, repeats, created_at)``: record an experiment of 2 trials × ``repeats`` runs."""
    return _begin


def _begin(store, exp_id: str = "exp-1", repeats: int = 2, created_at: float | None = None):
    now = created_at or time.time()
    plan = make_plan(small_spec(repeats), exp_id, "f1")
    store.begin_experiment(ExperimentRecord(id=exp_id, name="s", backend="local", source="s.yaml",
                                            spec_text="name: s", job_fingerprint="f1", created_at=now,
                                            updated_at=now), plan)
    return plan
