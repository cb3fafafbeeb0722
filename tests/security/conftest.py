"""Fixtures of the security tests (issue #15): they reuse the web tests' helpers (``web_support``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "web"))

from security_support import TINY


@pytest.fixture
def tiny_spec(write) -> Path:
    """A two-run spec whose jobs only report a metric."""
    return write("tiny.yaml", TINY)
