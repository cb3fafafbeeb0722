"""The two-sample test behind every verdict: did the candidate's level move against the base's?

**Yuen's trimmed Welch t-test on log values.** Each side is sorted, ``g = n // 10`` runs are dropped
from each end (none below 10 runs, one from each end at 10–19, …: :func:`trim_count`), the trimmed
means are compared, and the standard error comes from the winsorized variances (the dropped runs
replaced by the nearest kept one), with Welch–Satterthwaite degrees of freedom. Without trimming
(fewer than 10 runs a side) it is Welch's t-test.

Why this test:

- **Reachable at 2–5 runs a side.** A rank test (Mann–Whitney, a permutation test) on 3 runs a side
  has 20 orderings: its smallest one-sided p is 1/20 = 0.05, never below 0.05 whatever the change.
  A t-test has no such floor: with 2 runs a side and 1 degree of freedom it can still say a 10%
  change with 0.3% noise is real. Percentile-bootstrap intervals of 3 values are too narrow (they
  cannot reach beyond the sample's range) and their false alarms exceed alpha.
- **One outlier in ten does not decide.** One run at half speed among ten drags a mean and swells
  a variance; trimmed from 10 runs up, it is dropped (and the winsorized variance sees it at the
  value of its neighbour). Below 10 runs nothing is trimmed: one run in three or five is not an
  outlier that a test can tell from the noise.
- **Scale-free.** On log values a change is relative (3% is 3% in images/s or in seconds), and the
  statistic never squares the metric's own magnitude: Welch's test on raw values near 1e-100
  squared variances of 1e-400, which underflow to 0/0 = nan degrees of freedom. Values that are not
  all positive (a ratio means nothing there) are tested as they are, divided first by one power of
  two near their largest magnitude (exact, so the test is the same as on the raw values).

Pure Python (:mod:`math` only): a comparison costs tens of microseconds and imports nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

from .stats import t_quantile, t_sf

#: A tenth of the runs of each side, at each end, is trimmed (rounded down): see :func:`trim_count`.
TRIM_PER_END = 10
#: Degrees of freedom :func:`detectable_change` takes off Welch's (see there).
DF_LOSS = 0.8


def trim_count(n: int) -> int:
    """Runs dropped from each end of a side of ``n`` runs: one per full ten (0 below 10)."""
    return n // TRIM_PER_END


@dataclass(frozen=True)
class ShiftTest:
    """Yuen's test of a candidate against a base (see the module docstring).

    ``estimate``: trimmed mean of the candidate minus the base's, on log values when ``log`` (then
    ``exp(estimate)`` is the ratio of the trimmed geometric means), else on the values divided by
    ``scale``; ``se`` its standard error, ``df`` its degrees of freedom (inf when ``se`` is 0).
    """

    estimate: float
    se: float
    df: float
    log: bool
    n: tuple[int, int]
    trimmed: tuple[int, int]
    scale: float = 1.0

    @property
    def direction(self) -> int:
        """-1, 0 or +1: the sign of the candidate's move against the base."""
        return (self.estimate > 0) - (self.estimate < 0)

    def p_one_sided(self) -> float:
        """p of the one-sided test in the observed direction (1 when there is no difference at all)."""
        if self.direction == 0:
            return 1.0
        if self.se == 0:
            return 0.0  # both sides constant and different: certain
        return t_sf(abs(self.estimate) / self.se, self.df)

    def bounds(self, confidence: float) -> tuple[float, float]:
        """Two-sided ``confidence`` interval of ``estimate`` (its ends are one-sided bounds at (1 + c) / 2)."""
        if self.se == 0:
            return self.estimate, self.estimate
        half = t_quantile_real(self.df, (1 + confidence) / 2) * self.se
        return self.estimate - half, self.estimate + half


