"""Tests of kubebench.numerics.stats: summaries, t intervals, olympic mean, bootstrap."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special, stats as sps

from kubebench.numerics.stats import (
    NAN,
    Summary,
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


@settings(deadline=None)  # no per-example time limit: a busy machine is not a failure
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


def _numpy_summary(values: object, failed: int = 0, confidence: float = 0.95) -> Summary:
    """The NumPy/SciPy implementation that the pure-Python summarize replaced, as a reference."""
    raw = np.asarray(values, dtype=float).ravel()
    x = np.sort(raw[np.isfinite(raw)])
    failed += int(raw.size - x.size)
    n = int(x.size)
    if n == 0:
        return Summary(0, failed, *([NAN] * 10), confidence=confidence)
    mean = float(x.sum()) / n
    stdev = math.sqrt(float(np.sum((x - mean) ** 2)) / (n - 1)) if n >= 2 else NAN
    if n >= 2:
        half = float(special.stdtrit(n - 1, (1 + confidence) / 2)) * stdev / math.sqrt(n)
    else:
        half = NAN
    relative = (lambda part: part / abs(mean) if mean != 0 and not math.isnan(part) else NAN)
    return Summary(
        n=n,
        failed=failed,
        mean=mean,
        median=float(0.5 * (x[(n - 1) // 2] + x[n // 2])),
        stdev=stdev,
        cv=relative(stdev),
        min=float(x[0]),
        max=float(x[-1]),
        ci_low=mean - half,
        ci_high=mean + half,
        ci_half_width_rel=relative(half),
        olympic_mean=float(x[1:-1].mean()) if n >= 3 else mean,
        confidence=confidence,
    )


def _assert_same_summary(actual: Summary, expected: Summary, scale: float) -> None:
    """Equal up to rounding: 1e-12 relative, or 1e-12 of the values' magnitude for sums."""
    for field in ("n", "failed", "confidence"):
        assert getattr(actual, field) == getattr(expected, field), field
    for field in ("mean", "median", "stdev", "min", "max", "ci_low", "ci_high", "olympic_mean"):
        a, e = getattr(actual, field), getattr(expected, field)
        assert math.isnan(a) == math.isnan(e), field
        assert math.isnan(e) or a == pytest.approx(e, rel=1e-12, abs=1e-12 * scale), field
    for field in ("cv", "ci_half_width_rel"):  # relative to the mean: compare away from mean 0
        a, e = getattr(actual, field), getattr(expected, field)
        assert math.isnan(a) == math.isnan(e), field
        if not math.isnan(e) and abs(expected.mean) > 1e-6 * scale:
            assert a == pytest.approx(e, rel=1e-9), field


_MEASUREMENTS = st.one_of(
    st.floats(min_value=1e-3, max_value=1e6),
    st.floats(min_value=-1e6, max_value=1e6),
    st.integers(min_value=-1000, max_value=10**6),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)


@settings(deadline=None)
@given(
    st.lists(_MEASUREMENTS, max_size=40),
    st.integers(min_value=0, max_value=5),
    st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99, 0.999]),
)
def test_summary_equals_the_numpy_reference(
    values: list[float], failed: int, confidence: float
) -> None:
    scale = max((abs(v) for v in values if math.isfinite(v)), default=1.0)
    actual = summarize(values, failed=failed, confidence=confidence)
    _assert_same_summary(actual, _numpy_summary(values, failed, confidence), scale)


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 10, 100, 1000])
def test_summary_of_seeded_random_data_equals_the_numpy_reference(size: int) -> None:
    rng = np.random.default_rng(size)
    values = rng.lognormal(3.0, 0.5, size)
    values[rng.random(size) < 0.1] = np.nan
    values[rng.random(size) < 0.05] = np.inf
    for confidence in (0.9, 0.95, 0.99):
        expected = _numpy_summary(values, 2, confidence)
        for given_values in (values, list(values)):
            actual = summarize(given_values, failed=2, confidence=confidence)
            _assert_same_summary(actual, expected, 100.0)


def test_short_inputs_equal_the_numpy_reference() -> None:
    short = ([], [3.5], [math.nan], [2.0, 5.0], [math.inf, 1.0, 4.0], [1, 2, 4], [7.0, -1.0, 2.0, 2.0])
    for values in short:
        _assert_same_summary(summarize(values), _numpy_summary(values), 10.0)


def test_summary_accepts_any_iterable_of_numbers() -> None:
    expected = summarize([1.0, 2.0, 4.0, 8.0])
    assert summarize([1, 2, 4, 8]) == expected
    assert summarize((1.0, 2.0, 4.0, 8.0)) == expected
    assert summarize(float(v) for v in (1, 2, 4, 8)) == expected
    assert summarize(np.array([1.0, 2.0, 4.0, 8.0])) == expected
    assert summarize(np.array([1, 2, 4, 8], dtype=np.int32)) == expected
    assert summarize(np.array([[1.0, 2.0], [4.0, 8.0]])) == expected  # flattened, like ravel()
    assert summarize([np.float32(1.0), np.float64(2.0), 4, 8.0]) == expected
    floats = [v for k, v in expected.to_dict().items() if k not in ("n", "failed")]
    assert all(type(v) is float for v in floats)  # plain floats, not NumPy scalars


def test_summary_of_huge_values_does_not_overflow() -> None:
    s = summarize([1e308, 1e308, 1e308])
    assert s.n == 3 and s.min == s.max == s.olympic_mean == 1e308
    assert s.mean == s.median == 1e308  # not inf as NumPy's sum gives (review 2026-11-30, finding 12)


def test_olympic_mean_sorts_nan_last_like_numpy() -> None:
    for values in ([1.0, math.nan, 3.0, 2.0], [math.nan, 5.0, 1.0], [4.0, 1.0, 9.0, 2.0, 7.0]):
        expected = float(np.mean(np.sort(np.asarray(values))[1:-1]))
        actual = olympic_mean(values)
        assert actual == expected or (math.isnan(actual) and math.isnan(expected))
    assert olympic_mean(np.array([3.0, 1.0, 2.0, 10.0])) == 2.5


def test_importing_stats_loads_neither_numpy_nor_scipy() -> None:
    code = (
        "import sys\n"
        "from kubebench.numerics.stats import NAN, Summary, summarize, t_interval\n"
        "summarize([1.0, 2.0, 4.0]).to_dict(); t_interval(1.0, 0.5, 3, 0.95)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
