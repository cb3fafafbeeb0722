"""Against real Prometheus and Pushgateway servers: Prometheus scrapes kubebench's /metrics, a pushed
result is queried back, and a Kubernetes run's telemetry is read from cAdvisor and DCGM series.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from support.timing import scaled
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.monitor.exposition import serve_metrics
from kubebench.testing.prometheus import PrometheusServer, PushgatewayServer

pytestmark = pytest.mark.slow


def test_prometheus_scrapes_the_store_s_metrics(run_spec, SPEC: str, prometheus: PrometheusServer,
                                                kubebench_port: int) -> None:
    store, runs = run_spec(SPEC + "parameters: {n: [1, 2]}\n")
    server = serve_metrics(store, kubebench_port)
    try:
        found = prometheus.wait_for('kubebench_runs{experiment="exp", state="succeeded"}', scaled(30))
        assert found[0]["value"][1] == "2" and found[0]["metric"]["name"] == "spin"
        latest = prometheus.wait_for('kubebench_metric{experiment="exp", metric="ops"}', scaled(30))
        assert sorted(s["metric"]["trial"] for s in latest) == sorted(r.trial_id for r in runs)
        assert "params" not in latest[0]["metric"]  # spec text is no label (review 2026-12-02, N8)
        assert {s["value"][1] for s in latest} == {"1"}
        count = prometheus.wait_for('kubebench_run_duration_seconds_count{experiment="exp"}', scaled(30))
        assert count[0]["value"][1] == "2"
        peak = prometheus.wait_for('kubebench_metric{experiment="exp", metric="memory_peak_bytes"}', scaled(30))
        assert float(peak[0]["value"][1]) > 1e6
    finally:
        server.shutdown()
        server.server_close()


def test_a_started_prometheus_has_scraped_every_target(pushgateway: PushgatewayServer) -> None:
    # Prometheus is ready ~5 s before its first scrape: a run shorter than that, first in a session,
    # was never seen (CI, 2026-12-01). start() returns once each target, up or down, has a sample.
    with PrometheusServer({"pushgateway": pushgateway.address, "nobody": "127.0.0.1:1"}) as server:
        up = {s["metric"]["job"]: s["value"][1] for s in server.query("up")}
    assert up == {"pushgateway": "1", "nobody": "0"}


def test_run_with_metrics_port_exposes_live_telemetry(tmp_path: Path, prometheus: PrometheusServer,
                                                      kubebench_port: int, write, SPEC: str) -> None:
    # Long enough for Prometheus (1 s scrapes) to see the run live, longer on a slow machine.
    spec = write("spec.yaml", SPEC.replace("< 1.2", f"< {scaled(4):g}").replace("name: spin", "name: live"))
    store_url = f"sqlite:///{tmp_path / 'kb.db'}"
    scraped: list[str] = []

    def scrape() -> None:  # what kubebench's own /metrics shows during the run
        deadline = time.monotonic() + scaled(20)
        while time.monotonic() < deadline and not scraped:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{kubebench_port}/metrics", timeout=2) as r:
                    text = r.read().decode()
                if 'series="cpu_percent"' in text:
                    scraped.append(text)
            except OSError:
                pass
            time.sleep(0.2)

    poller = threading.Thread(target=scrape)
    poller.start()
    started = time.time()
    result = CliRunner().invoke(app, ["run", str(spec), "--id", "live", "--store", store_url,
                                      "--metrics-port", str(kubebench_port)])
    poller.join()
    assert result.exit_code == 0, result.output
    assert scraped and 'kubebench_telemetry{experiment="live"' in scraped[0]
    # Prometheus scraped the live series while the run went on
    found = prometheus.query(f'max_over_time(kubebench_telemetry{{experiment="live", series="cpu_percent"}}'
                             f'[{int(time.time() - started) + 2}s])')
    assert found and float(found[0]["value"][1]) > 0  # a spinning process, whatever its share of a core
    with pytest.raises(OSError):  # the server stopped with the run
        urllib.request.urlopen(f"http://127.0.0.1:{kubebench_port}/metrics", timeout=2)


def test_a_pushed_result_is_queried_back(run_spec, SPEC: str, prometheus: PrometheusServer,
                                         pushgateway: PushgatewayServer) -> None:
    spec = SPEC + f"report: [{{kind: pushgateway, url: '{pushgateway.url}'}}]\n"
    store, runs = run_spec(spec)
    run = runs[0]
    assert "report_warning_pushgateway" not in run.info
    with urllib.request.urlopen(f"{pushgateway.url}/api/v1/metrics", timeout=5) as r:
        groups = json.load(r)["data"]
    assert any(g["labels"].get("trial") == run.trial_id for g in groups)
    found = prometheus.wait_for(f'kubebench_run_metric{{experiment="exp", trial="{run.trial_id}", metric="ops"}}', scaled(30))
    assert found[0]["value"][1] == "1" and found[0]["metric"]["run"] == run.run_id
    ok = prometheus.wait_for(f'kubebench_run_succeeded{{trial="{run.trial_id}"}}', scaled(30))
    assert ok[0]["value"][1] == "1"


def test_the_serve_app_answers_metrics(run_spec, SPEC: str) -> None:
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    store, _ = run_spec(SPEC)
    response = TestClient(make_app(store), base_url="http://127.0.0.1").get("/metrics")
    assert response.status_code == 200
    assert 'kubebench_runs{experiment="exp",name="spin",state="succeeded"} 1.0' in response.text
