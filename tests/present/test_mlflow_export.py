"""MLflow export: trials as parent runs, runs nested, with params, metrics and tags (sqlite tracking URI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.runs import workload_metrics
from typer.testing import CliRunner

from kubebench.cli import app

mlflow = pytest.importorskip("mlflow", reason="mlflow is an optional extra: pip install 'kubebench[mlflow]'")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:mlflow")  # MLflow's own SQLAlchemy use
runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: to-mlflow
job:
  command: [python, -c, "import kubebench, sys; kubebench.report(v={{ n }}, w=1); sys.exit({{ n }} == 3)"]
parameters:
  n: [1, 2, 3]
repeats: 2
"""


@pytest.mark.slow
def test_trials_and_runs_are_logged_once(home: Path, write, tmp_path: Path) -> None:
    assert runner.invoke(app, ["run", str(write("spec.yaml", SPEC)), "--id", "ml"]).exit_code == 1  # n=3 fails
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = runner.invoke(app, ["export", "mlflow", "ml", "--tracking-uri", uri])
    assert done.exit_code == 0, done.output
    assert "6 runs exported in 3 trials (0 already there)" in done.output
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("ml")
    found = client.search_runs([exp.experiment_id])
    children = [r for r in found if "kubebench.run_id" in r.data.tags]
    parents = {r.info.run_id: r for r in found if "kubebench.run_id" not in r.data.tags}
    assert len(children) == 6 and len(parents) == 3
    ours = {r["run_id"]: r for r in json.loads(runner.invoke(app, ["results", "ml", "-f", "json"]).output)}
    for child in children:
        run = ours[child.data.tags["kubebench.run_id"]]
        assert child.data.params == {"n": str(run["params"]["n"])}
        assert child.data.tags["mlflow.parentRunId"] in parents
        assert child.data.tags["kubebench.status"] == run["status"]
        assert child.info.status == ("FINISHED" if run["status"] == "succeeded" else "FAILED")
        assert child.data.tags["kubebench.env.python"] == run["provenance"]["python"]
        if run["status"] == "succeeded":
            assert workload_metrics(child.data.metrics) == {"v": float(run["params"]["n"]), "w": 1.0}
    medians = sorted(p.data.metrics.get("v", -1) for p in parents.values())
    assert medians == [-1, 1.0, 2.0]  # the failing trial has no succeeded runs
    again = runner.invoke(app, ["export", "mlflow", "ml", "--tracking-uri", uri])
    assert "0 runs exported in 3 trials (6 already there)" in again.output
    assert len(client.search_runs([exp.experiment_id])) == 9


def test_unknown_experiment_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["export", "mlflow", "nope", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"])
    assert result.exit_code == 2 and "no experiment 'nope'" in result.output
