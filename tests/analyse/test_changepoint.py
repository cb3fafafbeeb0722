"""Change points over the repeats of a series: seeded simulations reach the issue's figures."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from kubebench.analyse.changepoint import GroupedL2, candidates_of, detect, point_noise

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from history_detection import rates, series  # noqa: E402  (the bench's simulation, shared)


def test_a_3_percent_step_is_found_and_flat_series_stay_quiet() -> None:
    # 40 experiments × 5 runs, CV 2%: the figures on 120 seeds each
    result = rates(120, penalty=3.0)
    assert result["detected"] >= 0.90
    assert result["false_alarms"] <= 0.05


def test_the_change_carries_magnitude_direction_and_significance() -> None:
    points, at = series(3, -0.03)
    [change] = detect(points, goal="maximize")
    assert abs(change.index - at) <= 1
    c = change.comparison
    assert c.verdict == "regressed" and -0.04 < c.change < -0.02
    assert c.ratio_ci[0] < c.ratio < c.ratio_ci[1] < 1 and c.p_value < 0.001


def test_direction_follows_the_goal() -> None:
    points, _ = series(4, -0.03)  # lower values: worse when maximized, better when minimized
    assert [c.comparison.verdict for c in detect(points, goal="maximize")] == ["regressed"]
    assert [c.comparison.verdict for c in detect(points, goal="minimize")] == ["improved"]


def test_an_accepted_change_cuts_the_series_and_is_reported() -> None:
    points, at = series(5, -0.03)
    changes = detect(points, goal="maximize", accepted={at}, notes={at: "new kernel"})
    assert [(c.index, c.accepted, c.note) for c in changes] == [(at, True, "new kernel")]
    assert changes[0].comparison.verdict == "regressed"


def test_a_change_after_an_accepted_one_is_measured_against_the_new_level() -> None:
    rng = np.random.default_rng(7)
    levels = [1000.0] * 15 + [1100.0] * 15 + [1067.0] * 15  # +10% accepted, then −3%
    points = [(lvl * (1 + 0.02 * rng.standard_normal(5))).tolist() for lvl in levels]
    changes = detect(points, goal="maximize", accepted={15})
    assert [c.accepted for c in changes] == [True, False]
    assert abs(changes[1].index - 30) <= 1 and changes[1].comparison.verdict == "regressed"
    assert -0.045 < changes[1].comparison.change < -0.015  # against 1100, not the first 1000


def test_day_to_day_wobble_between_experiments_is_not_a_change() -> None:
    # each experiment's runs share an offset (σ 1.5%) larger than what its repeats show (σ 0.3%)
    alarms = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        offsets = 1000 * (1 + 0.015 * rng.standard_normal(40))
        points = [(o * (1 + 0.003 * rng.standard_normal(5))).tolist() for o in offsets]
        alarms += bool(detect(points, goal="maximize"))
    assert alarms <= 3


def test_grouped_cost_is_the_squared_error_of_the_runs() -> None:
    points = [[1.0, 3.0], [2.0], [10.0, 12.0, 14.0]]
    cost = GroupedL2(points)
    flat = [v for p in points for v in p]
    assert cost.error(0, 3) == pytest.approx(float(np.sum((np.array(flat) - np.mean(flat)) ** 2)))
    assert cost.error(2, 3) == pytest.approx(8.0)
    assert cost.error(0, 2) == pytest.approx(2.0)


def test_short_constant_and_empty_series() -> None:
    assert detect([], goal="maximize") == []
    assert detect([[1.0, 1.0]], goal="maximize") == []
    assert detect([[5.0] * 3] * 10, goal="maximize") == []  # no noise, no step
    assert candidates_of([[], [1.0, 1.1], []]) == []
    assert point_noise([[1.0, 2.0], [1.0, 2.0]]) == pytest.approx(0.25)


def test_points_without_values_are_skipped_not_misplaced() -> None:
    points, at = series(6, -0.03)
    holes = [p if i % 7 else [] for i, p in enumerate(points)]
    [change] = detect(holes, goal="maximize")
    assert abs(change.index - at) <= 1


@pytest.mark.parametrize("seed", range(12))
def test_our_binary_segmentation_finds_what_ruptures_binseg_finds(seed: int) -> None:
    """The loop is ruptures' Binseg written out (its import costs 1.5–2 s): both give the same breakpoints."""
    import math

    import ruptures
    from ruptures.base import BaseCost

    from kubebench.analyse.changepoint import binary_segmentation

    rng = np.random.default_rng(seed)
    levels = np.repeat(rng.choice([1000.0, 1030.0, 970.0], size=4), 10)  # up to 3 steps in 40 points
    runs = [list(np.log(level * (1 + 0.02 * rng.standard_normal(int(rng.integers(2, 7)))))) for level in levels]
    BaseCost.register(GroupedL2)
    for pen in (0.001, 0.004, 0.02):
        theirs = ruptures.Binseg(custom_cost=GroupedL2(runs), min_size=1, jump=1).fit(np.arange(40.0)).predict(pen=pen)
        assert binary_segmentation(GroupedL2(runs), 40, pen) == theirs[:-1]
    assert math.isfinite(GroupedL2(runs).error(0, 40))


def test_grouped_cost_keeps_ruptures_cost_interface() -> None:
    """ruptures reads a cost's ``signal`` (n_samples, n_features) and, with ``epsilon``, its ``sum_of_costs``."""
    from ruptures.costs import CostL2

    cost = GroupedL2([[1.0, 3.0], [2.0], [10.0, 12.0, 14.0]])
    # segments [0, 1) and [1, 3): (1 − 2)² + (3 − 2)² = 2, and 2, 10, 12, 14 around 9.5: 83
    assert cost.sum_of_costs([1, 3]) == pytest.approx(85.0)
    assert cost.sum_of_costs([3]) == pytest.approx(160.0)  # all six values around 7
    for signal in (np.arange(6.0), np.arange(6.0).reshape(3, 2)):
        assert cost.fit(signal) is cost
        assert cost.signal.shape == CostL2().fit(signal).signal.shape
