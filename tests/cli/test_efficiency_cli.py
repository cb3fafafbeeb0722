"""`kubebench efficiency`: results against the spec's published references, and the gate on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "250"})

SPEC = """
name: ref
job:
  command: [python, -c, "import kubebench; kubebench.report(images_per_sec={{ rate }} + {{ kubebench.repeat }})"]
parameters: {rate: [95, 88]}
repeats: 3
metrics: [{name: images_per_sec, primary: true}]
telemetry: {gpu: false, interval: 5s}
prices: {cpu_core_hour: 0.05}
reference:
  - {metric: images_per_sec, value: 100, unit: images/s, source: "a published figure"}
"""


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("ref")
    (folder / "spec.yaml").write_text(SPEC)
    env = {"KUBEBENCH_HOME": str(folder / "home")}
    result = runner.invoke(app, ["run", str(folder / "spec.yaml"), "--id", "ref"], env=env)
    assert result.exit_code == 0, result.output
    return env


def test_each_trial_is_shown_as_a_fraction_of_the_reference_with_its_ci(experiment: dict) -> None:
    shown = runner.invoke(app, ["efficiency", "ref"], env=experiment)
    assert shown.exit_code == 0, shown.output
    lines = {line.split("│")[1].strip(): line for line in shown.output.splitlines() if "rate=" in line and "%" in line}
    assert "96.0%" in lines["rate=95"] and "≥ 95%" in lines["rate=95"] and "a published figure" in lines["rate=95"]
    assert "89.0%" in lines["rate=88"] and "< 95%" in lines["rate=88"]
    assert "95.0% … 97.0%" in lines["rate=95"]  # bootstrap CI of the median of 95, 96, 97


def test_the_gate_fails_below_the_reference_s_min_ratio_or_the_rule_s(experiment: dict) -> None:
    failing = runner.invoke(app, ["efficiency", "ref", "--fail-on", "reference"], env=experiment)
    assert failing.exit_code == 1 and "below the reference (reference): failing" in failing.output
    assert runner.invoke(app, ["efficiency", "ref", "--fail-on", "reference:85%"], env=experiment).exit_code == 0
    bad = runner.invoke(app, ["efficiency", "ref", "--fail-on", "images:95%"], env=experiment)
    assert bad.exit_code == 2 and "expected 'reference' or 'reference:N%'" in bad.output


def test_runs_carry_cost_and_say_why_they_have_no_energy(experiment: dict) -> None:
    records = json.loads(runner.invoke(app, ["results", "ref", "-f", "json"], env=experiment).stdout)
    for record in records:
        assert record["metrics"]["cost_usd"] > 0
        assert "cost_basis" in record["info"]
        assert record["info"].get("energy_unavailable") or record["metrics"].get("energy_joules", -1) >= 0


def test_a_bad_prices_file_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text("name: p\njob: {command: [python, -c, pass]}\nprices: {file: none.yaml}\n")
    result = runner.invoke(app, ["run", str(tmp_path / "spec.yaml")], env={"KUBEBENCH_HOME": str(tmp_path / "h")})
    assert result.exit_code == 2 and "none.yaml: prices file not found" in result.output
