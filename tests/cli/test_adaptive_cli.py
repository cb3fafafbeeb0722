"""Adaptive repeats end to end: quiet trials stop early, noisy ones run to max, resume adds nothing."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: adaptive
job:
  command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, rate, --mean, 100, --noise, "{{ noise }}"]
parameters:
  noise: [0.002, 0.2]
repeats: {min: 3, max: 8, target_ci: 0.02}
metrics: [{name: rate, primary: true}]
"""


def counts(exp_id: str) -> dict[float, int]:
    runs = json.loads(runner.invoke(app, ["results", exp_id, "-f", "json"]).stdout)
    found: dict[float, int] = {}
    for run in runs:
        assert run["status"] == "succeeded"
        found[run["params"]["noise"]] = found.get(run["params"]["noise"], 0) + 1
    return found


def test_adaptive_repeats_stop_when_the_ci_is_tight(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    result = runner.invoke(app, ["run", str(spec), "--id", "ad"])
    assert result.exit_code == 0, result.output
    # the repeated CI of 3 runs has one degree of freedom: the quiet trial stops at its 4th run
    assert counts("ad") == {0.002: 4, 0.2: 8}
    again = runner.invoke(app, ["run", str(spec), "--id", "ad"])
    assert again.exit_code == 0
    assert counts("ad") == {0.002: 4, 0.2: 8}


def test_repeats_option_turns_adaptive_off(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    assert runner.invoke(app, ["run", str(spec), "--id", "fixed", "--repeats", "2"]).exit_code == 0
    assert counts("fixed") == {0.002: 2, 0.2: 2}
