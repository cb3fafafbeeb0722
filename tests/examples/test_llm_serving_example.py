"""examples/llm-serving: the reference server under a rate sweep, then a capacity search, through
`kubebench run` and `kubebench report` as the README shows them (under 3 minutes here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm-serving"
runner = CliRunner(env={"COLUMNS": "200"})
pytestmark = pytest.mark.slow
pytest.importorskip("torch")


def run(spec: str, name: str) -> list[dict]:
    result = runner.invoke(app, ["run", str(EXAMPLE / spec), "--id", name])
    records = json.loads(runner.invoke(app, ["results", name, "-f", "json"]).stdout)
    assert result.exit_code == 0, result.output + "\n".join(r["reason"] for r in records)
    return records


def test_rate_sweep_then_capacity_search_then_report(home: Path, tmp_path: Path) -> None:
    sweep = run("benchmark.yaml", "llm-sweep")
    assert len(sweep) == 2 and all(r["status"] == "succeeded" for r in sweep)
    by_rate = {r["params"]["rate"]: r["metrics"] for r in sweep}
    assert by_rate[18]["output_tokens_per_s"] > by_rate[2]["output_tokens_per_s"]
    assert all(0 < m["ttft_p50"] <= m["ttft_p99"] and m["load_replicas"] == 1 for m in by_rate.values())
    capacity = run("capacity.yaml", "llm-capacity")
    rates = [r["params"]["rate"] for r in capacity]
    assert {2, 32} <= set(rates) and len(set(rates)) < 8  # a bisection, not a grid
    report = tmp_path / "report.html"
    result = runner.invoke(app, ["report", "llm-sweep", "llm-capacity", "-o", str(report)])
    assert result.exit_code == 0, result.output
    text = report.read_text()
    assert "throughput vs interactivity" in text and "capacity: highest rate" in text
