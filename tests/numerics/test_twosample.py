"""The two-sample test behind every verdict (numerics/twosample.py): SciPy's numbers, its degenerate cases,
what it detects, and that it does not depend on the scale of the metric."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special, stats

from kubebench.numerics.twosample import (
    detectable_change,
    repeats_for,
    shift_test,
    t_quantile_real,
    trim_count,
    winsorized_share,
)


@pytest.mark.parametrize("df", [1.0, 1.01, 1.3, 1.99, 2.7, 4.5, 17.2, 1000.5, 1e5 + 0.3])
@pytest.mark.parametrize("p", [0.5001, 0.6, 0.9, 0.95, 0.975, 0.999, 0.99999, 0.1, 0.025])
def test_the_quantile_at_fractional_degrees_of_freedom_is_scipy_s(df: float, p: float) -> None:
    assert t_quantile_real(df, p) == pytest.approx(special.stdtrit(df, p), rel=1e-9)


def test_the_quantile_s_edges() -> None:
    assert t_quantile_real(3.5, 0.5) == 0.0
    assert t_quantile_real(math.inf, 0.975) == pytest.approx(1.959963984540054)
    assert t_quantile_real(4.0, 0.95) == pytest.approx(special.stdtrit(4, 0.95), rel=1e-12)
    for df, p in ((0.5, 0.9), (math.nan, 0.9), (3.0, 0.0), (3.0, 1.0)):
        with pytest.raises(ValueError):
            t_quantile_real(df, p)


@pytest.mark.parametrize("n_c, n_b, seed", [(2, 2, 0), (3, 5, 1), (10, 10, 2), (12, 30, 3), (25, 7, 4)])
def test_the_welch_branch_is_scipy_s_trimmed_t_test_on_logs(n_c: int, n_b: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # the side of fewer runs the noisier (else the pooled standard error, larger, is taken: the next test)
    noise_c, noise_b = (0.05, 0.01) if n_c <= n_b else (0.01, 0.05)
    c, b = 100 * np.exp(noise_c * rng.standard_normal(n_c)), 97 * np.exp(noise_b * rng.standard_normal(n_b))
    test = shift_test(c, b)
    assert test is not None and test.log
    expected = stats.ttest_ind(np.log(c), np.log(b), equal_var=False, trim=0.1)
    assert test.estimate / test.se == pytest.approx(expected.statistic, rel=1e-9)
    assert test.df == pytest.approx(expected.df, rel=1e-9)
    assert 2 * test.p_one_sided() == pytest.approx(expected.pvalue, rel=1e-9)
    assert test.trimmed == (n_c // 10, n_b // 10)


def test_a_side_tighter_than_the_other_takes_the_pooled_standard_error() -> None:
    # 5 tight candidate runs against 50 base runs: Welch's standard error would trust the candidate's lucky
    # spread (its tails are several times too light there); the pooled one is Student's test when untrimmed
    rng = np.random.default_rng(5)
    c, b = 100 * (1 + 0.001 * rng.standard_normal(5)), 100 * (1 + 0.02 * rng.standard_normal(8))
    test = shift_test(c, b)
    student = stats.ttest_ind(np.log(c), np.log(b), equal_var=True)
    assert test.estimate / test.se == pytest.approx(student.statistic, rel=1e-9) and test.df == 11


def test_the_pooled_share_of_a_trimmed_side_is_the_normal_s_winsorized_variance() -> None:
    assert winsorized_share(0.0) == 1.0
    assert winsorized_share(0.1) == pytest.approx(stats.mstats.winsorize(
        stats.norm.ppf(np.linspace(0.00005, 0.99995, 10000)), limits=(0.1, 0.1)).var(), rel=1e-3)


def test_trimming_starts_at_ten_runs() -> None:
    assert [trim_count(n) for n in (2, 9, 10, 19, 20, 55)] == [0, 0, 1, 1, 2, 5]


def test_degenerate_samples() -> None:
    assert shift_test([1.0], [1.0, 2.0]) is None and shift_test([1.0, math.nan], [1.0, 2.0]) is None
    same = shift_test([5.0, 5.0], [5.0, 5.0, 5.0])
    assert same.direction == 0 and same.p_one_sided() == 1.0 and same.bounds(0.9) == (0.0, 0.0)
    apart = shift_test([6.0, 6.0], [5.0, 5.0])
    assert apart.direction == 1 and apart.p_one_sided() == 0.0 and apart.se == 0
    mixed = shift_test([-1.0, 1.0, 2.0], [-3.0, -2.0, -1.0])  # not all positive: on the values, scaled exactly
    assert not mixed.log and mixed.scale == 4.0
    assert mixed.estimate * mixed.scale == pytest.approx(np.mean([-1.0, 1.0, 2.0]) + 2.0)


def test_what_n_runs_detect_shrinks_with_more_runs_and_grows_with_noise() -> None:
    three = detectable_change(3, 3, 0.02, 0.05, 0.9)
    assert 0.05 < three < 0.07  # "3 repeats at CV 2% detect changes above 6%" (docs/statistics.md's table)
    assert detectable_change(10, 10, 0.02, 0.05, 0.9) < three < detectable_change(3, 3, 0.04, 0.05, 0.9)
    assert detectable_change(5, 50, 0.02, 0.05, 0.9) < detectable_change(5, 5, 0.02, 0.05, 0.9)
    assert math.isnan(detectable_change(1, 3, 0.02, 0.05, 0.9)) and math.isnan(detectable_change(3, 3, 0.0, 0.05, 0.9))
    n = repeats_for(0.03, 0.02, 0.05, 0.9)
    assert detectable_change(n, n, 0.02, 0.05, 0.9) <= 0.03 < detectable_change(n - 1, n - 1, 0.02, 0.05, 0.9)
    assert repeats_for(0.001, 0.5, 0.05, 0.9, most=50) is None


# Scale-free: Welch's test on raw values gave p = nan near 1e-100 (variances of 1e-200 squared underflow: df = 0/0).

RELATIVE = [1.0, 1.013, 0.994, 1.021, 0.988]
LOWER = [0.95, 0.962, 0.941, 0.957, 0.949]


@settings(max_examples=200, deadline=None)
@given(exponent=st.floats(-300.0, 300.0), sign=st.sampled_from([1.0, -1.0]))
def test_the_test_does_not_depend_on_the_metric_s_scale(exponent: float, sign: float) -> None:
    scale = 10.0**exponent
    for candidate, base in ((LOWER, RELATIVE), (RELATIVE, RELATIVE[::-1]), ([1.0, 1.0], [1.0, 1.0 + 2**-40])):
        at_one = shift_test(candidate, base)
        scaled = shift_test([v * scale for v in candidate], [v * scale for v in base])
        assert scaled.direction == at_one.direction
        assert scaled.estimate == pytest.approx(at_one.estimate, rel=1e-9, abs=1e-12)
        assert scaled.p_one_sided() == pytest.approx(at_one.p_one_sided(), rel=1e-6)
        assert math.isfinite(scaled.df) or scaled.se == 0
        # values not all positive: the same test on the values, scaled by a power of two
        negative = shift_test([sign * v * scale for v in candidate] + [0.0], [sign * v * scale for v in base] + [0.0])
        assert math.isfinite(negative.p_one_sided()) and not negative.log