def shift_test(candidate: Iterable[float], base: Iterable[float]) -> ShiftTest | None:
    """Yuen's test of the finite values of ``candidate`` against ``base``; None below 2 values a side."""
    c = sorted(v for v in map(float, candidate) if math.isfinite(v))
    b = sorted(v for v in map(float, base) if math.isfinite(v))
    if len(c) < 2 or len(b) < 2:
        return None
    log = c[0] > 0 and b[0] > 0
    scale = 1.0
    if log:
        c, b = [math.log(v) for v in c], [math.log(v) for v in b]
        # centred on the base's median: the differences between runs keep every digit (log 1e300 is 690)
        center = b[len(b) // 2]
        c, b = [v - center for v in c], [v - center for v in b]
    else:
        scale = _power_of_two_at_least(max(abs(c[0]), abs(c[-1]), abs(b[0]), abs(b[-1])))
        c, b = [v / scale for v in c], [v / scale for v in b]
    (mean_c, w_c, h_c), (mean_b, w_b, h_b) = _trimmed(c), _trimmed(b)
    n_c, n_b = len(c), len(b)
    # Yuen's squared standard errors of each trimmed mean, Welch's way (each side's own winsorized variance)
    # and pooled: one variance of the runs that both sides estimate, each side's winsorized variance over its
    # expected share of the whole (which differs when one side is trimmed and the other is not)
    k_c, k_b = (n_c - 1) / (h_c * (h_c - 1)), (n_b - 1) / (h_b * (h_b - 1))
    d_c, d_b = k_c * w_c, k_b * w_b
    share_c, share_b = winsorized_share(trim_count(n_c) / n_c), winsorized_share(trim_count(n_b) / n_b)
    pooled = ((h_c - 1) * w_c / share_c + (h_b - 1) * w_b / share_b) / (h_c + h_b - 2)
    p_c, p_b = k_c * share_c * pooled, k_b * share_b * pooled
    estimate = mean_c - mean_b
    if d_c + d_b >= (p_c + p_b) * (1 - 1e-12):  # Welch's standard error, with its degrees of freedom
        variance = d_c + d_b
        df = variance * variance / (d_c * d_c / (h_c - 1) + d_b * d_b / (h_b - 1)) if variance > 0 else math.inf
    else:  # the pooled one is larger: the smaller side's runs happen to be tighter than the other's
        variance, df = p_c + p_b, float(h_c + h_b - 2)
    return ShiftTest(estimate, math.sqrt(variance), df, log, (n_c, n_b), (trim_count(n_c), trim_count(n_b)), scale)


def _trimmed(x: list[float]) -> tuple[float, float, int]:
    """(trimmed mean, winsorized variance, values kept) of sorted x."""
    n = len(x)
    g = trim_count(n)
    kept = x[g:n - g]
    h = len(kept)
    mean = math.fsum(kept) / h
    winsorized = [kept[0]] * g + kept + [kept[-1]] * g
    w_mean = math.fsum(winsorized) / n
    w_var = math.fsum((v - w_mean) ** 2 for v in winsorized) / (n - 1)
    return mean, w_var, h


@functools.lru_cache(maxsize=64)
def winsorized_share(share: float) -> float:
    """The variance of a normal distribution winsorized by ``share`` at each end, over its variance
    (1 at 0, 0.679 at 0.1): what a winsorized sample variance estimates, as a part of the whole."""
    if share <= 0:
        return 1.0
    normal = NormalDist()
    z = normal.inv_cdf(1 - share)
    return (1 - 2 * share) - 2 * z * normal.pdf(z) + 2 * share * z * z


def _power_of_two_at_least(value: float) -> float:
    """A power of two p ≥ value (1 for 0): dividing by it is exact and brings every value into [-1, 1]."""
    return math.ldexp(1.0, math.frexp(value)[1]) if value > 0 else 1.0


def t_quantile_real(df: float, p: float) -> float:
    """The p-quantile of Student's t with ``df`` ≥ 1 degrees of freedom, any real (Welch's are fractional).

    It lies between the quantiles at the whole degrees of freedom either side (the quantile falls as
    ν grows); Newton's steps on :func:`~kubebench.numerics.stats.t_sf` from there, kept inside that
    bracket, converge in a few steps. Within 1e-9 of SciPy's ``stdtrit`` (tested).
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be a probability strictly between 0 and 1, got {p!r}")
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    if not df >= 1:
        raise ValueError(f"degrees of freedom must be at least 1, got {df!r}")
    if p < 0.5:
        return -t_quantile_real(df, 1 - p)
    if p == 0.5:
        return 0.0
    low_df, high_df = math.floor(df), math.ceil(df)
    if low_df == high_df:
        return t_quantile(int(df), p)
    high, low = t_quantile(low_df, p), t_quantile(high_df, p)  # fewer degrees: a larger quantile
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    # the quantile is smooth in 1/ν: interpolated so, it starts a few digits from the root
    t = low + (high - low) * (1 / df - 1 / high_df) / (1 / low_df - 1 / high_df)
    for _ in range(50):
        excess = (1 - p) - t_sf(t, df)  # increasing in t
        if excess == 0:
            break
        if excess > 0:
            high = t
        else:
            low = t
        density = math.exp(log_c - (df + 1) / 2 * math.log1p(t * t / df))
        following = t - excess / density
        if not low < following < high:
            following = (low + high) / 2
        # Newton's steps converge quadratically: once a step is this small, the one taken is exact
        done = abs(following - t) <= 1e-6 * abs(t)
        t = following
        if done:
            break
    return t


def detectable_change(n_candidate: int, n_base: int, cv: float, alpha: float, power: float) -> float:
    """The smallest relative loss (0.05 = 5%) that :func:`shift_test` finds one-sided at level ``alpha``
    with probability ``power``, ``n_candidate`` and ``n_base`` runs a side at run-to-run noise ``cv``.

    The usual approximation (t quantiles at Welch's degrees of freedom, the noise on the log scale, the
    trimmed runs counted out), checked against a seeded simulation by ``bench/gate_power.py``; for very
    unequal sides (3 runs against 30) it overstates the change a little (the power there is 96%, not 90%).
    nan below 2 runs a side or without a noise.
    """
    if n_candidate < 2 or n_base < 2 or not cv > 0 or not math.isfinite(cv):
        return math.nan
    sigma = math.sqrt(math.log1p(cv * cv))  # the standard deviation of log values of that CV
    h_c, h_b = n_candidate - 2 * trim_count(n_candidate), n_base - 2 * trim_count(n_base)
    d_c, d_b = 1 / h_c, 1 / h_b
    # Welch's degrees of freedom at equal variances, less what their spread from pair to pair costs at few
    # runs (0.8, fitted by bench/gate_power.py: within a few points of the simulated power from 2 runs on)
    df = max(1.0, (d_c + d_b) ** 2 / (d_c * d_c / (h_c - 1) + d_b * d_b / (h_b - 1)) - DF_LOSS)
    shift = (t_quantile_real(df, 1 - alpha) + t_quantile_real(df, power)) * sigma * math.sqrt(d_c + d_b)
    return -math.expm1(-shift)


def repeats_for(change: float, cv: float, alpha: float, power: float, n_base: int | None = None,
                most: int = 1000) -> int | None:
    """The fewest runs a side (or of the candidate, against ``n_base`` runs) that detect a relative loss
    of ``change`` at ``cv`` (see :func:`detectable_change`); None when even ``most`` do not."""
    def detects(n: int) -> bool:
        return detectable_change(n, n_base or n, cv, alpha, power) <= change

    if not detects(most):
        return None
    low, high = 1, most  # detects(high); not detects(low): a single run detects nothing
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if detects(middle) else (middle, high)
    return high
