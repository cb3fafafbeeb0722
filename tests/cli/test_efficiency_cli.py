"""`kubebench efficiency`: results against the spec's published references, and the gate on them."""

from __future__ import annotations

import json
import re
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
    references = shown.output.split("against published references")[1]
    lines = {line.split()[0]: line for line in references.splitlines() if line.startswith("rate=")}
    assert "96.0%" in lines["rate=95"] and "≥ 95%" in lines["rate=95"] and "a published figure" in lines["rate=95"]
    assert "89.0%" in lines["rate=88"] and "< 95%" in lines["rate=88"]
    assert "95.0% … 97.0%" in lines["rate=95"]  # bootstrap CI of the median of 95, 96, 97
    assert "96.0 images/s" in lines["rate=95"] and "100 images/s" in lines["rate=95"]


@pytest.mark.parametrize("columns", [80, 200])
def test_efficiency_writes_si_numbers_units_and_dollars(experiment: dict, columns: int) -> None:
    """Review 2026-12-02 #5: `3.997e+04`, `5.529e-05`, fixed parameters in each row; #28: a title
    folded as "efficiency of / mybench-20261 / 2020132-26uj"."""
    shown = CliRunner(env={"COLUMNS": str(columns)}).invoke(app, ["efficiency", "ref"], env=experiment)
    out = shown.output
    assert "e-0" not in out and "e+0" not in out and "efficiency of ref" in out.splitlines()[0]
    assert max(len(line.rstrip()) for line in out.splitlines()) <= columns
    assert "96.0 images/s" in out and "$" in out.split("against")[0]
    (row,) = [line for line in out.split("against")[0].splitlines() if line.startswith("rate=95 ")]
    assert re.search(r"96\.0 images/s +\$0\.000\d+", row)  # the price per thousand images


def test_efficiency_without_a_throughput_says_so(tmp_path: Path) -> None:
    from support import ux_home

    from kubebench.store.store import open_store

    url = f"sqlite:///{tmp_path / 'kb.db'}"
    ux_home.record(open_store(url), "flat", ux_home.NIGHTLY_SPEC.format(slow=1.0),
                   lambda params, repeat: ("succeeded", {"ops_per_sec": 1.0}))
    shown = runner.invoke(app, ["efficiency", "flat", "--store", url])
    assert shown.exit_code == 0 and shown.output.startswith("no throughput metric to base efficiency on")


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
