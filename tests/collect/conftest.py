"""The context of a run whose folders exist, for the collect tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.collect.context import RunContext
from kubebench.paths import RunPaths


@pytest.fixture
def ctx(tmp_path: Path) -> RunContext:
    paths = RunPaths(tmp_path / "exp", tmp_path / "data", "exp-1", "run-1")
    for folder in (paths.config, paths.output, paths.result):
        Path(folder).mkdir(parents=True)
    return RunContext("exp-1", "trial-1", "run-1", 0, {"batch_size": 8}, paths, tmp_path)
