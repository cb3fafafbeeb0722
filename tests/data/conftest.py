"""Fixtures of the data tests: one file server on loopback for the session (files cleared per test)."""

from __future__ import annotations

import pytest
from support.http_files import FileServer

from kubebench.data import fetch


@pytest.fixture(scope="session")
def _file_server():
    with FileServer() as server:
        yield server


@pytest.fixture
def files(_file_server: FileServer):
    """The file server, emptied of the last test's files and faults."""
    _file_server.files.clear()
    _file_server.cut.clear()
    _file_server.stall.clear()
    _file_server.requests.clear()
    _file_server.ranges = True
    yield _file_server
    _file_server.stall.clear()


@pytest.fixture(autouse=True)
def _no_retry_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries of a download at once: the tests wait for nothing."""
    monkeypatch.setattr(fetch, "RETRY_DELAY_S", 0.0)
