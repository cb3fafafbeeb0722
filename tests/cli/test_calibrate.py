"""`kubebench calibrate`: A/A runs store a noise floor per trial × metric; check and history use it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kubebench.analyse.noise import MIN_THRESHOLD, spread
from kubebench.cli import app
from kubebench.store.series import noise_floors
from kubebench.store.series_records import trial_key
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: aa
job:
  command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, ips, --mean, "{{ 100 * bs }}", --noise, "0.02"]
parameters: {bs: [1, 2]}
repeats: 3
metrics: [{name: ips, primary: true}]
"""


def test_spread_is_the_widest_aa_difference_of_medians() -> None:
    assert spread([[100.0, 101.0, 99.0], [104.0, 103.0, 105.0]])[0] == pytest.approx(0.04)
    assert spread([[100.0, 100.0], [100.0, 100.0]]) == (MIN_THRESHOLD, 0.0)
    assert np.isnan(spread([[1.0, 2.0]])[0])


def test_calibrate_runs_the_spec_twice_and_stores_the_floor(home: Path, write) -> None:
    spec = write("aa.yaml", SPEC)
    result = runner.invoke(app, ["calibrate", str(spec), "--times", "2"])
    assert result.exit_code == 0, result.output
    assert "noise floor of series aa" in result.output and "A/A spread" in result.output
    from kubebench.settings import settings

    store = open_store(settings().store_url)
    floors = noise_floors(store, "aa")
    assert sorted(k for k, _ in floors) == [trial_key({"bs": 1}), trial_key({"bs": 2})]
    for floor in floors.values():
        assert len(floor.experiments) == 2 and floor.runs == 6
        assert MIN_THRESHOLD <= floor.spread < 0.1 and 0.002 < floor.cv < 0.08
    labels = [store.experiment(e).labels for e in floor.experiments]
    assert [lab["aa"] for lab in labels] == ["1", "2"] and labels[0]["calibration"] == labels[1]["calibration"]


def _aa_series(home: Path, levels: tuple[float, ...], labels: tuple[dict, ...] | None = None) -> Path:
    """A spec and experiments e0, e1 … of it (one trial, 8 runs a level, 0.5% noise) in the store of ``home``."""
    from kubebench.render.job import job_fingerprint
    from kubebench.spec.load import load_spec

    spec = Path(home.parent / "aa.yaml")
    spec.write_text(SPEC)
    fingerprint = job_fingerprint(load_spec(spec))
    store = open_store(f"sqlite:///{home / 'kb.db'}")
    rng = np.random.default_rng(0)
    for i, level in enumerate(levels):
        store_experiment(store, f"e{i}", "aa", {"ips": [(level * (1 + 0.005 * rng.standard_normal(8))).tolist()]},
                         created_at=1000.0 + i, job_fingerprint=fingerprint, text=SPEC,
                         labels=(labels or ({},) * len(levels))[i])
    store.engine.dispose()
    return spec


def test_a_calibrated_noise_floor_replaces_the_global_threshold(home: Path, write, monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_STORE", f"sqlite:///{home / 'kb.db'}")
    # a noisy benchmark: A/A medians 7% apart; then a candidate 5% lower
    spec = _aa_series(home, (1000, 1070, 1000, 950))
    assert runner.invoke(app, ["check", "aa"]).exit_code == 1  # global 2%: fails
    done = runner.invoke(app, ["calibrate", str(spec), "--from", "e0", "--from", "e1"])
    assert done.exit_code == 0, done.output
    result = runner.invoke(app, ["check", "aa"])
    assert result.exit_code == 0, result.output
    assert "±6." in result.stdout or "±7." in result.stdout  # the threshold shown is the benchmark's own
    assert "noise floor from A/A experiments e0, e1 (kubebench calibrate)" in result.stdout
    found = json.loads(runner.invoke(app, ["history", "aa", "-f", "json"]).stdout)
    assert found["trials"][0]["threshold"] > 0.06


def test_calibrate_refuses_what_it_cannot_measure(home: Path, write, monkeypatch) -> None:
    spec = write("aa.yaml", SPEC)
    one = runner.invoke(app, ["calibrate", str(spec), "--from", "x"])
    assert one.exit_code == 2 and "two or more A/A experiments" in one.output
    two = runner.invoke(app, ["calibrate", str(spec), "--from", "x", "--from", "y"])
    assert two.exit_code == 2 and "not in series 'aa'" in two.output
    bare = write("bare.yaml", "name: bare\njob: {command: ['true']}\n")
    assert "declares no metrics" in runner.invoke(app, ["calibrate", str(bare)]).output


def test_calibrate_from_refuses_experiments_that_are_not_a_and_a(home: Path, monkeypatch) -> None:
    # security review N10: a baseline and its 20% regression given as "A/A" stored a 25% floor, and check passed it
    monkeypatch.setenv("KUBEBENCH_STORE", f"sqlite:///{home / 'kb.db'}")
    spec = _aa_series(home, (1000, 800), ({"version": "1.1"}, {"version": "1.2"}))
    refused = runner.invoke(app, ["calibrate", str(spec), "--from", "e0", "--from", "e1"])
    assert refused.exit_code == 2 and "Traceback" not in refused.output
    assert "calibrate --from takes A/A experiments" in refused.output
    assert "e0 and e1 differ in label version: 1.1 ≠ 1.2" in refused.output
    assert noise_floors(open_store(f"sqlite:///{home / 'kb.db'}"), "aa") == {}
    store_experiment(open_store(f"sqlite:///{home / 'kb.db'}"), "other", "aa", {"ips": [[1000.0, 1001.0]]})
    job = runner.invoke(app, ["calibrate", str(spec), "--from", "e0", "--from", "other"])
    assert job.exit_code == 2 and "other ran another job than the spec's" in job.output
    assert "e0 and other were run from different spec texts" in job.output


def test_a_floor_above_the_cap_is_stored_at_the_cap_saying_so(home: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_STORE", f"sqlite:///{home / 'kb.db'}")
    spec = _aa_series(home, (1000, 800, 1000, 800))  # "A/A" 20% apart, then a 20% loss
    done = runner.invoke(app, ["calibrate", str(spec), "--from", "e0", "--from", "e1"])
    assert done.exit_code == 0, done.output
    assert "10.00% (capped)" in done.stdout and "above the cap of 10%: stored 10%" in done.stderr
    [floor] = noise_floors(open_store(f"sqlite:///{home / 'kb.db'}"), "aa").values()
    assert floor.spread == 0.10
    assert runner.invoke(app, ["check", "aa"]).exit_code == 1  # the 20% loss still fails the gate
    raised = runner.invoke(app, ["calibrate", str(spec), "--from", "e0", "--from", "e1", "--max-floor", "0.3"])
    assert raised.exit_code == 0 and "(capped)" not in raised.stdout
