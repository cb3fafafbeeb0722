"""Tests of kubebench.numerics.stats that kill the surviving mutants of issue #20: the tails of t_sf,
the bootstrap of a median ratio (its input types, sample sizes, denominators, overflow) and scaling."""

from __future__ import annotations

import array
import math
import statistics
import warnings

import numpy as np
import pytest
from scipy import special

from kubebench.numerics.stats import (
    _HUGE,
    _log_beta,
    _quantiles,
    _resampled_medians,
    bootstrap_median_ratio,
    scaled_together,
    summarize,
    t_interval,
    t_sf,
)

BIG = 1.5e308  # 2 * BIG overflows


def _nan_pair(pair: tuple[float, float]) -> bool:
    return math.isnan(pair[0]) and math.isnan(pair[1])


# t_sf


@pytest.mark.parametrize("df", [1.0, 2.5, 5.0])
def test_t_tail_beyond_a_t_whose_square_overflows_is_zero_or_one_like_scipy(df: float) -> None:
    # t * t is inf: x = df / (df + t²) is 0, where the incomplete beta function is 0
    assert t_sf(1e200, df) == float(special.stdtr(df, -1e200)) == 0.0
    assert t_sf(-1e200, df) == float(special.stdtr(df, 1e200)) == 1.0


# scaled_together


def test_scaled_together_leaves_ordinary_values_alone() -> None:
    c, b = np.array([3.0, 5.0]), np.array([-7.0, 1e100])
    out = scaled_together(c, b)
    assert len(out) == 2
    assert out[0].tolist() == [3.0, 5.0] and out[1].tolist() == [-7.0, 1e100]


def test_scaled_together_divides_huge_samples_by_one_power_of_two() -> None:
    c, b = np.array([1e300, 3.0]), np.array([-1.7e308])
    sc, sb = scaled_together(c, b)
    scale = math.ldexp(1.0, math.frexp(1.7e308)[1] - 1)  # 1.7e308 / scale in [1, 2)
    assert sb.tolist() == [-1.7e308 / scale] and 1 <= abs(sb[0]) < 2
    assert sc.tolist() == [1e300 / scale, 3.0 / scale]


def test_scaled_together_scales_from_the_threshold_on() -> None:
    (at,) = scaled_together(np.array([_HUGE, 1.0]))
    assert at.tolist() == [1.0, 1.0 / _HUGE]  # _HUGE is a power of two
    (below,) = scaled_together(np.array([_HUGE / 2 * 1.5]))
    assert below.tolist() == [_HUGE / 2 * 1.5]


def test_scaled_together_leaves_samples_with_infinities_or_nothing_alone() -> None:
    sc, sb = scaled_together(np.array([math.inf, 3.0]), np.array([-math.inf, 1e300]))
    assert sc.tolist() == [math.inf, 3.0] and sb.tolist() == [-math.inf, 1e300]
    empty, also_empty = scaled_together(np.array([]), np.array([]))
    assert empty.size == 0 and also_empty.size == 0
    assert scaled_together() == ()


# _quantiles


def test_quantiles_at_zero_and_one_are_the_minimum_and_maximum_like_numpy() -> None:
    x = np.array([4.0, -1.0, 9.5, 2.0])
    assert _quantiles(x, 0.0, 1.0) == (-1.0, 9.5) == tuple(np.quantile(x, [0.0, 1.0]))
    assert _quantiles(np.array([2.0, 1.0]), 0.0, 1.0) == (1.0, 2.0)


def test_a_bootstrap_at_confidence_one_spans_every_resampled_ratio() -> None:
    # tail 0: the bounds are the smallest and largest resampled ratio, 1/4 and 4 for two values a side
    assert bootstrap_median_ratio([1.0, 4.0], [1.0, 4.0], confidence=1.0, resamples=400) == (0.25, 4.0)


# _resampled_medians


