"""Before it runs, a benchmark says what its repeats can detect (issue #28): from the A/A floor of `calibrate`,
else the series' recent experiments, else its own first runs; and warns when the gate's threshold is below it."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from kubebench.analyse.detectable import TrialNoise, detectability, pooled_cv
from kubebench.cli.detectable import noise_note
from kubebench.numerics.twosample import detectable_change
from kubebench.runner import plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.records import RunResult
from kubebench.store.series import save_noise_floors
from kubebench.store.series_records import NoiseFloor, trial_key
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

SPEC = """
name: gate
job: {command: [python, -c, "pass"]}
parameters: {bs: [8, 16]}
repeats: 3
metrics: [{name: ips, primary: true}]
"""


def _note(home: Path, write, spec: str = SPEC):
    config = settings()
    experiment = plan_experiment(load_spec(write("spec.yaml", spec)), config)
    out = io.StringIO()
    watch = noise_note(experiment, config.store_url, Console(file=out, width=400))
    return experiment, watch, out


def test_the_detectable_change_of_the_noisiest_trial_against_its_threshold() -> None:
    trials = {"a": TrialNoise("bs=8", 0.005, 0.02), "b": TrialNoise("bs=16", 0.02, 0.02)}
    found = detectability(trials, 3, 4, "the A/A floor")
    assert found.trial.label == "bs=16" and not found.enough
    assert found.change == pytest.approx(detectable_change(3, 3, 0.02, 0.05 / 8, 0.9))
    assert detectable_change(found.advised, found.advised, 0.02, 0.05 / 8, 0.9) <= 0.02
    assert found.text().startswith("3 repeats at CV 2.0% (bs=16), from the A/A floor, detect changes above ")
    assert found.text().endswith(f"; the gate's threshold is 2.0%: use `repeats: {found.advised}`")
    assert detectability({"a": TrialNoise("", 0.001, 0.02)}, 5, 1, "x").enough
    assert detectability({"a": TrialNoise("", 0.0, 0.02)}, 5, 1, "x") is None
    assert pooled_cv([[100.0, 102.0], [98.0]]) == pytest.approx(2 ** 0.5 / 101)
    assert pooled_cv([[1.7e308, 1.6e308], [1.7e308]]) == pytest.approx(pooled_cv([[1.7, 1.6]]))


def test_run_says_what_the_a_and_a_floor_lets_it_detect(home: Path, write) -> None:
    store = open_store(settings().store_url)
    save_noise_floors(store, "gate", [NoiseFloor(trial_key({"bs": 8}), "ips", 0.03, 0.02, ("aa-1", "aa-2"), 12),
                                      NoiseFloor(trial_key({"bs": 16}), "ips", 0.03, 0.004, ("aa-1", "aa-2"), 12)])
    _, watch, out = _note(home, write)
    assert watch is None
    text = out.getvalue()
    assert text.startswith("warning: 3 repeats at CV 2.0% (bs=8), from the A/A floor of `kubebench calibrate` "
                           "(aa-1, aa-2), detect changes above ")
    assert "the gate's threshold is 3.0%: use `repeats: " in text


def test_run_reads_the_noise_of_the_series_recent_experiments(home: Path, write) -> None:
    store = open_store(settings().store_url)
    rng = np.random.default_rng(0)
    for i in range(3):
        store_experiment(store, f"g{i}", "gate", {"ips": [list(1000 * (1 + 0.002 * rng.standard_normal(5))),
                                                          list(2000 * (1 + 0.002 * rng.standard_normal(5)))]},
                         params=[{"bs": 8}, {"bs": 16}], created_at=100.0 + i)
    _, _, out = _note(home, write)
    assert "from the runs of the series' last 3 experiments" in out.getvalue()
    assert ": the gate's threshold, 2.0%, is within reach" in out.getvalue()


def test_without_a_known_noise_the_first_runs_tell_it_once(home: Path, write) -> None:
    experiment, watch, out = _note(home, write)
    assert out.getvalue() == "" and watch is not None
    runs = [r for r in experiment.plan.runs if not r.warmup]
    values = {8: [100.0, 104.0, 98.0], 16: [200.0, 201.0, 199.0]}
    for run in sorted(runs, key=lambda r: r.repeat):  # in rounds, as the runner orders them
        watch.run_finished(run, RunResult(run_id=run.id, status="succeeded", finished_at=0.0,
                                          metrics={"ips": values[run.trial.params["bs"]][run.repeat]}))
    text = out.getvalue()
    assert text.count("\n") == 1 and "(bs=8), from the first runs of this experiment, detect changes above" in text


def test_one_repeat_is_said_to_find_nothing(home: Path, write) -> None:
    _, watch, out = _note(home, write, SPEC.replace("repeats: 3", "repeats: 1"))
    assert watch is None and "a comparison needs 2 runs a side" in out.getvalue()
