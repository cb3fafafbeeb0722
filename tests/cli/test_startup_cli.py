"""``kubebench startup`` (each trial's phases, gates on them) and ``overhead``'s split by phase, on
local experiments whose workloads take a known time to join their peers (issue #31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
SPEC = """
name: {name}
job:
  command: [python, -c, "import time, kubebench; kubebench.mark('imports_done'); time.sleep({wait}); kubebench.mark('rendezvous_done'); kubebench.mark('first_step'); time.sleep(0.05); kubebench.mark('last_step'); kubebench.report(v=1)"]
repeats: 3
metrics: [{{name: v}}]
"""


@pytest.fixture
def experiments(home: Path, write) -> tuple[str, str]:
    for name, wait in (("bare", 0.0), ("platform", 0.6)):
        result = runner.invoke(app, ["run", str(write(f"{name}.yaml", SPEC.format(name=name, wait=wait))), "--id", name])
        assert result.exit_code == 0, result.output
    return "bare", "platform"


def test_startup_tables_json_and_gates(experiments) -> None:
    bare, platform = experiments
    table = runner.invoke(app, ["startup", platform])
    assert table.exit_code == 0, table.output
    assert "phases of platform" in table.output and "rendezvous" in table.output and "end to end" in table.output
    data = json.loads(runner.invoke(app, ["startup", platform, "-f", "json"]).stdout)
    (trial,) = data
    rendezvous = trial["phases"]["rendezvous_seconds"]
    assert rendezvous["n"] == 3 and rendezvous["median"] == pytest.approx(0.6, abs=0.1)
    assert rendezvous["ci"] == [None, None]  # 3 runs: no 95% interval of a median
    passed = runner.invoke(app, ["startup", platform, "--fail-on", "rendezvous_seconds:max<5s",
                                 "--fail-on", "overhead_fraction:<99%"])
    assert passed.exit_code == 0, passed.output
    failed = runner.invoke(app, ["startup", platform, "--fail-on", "rendezvous_seconds:p95<100ms"])
    assert failed.exit_code == 1 and "rendezvous p95" in failed.output and "limit < 0.10 s" in failed.output
    bad = runner.invoke(app, ["startup", platform, "--fail-on", "rendezvous:<1s"])
    assert bad.exit_code == 2 and "invalid --fail-on rule" in bad.output
    none = runner.invoke(app, ["startup", platform, "--trial", "size=1"])
    assert none.exit_code == 2 and "no trial of platform has size=1" in none.output


def test_overhead_names_the_phase_that_differs(experiments) -> None:
    bare, platform = experiments
    result = runner.invoke(app, ["overhead", bare, platform, "--metric", "v"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("end to end"))
    assert line.startswith("end to end +") and ": rendezvous +0." in line