def test_resampled_medians_of_values_near_the_largest_float_do_not_overflow() -> None:
    x = np.array([BIG, 1.7e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning about an overflow reaches the user
        medians = _resampled_medians(x, 200, np.random.default_rng(0))
    assert set(np.unique(medians).tolist()) == {BIG, 1.6e308, 1.7e308}


def test_resampled_medians_of_large_negative_values_do_not_overflow() -> None:
    medians = _resampled_medians(np.array([-BIG, -1.7e308, -BIG]), 100, np.random.default_rng(1))
    assert set(np.unique(medians).tolist()) <= {-BIG, -1.7e308}
    assert np.all(np.isfinite(medians))


@pytest.mark.parametrize("size", [2**15, 2**15 + 1, 40_000])
def test_bootstrap_of_samples_of_any_size(size: int) -> None:
    # positions are small integers (int16) below 2**15 values, int64 from there on
    x = np.arange(1.0, size + 1)
    low, high = bootstrap_median_ratio(x, x, resamples=20, seed=0)
    assert 0.97 < low < 1.0 < high < 1.03


def test_bootstrap_of_a_given_seed_gives_the_same_interval_as_before() -> None:
    # a re-run analysis reproduces a stored one: the resampling of a seed does not change between versions
    small = bootstrap_median_ratio(np.arange(1.0, 41.0), np.arange(2.0, 42.0), resamples=50, seed=0)
    assert small == (0.6433061224489797, 1.2929511278195487)
    x = np.arange(1.0, 2**15 + 1)
    large = bootstrap_median_ratio(x, x + 1.0, resamples=20, seed=0)
    assert large == (0.9857135506186085, 1.0192094259342244)


# bootstrap_median_ratio


def test_bootstrap_default_seed_is_zero() -> None:
    num, den = [10.0, 11.0, 13.0, 9.0], [7.0, 8.0, 12.0]
    assert bootstrap_median_ratio(num, den, resamples=30) == bootstrap_median_ratio(num, den, resamples=30, seed=0)
    assert bootstrap_median_ratio(num, den, resamples=30) != bootstrap_median_ratio(num, den, resamples=30, seed=1)


def test_bootstrap_of_large_integers_does_not_wrap_around() -> None:
    # integers are taken as floats: adding two int64 near 2**62 would wrap to a negative number
    big = [2**62, 2**62 + 2**11, 2**62 + 2**12]
    assert bootstrap_median_ratio(big, [1, 1, 1]) == (2.0**62, 2.0**62 + 2**12)
    assert bootstrap_median_ratio([1, 1, 1], big) == (1 / (2.0**62 + 2**12), 1 / 2.0**62)


def test_bootstrap_of_integers_equals_that_of_floats() -> None:
    assert bootstrap_median_ratio([3, 4, 6], [2, 3]) == bootstrap_median_ratio([3.0, 4.0, 6.0], [2.0, 3.0])


def test_bootstrap_with_negative_denominators_has_no_interval() -> None:
    assert _nan_pair(bootstrap_median_ratio([1.0, 2.0], [-1.0, -2.0]))


def test_bootstrap_with_a_zero_among_denominators_has_no_interval() -> None:
    # some resamples have the median 0 (both draws the zero): no interval, rather than a half-infinite one
    assert _nan_pair(bootstrap_median_ratio([1.0, 2.0], [0.0, 1.0]))


def test_bootstrap_with_denominators_below_one_has_an_interval() -> None:
    low, high = bootstrap_median_ratio([1.0, 1.0], [0.5, 0.5])
    assert (low, high) == (2.0, 2.0)


def test_bootstrap_ratio_overflow_is_quiet() -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "overflow")  # a ratio above the largest float is inf, no RuntimeWarning
        low, high = bootstrap_median_ratio([1e308, 1e308], [1e-10, 1e-10], resamples=50)
    assert not (math.isfinite(low) or math.isfinite(high))


# _quantiles of infinite values (a fix: they were nan, from inf - inf or 0 * inf)


def test_quantiles_of_infinite_values_are_infinite_not_nan() -> None:
    inf = math.inf
    assert _quantiles(np.array([inf, inf, inf]), 0.025, 0.975) == (inf, inf)
    assert _quantiles(np.array([-inf, -inf]), 0.025, 0.975) == (-inf, -inf)
    assert _quantiles(np.array([1.0, 2.0, inf]), 0.5, 0.975) == (2.0, inf)  # 0.5: exactly the middle value
    assert _quantiles(np.array([-inf, 1.0, 2.0]), 0.25, 0.5) == (-inf, 1.0)
    assert _quantiles(np.array([3.0, inf]), 0.0, 1.0) == (3.0, inf)
    assert _quantiles(np.array([-inf, 1.0]), 0.0, 1.0) == (-inf, 1.0)


def test_quantiles_between_finite_values_farther_apart_than_the_largest_float() -> None:
    assert _quantiles(np.array([-1e308, 1e308]), 0.5, 0.75) == (0.0, 5e307)


def test_quantiles_of_finite_values_at_one_are_the_maximum_exactly() -> None:
    a, b = -48.98619485211566, -7.312715117751976e-05  # a + (b - a) rounds to another float than b
    assert _quantiles(np.array([b, a]), 0.0, 1.0) == (a, b) == tuple(np.quantile([a, b], [0.0, 1.0]))


def test_a_bootstrap_whose_ratios_all_overflow_has_an_infinite_interval() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either (inf - inf was one)
        assert bootstrap_median_ratio([1e308, 1e308], [1e-10, 1e-10], resamples=50) == (math.inf, math.inf)


def test_a_bootstrap_whose_ratios_partly_overflow_has_a_finite_lower_bound() -> None:
    low, high = bootstrap_median_ratio([1e308, 1e308], [1e-10, 1e10], resamples=400)
    assert low == pytest.approx(1e298) and high == math.inf


# t_sf for many degrees of freedom (a fix: lgamma(a + b) - lgamma(a) cancelled, 3e-9 off at ν = 1e6)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [  # log B(a, b) from mpmath at 40 digits
        (0.5, 0.5, 1.1447298858494002),
        (3.0, 0.5, 0.06453852113757118),
        (99.5, 0.5, -1.7264576030376242),
        (100.0, 0.5, -1.7289701552775227),
        (250.0, 2.5, -13.52644949885625),
        (150.0, 150.0, -209.18312635975693),
        (0.5, 1e6, -6.335390211057437),
        (5e11, 0.5, -12.896572024759351),
        (1e15, 0.5, -16.69702325453064),
    ],
)
def test_log_beta_is_accurate_for_small_and_large_arguments(a: float, b: float, expected: float) -> None:
    assert _log_beta(a, b) == pytest.approx(expected, rel=1e-15, abs=1e-13)


