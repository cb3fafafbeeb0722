"""Tests of kubebench.analyse.stats: summaries, t intervals, olympic mean, bootstrap."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from kubebench.analyse.stats import (
    _quantiles,
    _resampled_medians,
    bootstrap_median_ratio,
    olympic_mean,
    summarize,
)


def test_summary_of_values_with_an_outlier() -> None:
    s = summarize([1, 2, 3, 4, 100])
    assert s.n == 5
    assert s.failed == 0
    assert s.median == 3.0
    assert s.olympic_mean == 3.0
    assert s.mean == 22.0
    assert s.min == 1.0 and s.max == 100.0
    assert s.stdev == pytest.approx(np.std([1, 2, 3, 4, 100], ddof=1))
    assert s.cv == pytest.approx(s.stdev / 22.0)


def test_ci_matches_scipy_t_interval() -> None:
    values = [10.2, 9.8, 10.5, 10.1, 9.9, 10.4]
    s = summarize(values)
    low, high = sps.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=sps.sem(values))
    assert s.ci_low == pytest.approx(low, rel=1e-12)
    assert s.ci_high == pytest.approx(high, rel=1e-12)
    assert s.ci_half_width_rel == pytest.approx((high - low) / 2 / np.mean(values))


def test_ci_at_other_confidence_matches_scipy() -> None:
    values = [3.0, 4.0, 5.0]
    s = summarize(values, confidence=0.9)
    low, high = sps.t.interval(0.9, 2, loc=4.0, scale=sps.sem(values))
    assert (s.ci_low, s.ci_high) == pytest.approx((low, high))
    assert s.confidence == 0.9


def test_empty_values_give_nan_summary_and_keep_failures() -> None:
    s = summarize([], failed=3)
    assert s.n == 0
    assert s.failed == 3
    nan_fields = ("mean", "median", "stdev", "cv", "min", "max", "ci_low", "ci_high")
    nan_fields += ("ci_half_width_rel", "olympic_mean")
    for field in nan_fields:
        assert math.isnan(getattr(s, field)), field


def test_single_value_has_no_spread_or_ci() -> None:
    s = summarize([5.0])
    assert (s.n, s.mean, s.median, s.olympic_mean) == (1, 5.0, 5.0, 5.0)
    assert math.isnan(s.stdev) and math.isnan(s.cv)
    assert math.isnan(s.ci_low) and math.isnan(s.ci_high) and math.isnan(s.ci_half_width_rel)


def test_constant_values_have_zero_width_ci() -> None:
    s = summarize([2.0, 2.0, 2.0])
    assert s.stdev == 0.0
    assert (s.ci_low, s.ci_high) == (2.0, 2.0)


def test_zero_mean_gives_nan_relative_statistics() -> None:
    s = summarize([-1.0, 1.0])
    assert s.mean == 0.0
    assert math.isnan(s.cv) and math.isnan(s.ci_half_width_rel)


def test_non_finite_values_count_as_failed() -> None:
    s = summarize([1.0, float("nan"), 3.0, float("inf")], failed=1)
    assert (s.n, s.failed, s.mean) == (2, 3, 2.0)


def test_olympic_mean_equals_mean_below_three_values() -> None:
    assert olympic_mean([1.0, 3.0]) == 2.0
    assert olympic_mean([4.0, 1.0, 100.0]) == 4.0
    assert math.isnan(olympic_mean([]))


def test_invalid_confidence_is_rejected() -> None:
    with pytest.raises(ValueError, match="confidence"):
        summarize([1.0, 2.0], confidence=95)


def test_to_dict_is_valid_json_with_nan_as_null() -> None:
    data = summarize([7.0], failed=1).to_dict()
    text = json.dumps(data, allow_nan=False)
    back = json.loads(text)
    assert back["n"] == 1 and back["failed"] == 1 and back["mean"] == 7.0
    assert back["stdev"] is None and back["ci_low"] is None


@given(st.lists(st.floats(min_value=0.1, max_value=1e6), min_size=2, max_size=30))
def test_summary_invariants(values: list[float]) -> None:
    s = summarize(values)
    assert s.min <= s.median <= s.max
    assert s.min - 1e-9 * s.max <= s.olympic_mean <= s.max + 1e-9 * s.max
    assert s.ci_low <= s.mean <= s.ci_high


def test_bootstrap_is_reproducible_and_covers_the_true_ratio() -> None:
    rng = np.random.default_rng(3)
    num, den = rng.normal(110, 2, 10), rng.normal(100, 2, 10)
    first = bootstrap_median_ratio(num, den, seed=7)
    assert first == bootstrap_median_ratio(num, den, seed=7)
    assert first != bootstrap_median_ratio(num, den, seed=8)
    low, high = first
    assert low < np.median(num) / np.median(den) < high
    assert low < 1.1 < high


def test_bootstrap_needs_two_values_and_positive_denominator() -> None:
    assert all(math.isnan(v) for v in bootstrap_median_ratio([1.0], [1.0, 2.0]))
    assert all(math.isnan(v) for v in bootstrap_median_ratio([1.0, 2.0], [0.0, 0.0]))


@pytest.mark.parametrize("size", [2, 3, 40, 2000])
def test_quantiles_match_numpy(size: int) -> None:
    x = np.random.default_rng(size).normal(size=size)
    assert _quantiles(x, 0.025, 0.975) == pytest.approx(tuple(np.quantile(x, [0.025, 0.975])))


def test_bootstrap_medians_are_medians_of_resamples() -> None:
    # The sorted-positions trick must give the medians of real resamples.
    x = np.array([9.0, 1.0, 4.0, 7.0, 3.0])
    medians = _resampled_medians(x, 1000, np.random.default_rng(0))
    assert set(np.unique(medians)) <= set(x)  # odd n: a median is always one of the values
    even = _resampled_medians(np.array([4.0, 1.0]), 1000, np.random.default_rng(0))
    assert set(np.unique(even)) == {1.0, 2.5, 4.0}
    assert abs(np.mean(even == 2.5) - 0.5) < 0.06
