"""The store suite runs on SQLite and on a real PostgreSQL server (started by the session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.store.store import open_store

from store_support import begin_experiment


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


@pytest.fixture
def begin():
    """``begin(store, exp_id, repeats, created_at)``: record an experiment of 2 trials × ``repeats`` runs."""
    return begin_experiment
