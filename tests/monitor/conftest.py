"""Real Prometheus and Pushgateway servers on loopback for the monitoring tests (one of each per session).

Prometheus scrapes, every second: kubebench's ``/metrics`` (``kubebench_port``: tests serve it there),
the Pushgateway, and a stand-in for cAdvisor and the DCGM exporter (``exporter_port``). Without the
binaries the tests fail in CI (CI=true) and are skipped elsewhere.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from kubebench.testing.postgres import free_port
from kubebench.testing.prometheus import PrometheusServer, PushgatewayServer, ServerUnavailable


def _unavailable(error: Exception) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{error} (the Makefile's deps-debian target installs it)")
    pytest.skip(str(error))


@pytest.fixture(scope="session")
def kubebench_port() -> int:
    """Where Prometheus expects kubebench's /metrics."""
    return free_port()


@pytest.fixture(scope="session")
def exporter_port() -> int:
    """Where Prometheus expects the cAdvisor / DCGM exporter stand-in."""
    return free_port()


@pytest.fixture(scope="session")
def pushgateway():
    try:
        server = PushgatewayServer()
    except ServerUnavailable as e:
        _unavailable(e)
    with server:
        yield server


@pytest.fixture(scope="session")
def prometheus(pushgateway: PushgatewayServer, kubebench_port: int, exporter_port: int):
    targets = {"kubebench": f"127.0.0.1:{kubebench_port}", "pushgateway": pushgateway.address,
               "exporters": f"127.0.0.1:{exporter_port}"}
    try:
        server = PrometheusServer(targets)
    except ServerUnavailable as e:
        _unavailable(e)
    with server:
        yield server


_SPEC = """
name: spin
job:
  command: [python, -c, "import time, kubebench\\nwhile time.process_time() < 1.2: pass\\nkubebench.report(ops=1, cpu_percent_mean=-1)"]
metrics: [{name: ops}]
telemetry: {interval: 0.2s, gpu: false}
"""


@pytest.fixture
def SPEC() -> str:  # noqa: N802
    """A benchmark whose one run spins until it has used 1.2 s of CPU (however long that takes on a busy
    machine) and reports ops=1 (and a cpu_percent_mean of its own)."""
    return _SPEC


@pytest.fixture
def run_spec(tmp_path: Path):
    """Run a spec's text as experiment ``exp`` on the local backend; returns (store, runs)."""
    from kubebench.runner import execute, plan_experiment
    from kubebench.settings import settings
    from kubebench.spec.load import load_spec
    from kubebench.store.store import open_store

    def run(text: str, store_url: str | None = None):
        path = tmp_path / "spec.yaml"
        path.write_text(textwrap.dedent(text))
        config = settings(store_url or f"sqlite:///{tmp_path / 'kb.db'}", home=tmp_path / "home")
        experiment = plan_experiment(load_spec(path), config, "exp")
        store = open_store(config.store_url)
        execute(experiment, store)
        return store, store.runs("exp")

    return run
