"""The robust level of each point of a series and the variance of that level (analyse/levels.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kubebench.analyse.changepoint import Floor
from kubebench.analyse.levels import (
    _chi2_truncated_mean,
    clipped,
    flatten,
    levels_of,
    point_levels,
    run_scale,
    wobble_of,
)


def test_the_runs_scale_comes_from_differences_within_points_so_the_wobble_cancels() -> None:
    # differences 1 and 2 within the points; the 10 between them does not count
    assert run_scale(np.array([0.0, 1.0, 10.0, 12.0]), np.array([2, 2])) == pytest.approx(1.5 / 0.9538725524)
    assert run_scale(np.array([0.0, 5.0]), np.array([1, 1])) == 0.0  # no point of two runs


def test_a_slow_run_has_no_weight_in_its_point_s_level() -> None:
    flat = np.array([0.0, 0.01, -0.01, 0.005, -0.25, 1.0, 1.01, 0.99])  # one run 25% slow in the first point
    sizes = np.array([5, 3])
    owner = np.repeat(np.arange(2), sizes)
    level, per_run = point_levels(flat, sizes, owner, 0.01)
    assert level[0] == pytest.approx(0.00125, abs=5e-4)  # near the mean of the other four (all five: −0.049)
    assert level[1] == pytest.approx(1.0, abs=1e-4)
    assert 0.5e-4 < per_run < 2e-4  # about the scale's square: the slow run adds nothing


def test_the_levels_of_gaussian_runs_are_almost_their_means() -> None:
    rng = np.random.default_rng(0)
    points = [(1000 * (1 + 0.02 * rng.standard_normal(5))).tolist() for _ in range(40)]
    found = levels_of(points)
    means = np.array([np.mean(np.log(p)) for p in points])
    assert found.log and np.mean(np.abs(found.level - means)) < 0.002  # a run's sd is 0.02
    assert 0.015 < found.scale < 0.025 and found.wobble < 0.01**2  # none, but its estimate is never below 0
    assert found.variance == pytest.approx(np.full(40, 0.02**2 / 5), rel=0.5)


@pytest.mark.parametrize("sd", [0.0, 0.01, 0.02])
def test_the_wobble_is_what_the_consecutive_levels_show_beyond_their_runs(sd: float) -> None:
    estimates = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        level = sd * rng.standard_normal(40) + 0.005 * rng.standard_normal(40)  # runs' share: 0.005²
        level[20:] += 0.2  # a step does not count
        estimates.append(wobble_of(level, np.full(40, 0.005**2)))
    assert math.sqrt(np.mean(estimates)) == pytest.approx(sd, abs=0.002)


def test_a_floor_is_pooled_with_the_series_own_wobble_by_their_degrees_of_freedom() -> None:
    rng = np.random.default_rng(1)
    points = [(1000 * (1 + 0.002 * rng.standard_normal(5))).tolist() for _ in range(7)]  # no wobble
    alone = levels_of(points)
    # 10 A/A experiments 8% apart at most: a wobble of log(1.08)² / 4.3, 9 degrees of freedom against 4
    floored = levels_of(points, Floor(0.08, 10, 50))
    assert alone.wobble < 1e-6
    assert floored.wobble == pytest.approx(9 / 13 * math.log(1.08) ** 2 / 4.3, rel=0.01)
    assert floored.dof < alone.dof
    assert levels_of(points, Floor(0.08, 1, 5)).wobble == alone.wobble  # one experiment measures nothing


def test_an_outlying_point_is_held_near_its_neighbours_but_not_the_newest() -> None:
    level = np.array([0.0, 0.1, -0.1, 5.0, 0.0, 0.1, 0.0, -0.1, 5.0])
    held = clipped(level, np.full(9, 0.01))
    assert held[3] == pytest.approx(0.1 + 0.3)  # the median of the 5 points around it (0.1) + 3 sd
    assert held[8] == 5.0 and np.allclose(np.delete(held, 3), np.delete(level, 3))
    step = np.array([0.0] * 5 + [1.0] * 5)
    assert np.allclose(clipped(step, np.full(10, 0.01)), step)  # a step is kept


def test_the_truncated_mean_of_chi2_is_scipys() -> None:
    from scipy import stats

    assert _chi2_truncated_mean(9.0) == pytest.approx(
        stats.chi2.expect(lambda x: x, args=(1,), ub=9.0) / stats.chi2.cdf(9.0, 1), rel=1e-8)


def test_flatten_gives_every_value_and_each_point_s_count() -> None:
    flat, sizes = flatten([[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]])
    assert flat.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and sizes.tolist() == [2, 1, 3]