def test_the_t_tail_matches_scipy_for_up_to_ten_million_degrees_of_freedom() -> None:
    rng = np.random.default_rng(11)
    cases = [(float(10 ** rng.uniform(3, 7)), float(rng.normal(0, 3))) for _ in range(300)]
    cases += [(df, t) for df in (1e5, 1e6, 1e7) for t in (0.5, 1.5, 2.0, 3.0, 8.0, -2.0)]
    for df, t in cases:
        assert t_sf(t, df) == pytest.approx(float(special.stdtr(df, -t)), rel=1e-9, abs=0), (df, t)


def test_the_t_tail_matches_scipy_to_1e_13_for_up_to_a_thousand_degrees_of_freedom() -> None:
    dfs = (0.5, 1, 3, 10, 19.5, 20, 30, 40, 60, 100, 150, 199, 1e3)
    ts = (0.0, 0.1, 0.5, 1.0, 1.3, 1.7, 2.0, 2.5, 3.0, 5.0, 10.0, 40.0, -0.7, -2.0)
    for df in dfs:
        for t in ts:
            assert t_sf(t, df) == pytest.approx(float(special.stdtr(df, -t)), rel=1e-13, abs=0), (df, t)


@pytest.mark.parametrize("df", [1e3, 1e4])
def test_the_t_tail_is_precise_on_both_sides_of_the_continued_fractions_switch(df: float) -> None:
    # x = ν / (ν + t²) crosses (a + 1) / (a + b + 2) near t = 1.2; taking the fraction in x beyond it
    # (x near 1) loses digits of 1 - x: 1e-13 rather than 1e-15
    for t in (1.0, 1.1, 1.2, 1.25, 1.3, 1.5, 1.6):
        assert t_sf(t, df) == pytest.approx(float(special.stdtr(df, -t)), rel=1e-14, abs=0), t


