"""A benchmark's noise floor from A/A experiments (``kubebench calibrate``)."""

from __future__ import annotations

import math

import pytest

from kubebench.analyse.noise import MIN_THRESHOLD, noise_floors, spread
from kubebench.store.series_records import SeriesData, SeriesExperiment, trial_key


def test_spread_is_the_widest_gap_between_one_experiment_and_the_rest_and_cv_the_pooled_one() -> None:
    widest, cv = spread([[100.0], [98.0, 102.0]])
    assert widest == MIN_THRESHOLD  # medians 100 and 100: never believed below the minimum
    assert cv == pytest.approx(math.sqrt(8.0) / 100)  # one run has no variance: only the other experiment's counts
    widest, cv = spread([[100.0], [102.0], [float("nan")]])
    assert widest == pytest.approx(0.02)  # 102 against 100; the nan experiment has no values
    assert math.isnan(cv)  # single runs: no within-experiment variance at all
    assert all(math.isnan(v) for v in spread([[100.0, 101.0], []]))  # one experiment is no A/A pair


def test_floors_of_trials_with_single_runs_or_missing_from_an_experiment() -> None:
    one, two = trial_key({"bs": 1}), trial_key({"bs": 2})
    data = SeriesData("bench", [SeriesExperiment(e, i, {}) for i, e in enumerate(("e1", "e2", "e3"))],
                      params={one: {"bs": 1}, two: {"bs": 2}},
                      runs={one: {"e1": [{"ips": 100.0}], "e2": [{"ips": 102.0}]},  # none in e3
                            two: {"e3": [{"ips": 5.0}, {"ips": 6.0}]}})  # in one experiment only: no floor
    [floor] = noise_floors(data, ["e1", "e2", "e3"], ["ips"])
    assert (floor.trial_key, floor.metric, floor.experiments, floor.runs) == (one, "ips", ("e1", "e2"), 2)
    assert floor.spread == pytest.approx(0.02)
    assert floor.cv == 0.0  # no within-experiment variance measured: 0, not nan
