"""Telemetry of real local runs: stored as series linked to the run, summarised among its metrics,
kept out of the way of the workload's own metrics; reporters' failures recorded as warnings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.monitor.pushgateway import PushgatewayConfig  # noqa: F401  (the reporter plugin loads)

@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'kb.db'}"
    return request.getfixturevalue("postgres_url")


def cpu_seconds(points: list[tuple[float, float]]) -> float:
    """CPU seconds a cpu_percent series stands for (each sample covers the time since the previous one)."""
    return sum(v / 100 * (t - t0) for (t0, _), (t, v) in zip(points, points[1:]))


def test_a_run_s_telemetry_is_stored_and_summarised(run_spec, SPEC: str, store_url: str) -> None:
    store, runs = run_spec(SPEC, store_url)
    run = runs[0]
    assert run.status == "succeeded"
    series = store.telemetry(run.run_id)
    cpu = [v for _, v in series["cpu_percent"]]
    # The workload used 1.2 s of CPU: the samples add up to most of it, whatever share of a core it had.
    assert len(cpu) >= 4 and cpu_seconds(series["cpu_percent"]) > 0.6
    assert [t for t, _ in series["cpu_percent"]] == sorted(t for t, _ in series["cpu_percent"])
    assert run.started_at <= series["system_cpu_percent"][0][0] <= run.finished_at
    assert run.metrics["cpu_percent_mean"] == -1  # the workload's value, not the summary's
    assert run.metrics["cpu_percent_max"] == max(cpu)
    assert run.metrics["memory_peak_bytes"] == max(v for _, v in series["memory_bytes"])
    store.delete_experiment("exp")
    assert store.telemetry(run.run_id) == {}
    store.engine.dispose()


def test_storing_telemetry_again_replaces_the_run_s_series(run_spec, SPEC: str) -> None:
    store, runs = run_spec(SPEC)
    run_id = runs[0].run_id
    store.add_telemetry(run_id, [("cpu_percent", 2.0, 5.0), ("cpu_percent", 1.0, 4.0), ("gpu0_power_watts", 1.0, 9.0)])
    assert store.telemetry(run_id) == {"cpu_percent": [(1.0, 4.0), (2.0, 5.0)], "gpu0_power_watts": [(1.0, 9.0)]}


def test_telemetry_can_be_switched_off(run_spec, SPEC: str) -> None:
    store, runs = run_spec(SPEC.replace("interval: 0.2s", "enabled: false"))
    assert store.telemetry(runs[0].run_id) == {}
    assert "cpu_percent_max" not in runs[0].metrics


def test_a_failing_reporter_is_a_warning_not_a_failed_run(run_spec, SPEC: str) -> None:
    from kubebench.testing.postgres import free_port

    spec = SPEC + f"report: [{{kind: pushgateway, url: 'http://127.0.0.1:{free_port()}', timeout: 2}}]\n"
    store, runs = run_spec(spec)
    assert runs[0].status == "succeeded"
    assert "Connection refused" in runs[0].info["report_warning_pushgateway"]


def test_the_report_plots_the_runs_telemetry(run_spec, SPEC: str) -> None:
    from kubebench.monitor.plots import runs_telemetry
    from kubebench.present.report import experiment_section

    store, runs = run_spec(SPEC)
    section = experiment_section(store.experiment("exp"), runs, "ops", runs_telemetry(store, runs))
    figure = section.figures[-1]
    traces = {(t.legendgroup, t.name, t.yaxis) for t in figure.data}
    label = "all · repeat 0"  # the run's trial (its swept parameters: none here) and repeat, not its hash
    assert traces == {(runs[0].run_id, label, "y"), (runs[0].run_id, label, "y2")}  # CPU and memory of the one run
    assert list(figure.data[0].y) == [v for _, v in store.telemetry(runs[0].run_id)["cpu_percent"]]
    assert max(figure.data[0].y) > 0
