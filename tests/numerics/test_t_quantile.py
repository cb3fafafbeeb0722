"""kubebench.numerics.stats.t_quantile, the pure-Python Student-t quantile, against SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from kubebench.numerics.stats import t_quantile, t_sf

DFS = [*range(1, 301), 500, 1000, 5000, 20000]
PS = [1e-6, 0.005, 0.025, 0.1, 0.4, 0.6, 0.75, 0.9, 0.95, 0.975, 0.995, 0.9995, 1 - 1e-6]


@pytest.mark.parametrize("p", PS)
def test_matches_scipy_stdtrit(p: float) -> None:
    worst = max((abs(t_quantile(df, p) / float(special.stdtrit(df, p)) - 1), df) for df in DFS)
    assert worst[0] <= 1e-10, worst


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 60, 20000])
def test_median_is_exactly_zero(df: int) -> None:
    assert t_quantile(df, 0.5) == 0.0


@pytest.mark.parametrize("df", [1, 2, 3, 6, 11, 1000])
def test_is_symmetric(df: int) -> None:
    for p in (0.25, 0.125, 0.375, 0.0078125):  # 1 - p is exact: exactly symmetric
        assert t_quantile(df, p) == -t_quantile(df, 1 - p)


def test_is_increasing_in_p() -> None:
    for df in (1, 2, 5, 40):
        values = [t_quantile(df, p) for p in np.linspace(0.001, 0.999, 201)]
        assert all(a < b for a, b in zip(values, values[1:]))


def test_closed_forms_of_one_and_two_degrees_of_freedom() -> None:
    for p in (1e-6, 0.01, 0.3, 0.7, 0.99):
        assert t_quantile(1, p) == pytest.approx(-1 / math.tan(math.pi * p), rel=1e-10, abs=0)  # Cauchy
        assert t_quantile(2, p) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-10, abs=0)


def test_large_df_approaches_the_normal_quantile() -> None:
    assert t_quantile(10**6, 0.975) == pytest.approx(1.959963984540054, rel=1e-5, abs=0)


def test_accepts_integral_df_of_other_types() -> None:
    assert t_quantile(np.int64(7), 0.9) == t_quantile(7, 0.9) == t_quantile(7.0, 0.9)
    assert t_quantile(7, np.float64(0.9)) == t_quantile(7, 0.9)


@pytest.mark.parametrize("df", [0, -3, 2.5, math.nan, math.inf, "3", None, True])
def test_rejects_bad_degrees_of_freedom(df: object) -> None:
    with pytest.raises(ValueError, match="degrees of freedom must be an integer >= 1"):
        t_quantile(df, 0.975)  # type: ignore[arg-type]


@pytest.mark.parametrize("p", [0.0, 1.0, -0.5, 1.5, math.nan, math.inf])
def test_rejects_p_outside_the_open_unit_interval(p: float) -> None:
    with pytest.raises(ValueError, match=r"p must be a probability strictly between 0 and 1"):
        t_quantile(5, p)


def test_the_t_tail_matches_scipy_for_fractional_degrees_of_freedom() -> None:
    # Welch's test has fractional ν: kubebench's own P(T > t) (no scipy.special import) against SciPy's
    rng = np.random.default_rng(7)
    cases = [(df, t) for df in (0.7, 1, 1.3, 2.5, 9.2, 58.3, 1000, 1e5) for t in (0, 1e-6, 0.3, 2, 8, 40, 1e4, -3)]
    cases += [(float(rng.uniform(1, 60)), float(rng.normal(0, 6))) for _ in range(500)]
    for df, t in cases:
        expected = float(special.stdtr(df, -t))
        if expected > 1e-300:
            assert t_sf(t, df) == pytest.approx(expected, rel=1e-9, abs=0), (df, t)
    assert t_sf(float("inf"), 3) == 0.0 and t_sf(float("-inf"), 3) == 1.0 and math.isnan(t_sf(1.0, 0))