def test_a_quantile_below_the_median_is_numpy_s_to_the_last_bit() -> None:
    # a + f·(b − a), as np.quantile computes it below the median; (1 − f)·a + f·b differs in the last bit here
    a, b, q = 1.3436424411240122, 8.474337369372327, 0.381887309488307
    low, _ = _quantiles(np.array([b, a]), q, 0.9)
    assert low == float(np.quantile([a, b], q)) == 4.066764342054678


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.5])
def test_a_confidence_outside_the_open_unit_interval_is_refused(confidence: float) -> None:
    with pytest.raises(ValueError, match=f"confidence must be between 0 and 1, got {confidence}"):
        summarize([1.0, 2.0, 3.0], confidence=confidence)


def test_the_stdev_of_values_near_a_large_mean_has_no_cancellation() -> None:
    # Σ(v − m)², not Σv² − n·m² (the same on paper, (v + m)·(v − m) rounds away the spread here)
    values = [1e9 + 0.1, 1e9 + 0.2, 1e9 + 0.4, 1e9 + 0.8]
    assert summarize(values).stdev == pytest.approx(statistics.stdev(values), rel=1e-12, abs=0)


@pytest.mark.parametrize("values, stdev", [
    ([2e300, 4e300, 6e300], 2e300),  # above 2**500 the deviations are taken on scaled values
    ([-1e300, 1e300], math.sqrt(2) * 1e300),
    ([3e307, 9e307, 1.5e308, 6e307], statistics.stdev([3.0, 9.0, 15.0, 6.0]) * 1e307),
])
def test_the_stdev_of_huge_values_is_exact_to_the_last_digits(values: list[float], stdev: float) -> None:
    assert summarize(values).stdev == pytest.approx(stdev, rel=1e-13, abs=0)


def test_the_median_of_two_equal_subnormals_is_that_value() -> None:
    # 0.5·a + 0.5·b would round each half of the smallest subnormal to 0
    assert summarize([5e-324, 5e-324]).median == 5e-324
    assert summarize([1e308, 1.7e308]).median == pytest.approx(1.35e308, rel=1e-15)  # a + b overflows


def test_a_t_interval_below_two_values_is_nan_whatever_the_stdev() -> None:
    assert all(math.isnan(v) for v in t_interval(5.0, 1.0, 1, 0.95))
    assert all(math.isnan(v) for v in t_interval(5.0, math.nan, 3, 0.95))


def test_the_mean_of_equal_values_is_that_value_though_the_division_rounds_above_it() -> None:
    v = 13.167991554874137  # fsum of five of it, divided by 5, rounds to the next double up
    assert summarize([v] * 5).mean == v


def test_the_mean_of_values_whose_sum_overflows_is_scaled_by_the_largest() -> None:
    # the small values at the start must not set the scale: 1.7e308 / 2 three times still overflows
    assert summarize([1.0, 2.0, 1.7e308, 1.7e308, 1.7e308]).mean == pytest.approx(1.7e308 / 5 * 3, rel=1e-15)


def test_values_may_be_a_scalar_or_any_sequence_with_tolist_but_no_ravel() -> None:
    assert (summarize(5.0).n, summarize(5.0).mean) == (1, 5.0)
    assert summarize(array.array("d", [1.0, 2.0, 6.0])).mean == 3.0
