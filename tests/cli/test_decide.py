"""`kubebench run --decide-against` end to end on the local backend: each trial stops as soon as it is
decided (far below the spec's max), the decisions are stored and shown, and a regression exits 1."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

# trial a reports 100 in both experiments; trial b reports `speed`: 100 in the base, 90 in the candidate
SPEC = """
name: decide
job:
  command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, rate, --mean,
            "{{ 100 if trial == 'a' else speed }}", --noise, "0.001"]
parameters:
  trial: [a, b]
  speed: 100
repeats: {min: 2, max: 8}
telemetry: {enabled: false}
metrics: [{name: rate, primary: true}]
"""


def test_run_decides_against_a_base_and_stops_each_trial_early(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    assert runner.invoke(app, ["run", str(spec), "--id", "base", "--repeats", "2"]).exit_code == 0
    result = runner.invoke(app, ["run", str(spec), "--id", "cand", "--set", "speed=90", "--decide-against", "base"])
    assert result.exit_code == 1, result.output  # trial b regressed
    assert "sequential decisions on rate against experiment base" in result.output
    assert "2 trials decided in 4 runs (a fixed design: 16): 1 unchanged, 1 regressed" in result.output
    runs = json.loads(runner.invoke(app, ["results", "cand", "-f", "json"]).stdout)
    assert sorted(r["params"]["trial"] for r in runs) == ["a"] * 2 + ["b"] * 2  # 2 of at most 8 each
    shown = runner.invoke(app, ["show", "cand"]).output
    lines = {line.split()[0]: line.split() for line in shown.splitlines() if line.startswith(("a  ", "b  "))}
    assert lines["a"][1] == "unchanged" and lines["b"][1] == "regressed" and lines["a"][-2] == "2/8"
    assert "sequential: false regressed/improved ≤ 5% each" in shown
    compared = runner.invoke(app, ["compare", "base", "cand"]).output
    assert "trial=b: regressed after 2 of ≤8 runs (sequential, against experiment base)" in compared
