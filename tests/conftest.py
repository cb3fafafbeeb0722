"""Shared fixtures (an isolated KUBEBENCH_HOME, a writer of spec files, servers) and the suite's rules:
under CI a skip that is not on the allow-list (support/skips.py) fails; every test's timeout is scaled
by KUBEBENCH_TEST_TIME_FACTOR (support/timing.py); the closing counts are written where
KUBEBENCH_TEST_SUMMARY says (.ci/run prints them last)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings
from support.skips import skip_allowed, under_ci
from support.timing import time_factor

# No per-example deadline anywhere: many properties do I/O (files, SQLite, subprocesses), and a slow
# example on a busy machine is not a bug. Each test keeps its own max_examples.
hypothesis_settings.register_profile("kubebench", deadline=None)
hypothesis_settings.load_profile("kubebench")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Scale each test's pytest-timeout limit (its own marker, else the configured one) by the time factor."""
    factor = time_factor()
    if factor == 1.0:
        return
    default = float(config.getini("timeout") or 0)
    for item in items:
        marker = item.get_closest_marker("timeout")
        base = float(marker.args[0]) if marker and marker.args else float(marker.kwargs.get("timeout", default)) if marker else default
        if base:
            item.add_marker(pytest.mark.timeout(base * factor), append=False)


def _refuse_skip(report, nodeid: str) -> None:
    """Under CI, a skip not on the allow-list becomes a failure that says which skip and why."""
    if not (under_ci() and report.skipped and not hasattr(report, "wasxfail")):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if skip_allowed(nodeid, reason):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI, which is not allowed: {reason}\n"
                       "(install what it needs, e.g. `make setup-dev`; allowed skips are in tests/support/skips.py)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    report = yield
    _refuse_skip(report, item.nodeid)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    report = yield
    _refuse_skip(report, collector.nodeid)
    return report


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """One closing line of counts, printed and written to $KUBEBENCH_TEST_SUMMARY when set."""
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    line = f"{passed} passed, {failed} failed, {skipped} skipped"
    terminalreporter.write_line(f"kubebench tests: {passed + failed} ran: {line}")
    if os.environ.get("KUBEBENCH_TEST_SUMMARY"):
        Path(os.environ["KUBEBENCH_TEST_SUMMARY"]).write_text(f"{passed + failed} ran\n{line}\n", encoding="utf-8")


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


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium (required in CI, skipped elsewhere if absent)."""
    import shutil

    executable = os.environ.get("KUBEBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not executable:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (the Makefile's setup installs Debian's chromium)")
        pytest.skip("chromium is not installed")
    return executable


@pytest.fixture(scope="module")
def playwright():
    """The one Playwright of a test module (a second sync Playwright cannot start beside it). Module
    scope: while it lives, its event loop runs in the main thread, where ``asyncio.run`` then refuses
    to start (the serving tests use it), and pytest keeps a module's tests together in any order."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as started:
        yield started


#: Chromium flags of every browser the tests start.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


@pytest.fixture(scope="module")
def browser(playwright, chromium: str):
    """Headless Debian Chromium driven by Playwright."""
    browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
    yield browser
    browser.close()


@pytest.fixture
def artifacts() -> Path:
    """Folder for screenshots and other test artifacts (kept after the run)."""
    folder = Path(__file__).resolve().parent.parent / "test-artifacts"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server (Debian's binaries) on a free loopback port for the whole session.

    Without the binaries: a failure in CI (CI=true), a skip elsewhere.
    """
    from kubebench.testing.postgres import PostgresServer, PostgresUnavailable

    try:
        server = PostgresServer()
    except PostgresUnavailable as e:
        if os.environ.get("CI"):
            pytest.fail(f"{e} (the Makefile's setup installs it)")
        pytest.skip(str(e))
    with server:
        yield server


@pytest.fixture
def postgres_url(postgres_server, request) -> str:
    """URL of a fresh database on the session's PostgreSQL server."""
    import re
    import uuid

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:8]
    return postgres_server.create_database(name)


@pytest.fixture(scope="session")
def s3_server():
    """An S3-compatible server (moto) on a free loopback port for the whole session."""
    pytest.importorskip("s3fs")
    from kubebench.testing.s3 import S3Server

    with S3Server() as server:
        yield server


@pytest.fixture
def s3(s3_server, monkeypatch: pytest.MonkeyPatch, request):
    """The S3 server with the standard AWS variables set and a fresh bucket; yields ``s3://<bucket>``."""
    import re
    import uuid

    from kubebench.testing.s3 import clear_client_caches

    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    bucket = ("kb-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()))[:40].strip("-") + "-" + uuid.uuid4().hex[:8]
    s3_server.create_bucket(bucket)
    clear_client_caches()
    yield f"s3://{bucket}"
    clear_client_caches()


@pytest.fixture(autouse=True)
def _signal_handlers_are_left_as_found():
    """A test that leaves SIGINT or SIGTERM with another handler than it found breaks every later test
    of Ctrl-C (in random order, any of them): fail it, naming the handler, and put the old one back."""
    import signal

    found = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    left = {s: signal.getsignal(s) for s in found}
    for s, handler in found.items():
        signal.signal(s, handler)
    changed = {signal.Signals(s).name: repr(h) for s, h in left.items() if h is not found[s]}
    assert not changed, f"the test left signal handlers changed: {changed}"
