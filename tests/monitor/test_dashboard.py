"""The Grafana dashboard: valid for the Grafana Foundation SDK's model, with kubebench's metrics."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from kubebench.cli import app


def test_grafana_dashboard_prints_a_valid_dashboard() -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import Dashboard

    result = CliRunner().invoke(app, ["grafana-dashboard"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    # the SDK's model reads it back and writes the same JSON: every field has its schema's shape
    assert json.loads(json.dumps(Dashboard.from_json(data), cls=JSONEncoder)) == data
    assert data["uid"] == "kubebench"
    variables = {v["name"]: v for v in data["templating"]["list"]}
    assert variables["experiment"]["query"] == "label_values(kubebench_runs, experiment)"
    assert variables["datasource"]["type"] == "datasource"
    panels = [p for p in data["panels"] if p["type"] != "row"]
    titles = {p["title"] for p in panels}
    assert {"Runs by state", "Run duration (median, p95)", "Latest metric per trial", "GPU utilisation",
            "CPU of the run's processes", "Memory of the run's processes"} <= titles
    for panel in panels:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names = set(re.findall(r"\b(kubebench_[a-z_]+)", target["expr"]))
            assert names and '$experiment' in target["expr"], target["expr"]
            assert names <= {"kubebench_runs", "kubebench_run_duration_seconds_bucket", "kubebench_metric",
                             "kubebench_run_metric", "kubebench_telemetry"}
            assert target["datasource"]["uid"] == "${datasource}"
    telemetry = [t["expr"] for p in panels for t in p["targets"] if "kubebench_telemetry" in t["expr"]]
    assert any("gpu[0-9]+_utilization_percent" in e for e in telemetry)
    # panels do not overlap on Grafana's 24-column grid
    cells = set()
    for panel in data["panels"]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & area, panel["title"]
        cells |= area


def test_every_panel_query_is_valid_promql(prometheus) -> None:
    from kubebench.monitor.dashboard import dashboard_json

    panels = [p for p in json.loads(dashboard_json())["panels"] if p["type"] != "row"]
    for expr in {t["expr"] for p in panels for t in p["targets"]}:
        prometheus.query(expr.replace("$experiment", ".*"))  # a parse error is an HTTP 400
