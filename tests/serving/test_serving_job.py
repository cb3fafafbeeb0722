"""``kind: Serving`` on the local backend: servers started and waited for, the load generator told
their URL, servers stopped afterwards with their logs kept; and how it fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.errors import SpecError
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

pytestmark = pytest.mark.slow

SPEC = """
name: serving-test
job:
  kind: Serving
  workers: "{{{{ loads }}}}"
  command: [python, -m, kubebench.workloads.llm_load, --rate, "{{{{ rate }}}}", --requests, "12",
            --output-tokens, "4", --input-tokens, "8", --max-lag, "10", --scrape-interval, "0.2"]
  server:
    command: [python, -m, kubebench.testing.llm_fake, --port, "$(KUBEBENCH_SERVER_PORT)", --ttft, "0.02",
              --tpot, "0.005"{extra}]
    replicas: "{{{{ servers }}}}"
    readiness: {readiness}
    startup_timeout: {timeout}
parameters:
  rate: 20
  servers: 1
  loads: 1
telemetry: {{enabled: false}}
timeout: 5m
metrics: [{{name: ttft_p50, goal: minimize, primary: true}}, {{name: request_throughput}}]
"""


def run(tmp_path: Path, extra: str = "", readiness: str = "/v1/models", timeout: str = "2m", **params):
    spec = tmp_path / "serving.yaml"
    spec.write_text(SPEC.format(extra=extra, readiness=readiness, timeout=timeout))
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    overrides = [f"{k}={v}" for k, v in params.items()]
    experiment = plan_experiment(load_spec(spec, overrides=overrides), config, "serving-test")
    execute(experiment, store)
    (record,) = store.runs("serving-test")
    return record, config.experiments_root / "serving-test" / record.run_id / "output"


def test_server_then_load_then_teardown(tmp_path: Path) -> None:
    record, output = run(tmp_path)
    assert record.status == "succeeded", record.reason + record.log_tail
    assert record.metrics["ttft_p50"] >= 0.02 and record.metrics["request_throughput"] > 0
    assert sorted(p.name for p in output.glob("*.log")) == ["load-0.log", "server-0.log"]
    assert (output / "requests-0.parquet").exists() and (output / "server-metrics.jsonl").exists()
    manifest = (output.parent / "config" / "manifest.yaml").read_text()
    assert "kind: Serving" in manifest and "readinessPath: /v1/models" in manifest


def test_two_servers_two_loads(tmp_path: Path) -> None:
    record, output = run(tmp_path, servers=2, loads=2)
    assert record.status == "succeeded", record.reason + record.log_tail
    assert sorted(p.name for p in output.glob("requests-*.parquet")) == ["requests-0.parquet", "requests-1.parquet"]
    assert sorted(p.name for p in output.glob("server-*.log")) == ["server-0.log", "server-1.log"]


def test_a_server_never_ready_fails_the_run_with_what_it_answered(tmp_path: Path) -> None:
    record, _ = run(tmp_path, readiness="/not-here", timeout="3s")
    assert record.status == "failed"
    assert "the server was not ready after 3s" in record.reason and "404" in record.reason


def test_a_server_that_dies_fails_the_run(tmp_path: Path) -> None:
    record, _ = run(tmp_path, extra=', --no-such-option')
    assert record.status == "failed" and "server-0 exited with code 2" in record.reason


def test_server_without_command_is_a_spec_error(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: x\njob:\n  kind: Serving\n  command: [python]\n  server: {port: 80}\n")
    with pytest.raises(SpecError, match="server"):
        load_spec(spec)


SEARCH = """
name: capacity-test
job:
  kind: Serving
  command: [python, -m, kubebench.workloads.llm_load, --rate, "{{ rate }}", --arrivals, constant, --duration, "2",
            --output-tokens, "10", --input-tokens, "8", --max-lag, "0.5", --scrape-interval, "5"]
  server:
    command: [python, -m, kubebench.testing.llm_fake, --port, "$(KUBEBENCH_SERVER_PORT)", --ttft, "0.05",
              --tpot, "0.02", --slots, "{{ slots }}"]
parameters:
  slots: 2
search: {parameter: rate, low: 4, high: 16, resolution: 0.3, min: 1, max: 1, slo: {ttft_p99: 250ms}}
telemetry: {enabled: false}
timeout: 2m
metrics: [{name: ttft_p99, goal: minimize}]
"""


def test_capacity_search_brackets_the_saturation_of_a_known_server(tmp_path: Path) -> None:
    from kubebench.capacity.driver import answers, sweep_points
    from kubebench.capacity.search import grid_probes

    spec_path = tmp_path / "search.yaml"
    spec_path.write_text(SEARCH)
    config = settings(home=tmp_path / "home")
    store = open_store(config.store_url)
    loaded = load_spec(spec_path)
    experiment = plan_experiment(loaded, config, "capacity-test")
    execute(experiment, store)
    runs = store.runs("capacity-test")
    (answer,) = answers(loaded.spec.search, sweep_points(loaded.spec, experiment.plan), runs)
    saturation = 2 / (0.05 + 9 * 0.02)  # slots / service time: 8.7 requests/s
    assert answer.status == "found", answer.steps
    assert answer.meets <= saturation * 1.15 and answer.fails >= saturation * 0.85, answer.steps
    assert answer.probes < grid_probes(loaded.spec.search)
    assert {r.params["rate"] for r in runs} >= {4, 16}
