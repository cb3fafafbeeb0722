"""Provenance in `kubebench show` and `results -f json`; `results -f parquet`; `experiments -f json/csv`."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: prov
job:
  command: [python, -c, "import kubebench; kubebench.report(v={{ n }})"]
parameters:
  n: [1, 2]
"""


@pytest.fixture
def experiment(home: Path, write) -> str:
    assert runner.invoke(app, ["run", str(write("spec.yaml", SPEC)), "--id", "prov"]).exit_code == 0
    return "prov"


def test_show_prints_the_environment(experiment: str) -> None:
    shown = runner.invoke(app, ["show", experiment])
    assert shown.exit_code == 0, shown.output
    assert f"environment: host {platform.node()}" in shown.output
    assert f"software: Python {platform.python_version()}" in shown.output and "kubebench 0.1.0" in shown.output
    assert "workload: backend local" in shown.output


def test_results_json_carries_provenance(experiment: str) -> None:
    runs = json.loads(runner.invoke(app, ["results", experiment, "-f", "json"]).output)
    assert all(r["provenance"]["host"] == platform.node() and r["provenance"]["backend"] == "local" for r in runs)
    assert runs[0]["format_version"] == 3


def test_results_parquet_needs_a_file_and_writes_one(experiment: str, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    refused = runner.invoke(app, ["results", experiment, "-f", "parquet"])
    assert refused.exit_code == 2 and "give a file with -o FILE" in refused.output
    path = tmp_path / "r.parquet"
    assert runner.invoke(app, ["results", experiment, "-f", "parquet", "-o", str(path)]).exit_code == 0
    table = pq.read_table(path)
    assert sorted(table.column("metric.v").to_pylist()) == [1.0, 2.0]
    assert str(table.schema.field("param.n").type) == "int64"


def test_experiments_list_as_json_and_csv(experiment: str) -> None:
    listed = json.loads(runner.invoke(app, ["experiments", "-f", "json"]).output)
    assert [(e["id"], e["runs"], e["succeeded"], e["runs_by_status"]) for e in listed] == [
        (experiment, 2, 2, {"succeeded": 2})]
    rows = runner.invoke(app, ["experiments", "-f", "csv"]).output.splitlines()
    assert rows[0] == "id,name,backend,source,created_at,updated_at,runs,succeeded,failed,cancelled,state,labels"
    assert rows[1].startswith(f"{experiment},prov,local,") and rows[1].endswith(",2,2,0,0,succeeded,")
