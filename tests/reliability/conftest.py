"""Fixtures of the reliability tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_support import Cli


@pytest.fixture
def cli(home: Path) -> Cli:
    """``kubebench`` as a subprocess with the test's KUBEBENCH_HOME."""
    return Cli(home)
