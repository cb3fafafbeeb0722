"""Shared fixtures: an isolated KUBEBENCH_HOME and a writer of spec files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh KUBEBENCH_HOME (store and experiments) for one test."""
    folder = tmp_path / "home"
    monkeypatch.setenv("KUBEBENCH_HOME", str(folder))
    monkeypatch.delenv("KUBEBENCH_STORE", raising=False)
    return folder


@pytest.fixture
def write(tmp_path: Path):
    """Write a dedented text file under the test's folder and return its path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return _write
