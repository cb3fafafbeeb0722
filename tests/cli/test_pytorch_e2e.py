"""The README's example through kubebench: real PyTorch, 1 and 2 DDP replicas over gloo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch-cnn" / "benchmark.yaml"
runner = CliRunner(env={"COLUMNS": "200"})


@pytest.mark.slow
def test_example_runs_ddp_end_to_end(home: Path) -> None:
    result = runner.invoke(app, ["run", str(EXAMPLE), "--set", "batch_size=8", "--repeats", "1", "--id", "cnn"])
    assert result.exit_code == 0, result.output
    runs = {r["params"]["workers"]: r for r in json.loads(runner.invoke(app, ["results", "cnn", "-f", "json"]).stdout)}
    assert set(runs) == {1, 2}
    for workers, run in runs.items():
        assert run["status"] == "succeeded"
        metrics = run["metrics"]
        assert metrics["images_per_sec"] > 0 and metrics["step_time_p50"] > 0
        assert metrics["steady_items_per_sec"] > 0
        output = home / "experiments" / "cnn" / run["run_id"] / "output"
        logs = sorted(p.name for p in output.glob("*.log"))
        assert logs == (["master-0.log"] if workers == 1 else ["master-0.log", "worker-0.log"])
        assert "world_size=%d" % workers in (output / "master-0.log").read_text()
    manifest = (home / "experiments" / "cnn" / runs[2]["run_id"] / "config" / "manifest.yaml").read_text()
    assert "kind: PyTorchJob" in manifest and "Worker:" in manifest
