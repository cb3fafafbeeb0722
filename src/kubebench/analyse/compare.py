"""Compare a candidate's repeats of one metric with a base's, and decide whether it regressed.

What is reported:

- ``ratio`` = median(candidate) / median(base). Medians, because one slow run (a noisy neighbour,
  a cold cache) moves a mean a lot and a median hardly at all.
- ``ratio_ci``: percentile-bootstrap CI of that ratio (2000 resamples, seeded, so the same inputs
  always give the same interval).
- ``p_value``: two-sided Mann–Whitney U test (rank based, no normality assumed); nan when a side
  has fewer than 2 values.
- ``change``: signed relative change in the goal's direction, positive = better
  (``ratio - 1`` when maximizing, ``1 - ratio`` when minimizing).

How the verdict is decided (``alpha`` = 0.05, ``threshold`` = 0.02 by default, from
:mod:`kubebench.rules`):

1. ``inconclusive`` when a side has fewer than 2 values (a trial missing from one experiment, or
   whose runs all failed, has none).
2. ``unchanged`` when the whole ``ratio_ci`` lies within ``1 ± threshold``: the change is then
   confidently smaller than ``threshold``. This is an equivalence statement, and the only way to
   get ``unchanged``: a difference that is merely not significant is not evidence of no change.
3. The candidate moved in one direction when **both** a one-sided Welch t-test and a one-sided
   Mann–Whitney U test in that direction give p < ``alpha``. Each is a directional test at level
   ``alpha``, so on equal distributions a false "regressed" happens at most ``alpha`` of the time
   (and a false "improved" as well). Requiring both keeps the power of the t-test (the most
   powerful test for normal noise) while one outlier run, which can swing a t-test, cannot
   alone produce a verdict. ``improved`` or ``regressed`` according to ``goal``.
4. Otherwise ``inconclusive``: no significant change, but the CI reaches beyond ``± threshold``,
   so a change that matters is not ruled out either (say a 28% drop with CI 0.34 … 1.07). More
   repeats narrow the CI. ``reason`` says which case applied, in words.

Why not "two-sided Mann–Whitney p < alpha and |ratio - 1| > threshold": with 10 repeats per side
and 2% run-to-run noise (CV), that rule catches a true 3% regression only ~79% of the time, because
the point ratio of two 10-value medians scatters by ~1.1% and half the time lands inside ±2%, and
a two-sided test at 0.05 alone tops out near 87–89%. The rule above was chosen by simulation with
that noise (``tests/analyse/test_compare.py`` checks its rates on 400 seeded pairs; the README's
Statistics section gives them on 20 000): few false regressions on equal distributions, most
true 3% regressions detected. Comparing the threshold with the CI instead of the point ratio
keeps its purpose (large samples do not flag tiny changes) without costing power at small n. The
price of honesty is that with 10 repeats at 2% noise, equal distributions are rarely *shown* to be
equal within ±2% (the CI of a ratio of medians is about ±2% wide): they read ``inconclusive``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from kubebench.errors import SpecError
from kubebench.numerics.stats import (
    NAN,
    Summary,
    _json_number,
    bootstrap_median_ratio,
    scaled_together,
    summarize,
    t_sf,
)
from kubebench.rules import COMPARE_ALPHA, COMPARE_THRESHOLD, GOALS, Goal

Verdict = Literal["improved", "regressed", "unchanged", "inconclusive"]


@dataclass(frozen=True)
class Comparison:
    """The comparison of one metric between a base and a candidate (see module docstring)."""

    base: Summary
    candidate: Summary
    goal: Goal
    ratio: float
    ratio_ci: tuple[float, float]
    change: float
    p_value: float
    verdict: Verdict
    threshold: float
    alpha: float
    #: Why this verdict, in words (e.g. "no significant change; the CI -66% … +7% reaches beyond ±2%").
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; nan becomes ``None``."""
        data: dict[str, Any] = {
            f.name: _json_number(getattr(self, f.name)) for f in dataclasses.fields(self)
        }
        data["base"] = self.base.to_dict()
        data["candidate"] = self.candidate.to_dict()
        data["ratio_ci"] = [_json_number(v) for v in self.ratio_ci]
        return data


def compare(
    base: Sequence[float],
    candidate: Sequence[float],
    *,
    goal: Goal,
    threshold: float = COMPARE_THRESHOLD,
    alpha: float = COMPARE_ALPHA,
    seed: int | np.random.Generator = 0,
) -> Comparison:
    """Compare the candidate's values of one metric with the base's (see module docstring)."""
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got {goal!r}")
    b_sum, c_sum = summarize(base), summarize(candidate)
    b = np.asarray(base, dtype=float)
    c = np.asarray(candidate, dtype=float)
    b, c = b[np.isfinite(b)], c[np.isfinite(c)]
    ratio = c_sum.median / b_sum.median if b_sum.median > 0 else NAN
    ratio_ci = bootstrap_median_ratio(c, b, seed=seed)
    p_two, mw_direction = _mann_whitney(c, b)
    verdict, reason = _verdict(c, b, goal, mw_direction, p_two, ratio_ci, threshold, alpha)
    change = ratio - 1 if goal == "maximize" else 1 - ratio
    return Comparison(b_sum, c_sum, goal, ratio, ratio_ci, change, p_two, verdict, threshold, alpha, reason)


def fail_on(comparison: Comparison, max_regression: float) -> bool:
    """True when the candidate regressed and lost more than ``max_regression`` (0.03 = 3%)."""
    return comparison.verdict == "regressed" and -comparison.change > max_regression


_FAIL_ON = re.compile(r"^(?P<name>.+):\s*(?P<sign>[-+]?)\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*%$")


def parse_fail_on(text: str) -> tuple[str, float]:
    """Parse ``"images_per_sec:-3%"`` into ``("images_per_sec", 0.03)``.

    The number is the largest tolerated loss. Its direction comes from the metric's goal, so a
    sign is optional: ``latency_ms:+5%`` and ``latency_ms:5%`` both allow a 5% slowdown.
    The name may itself contain ``:``; the last one separates the limit.
    """
    match = _FAIL_ON.match(text.strip())
    if match is None or not match["name"].strip():
        raise SpecError(
            f"invalid --fail-on rule {text!r}: expected METRIC:-N% "
            "(for example images_per_sec:-3%, the largest tolerated loss in percent)"
        )
    return match["name"].strip(), float(match["number"]) / 100


def _verdict(
    c: np.ndarray,
    b: np.ndarray,
    goal: Goal,
    mw_direction: int,
    mw_p_two: float,
    ratio_ci: tuple[float, float],
    threshold: float,
    alpha: float,
) -> tuple[Verdict, str]:
    """Apply the decision rule of the module docstring: the verdict and its reason."""
    if c.size < 2 or b.size < 2:
        side, n = ("candidate", c.size) if c.size < 2 else ("base", b.size)
        return "inconclusive", f"too few values: the {side} has {n} (a verdict needs 2 per side)"
    low, high = ratio_ci
    band = f"±{threshold:.0%}" if threshold * 100 == round(threshold * 100) else f"±{threshold:.1%}"
    ci = f"{low - 1:+.1%} … {high - 1:+.1%}"
    if 1 - threshold <= low and high <= 1 + threshold:
        return "unchanged", f"the change's 95% CI ({ci}) lies within {band}"
    t_p_one, t_direction = _welch_one_sided(c, b)
    # Mann–Whitney's two-sided p is twice the one-sided p in the observed direction.
    significant = t_p_one < alpha and mw_p_two / 2 < alpha
    if significant and t_direction == mw_direction and t_direction != 0:
        higher_is_better = goal == "maximize"
        verdict: Verdict = "improved" if (t_direction > 0) == higher_is_better else "regressed"
        return verdict, f"significant (Welch p={t_p_one:.2g}, Mann–Whitney p={mw_p_two / 2:.2g}, one-sided)"
    if 1 / math.comb(c.size + b.size, c.size) >= alpha:
        why = f"too few runs to tell ({c.size} and {b.size}: no rank test reaches p < {alpha:g}; add repeats)"
    else:
        why = "no significant change"
    if math.isnan(low) or math.isnan(high):
        return "inconclusive", f"{why}, and no CI of the ratio (a median is not positive)"
    return "inconclusive", f"{why}; the change's 95% CI ({ci}) reaches beyond {band}"


def rule_p(c: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """The p-value of the decision rule in the observed direction, and that direction (-1/0/+1):
    ``max`` of the one-sided Welch and Mann–Whitney p (both must agree); (1, 0) when they point
    opposite ways. The candidate moved when it is below ``alpha`` (finite values, 2+ per side)."""
    t_p, t_direction = _welch_one_sided(c, b)
    u_p_two, u_direction = _mann_whitney(c, b)
    if t_direction == 0 or t_direction != u_direction:
        return 1.0, 0
    return max(t_p, u_p_two / 2), t_direction


def _welch_one_sided(c: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Welch's t-test: (one-sided p in the observed direction, direction of c vs b: -1/0/+1).

    Computed with numpy rather than scipy.stats.ttest_ind, which costs ~1 ms per call in
    argument handling; the results are equal (checked in the tests).
    """
    c, b = scaled_together(c, b)  # t and df do not depend on scale; huge values would overflow
    diff = float(np.mean(c) - np.mean(b))
    vc, vb = np.var(c, ddof=1) / c.size, np.var(b, ddof=1) / b.size
    se = math.sqrt(vc + vb)
    direction = int(np.sign(diff))
    if se == 0:
        # Both sides constant: any difference is certain, no difference is no evidence.
        return (0.0 if direction else 1.0), direction
    df = (vc + vb) ** 2 / (vc**2 / (c.size - 1) + vb**2 / (b.size - 1))
    return t_sf(abs(diff) / se, df), direction


def _mann_whitney(c: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    """Two-sided Mann–Whitney U test of c vs b: (p, direction of c vs b: -1/0/+1).

    Same p as scipy.stats.mannwhitneyu (method "auto", with continuity correction). When
    scipy would use its normal approximation (both sides > 8 values, or ties), it is computed
    here with numpy, several times faster; small samples without ties go to scipy's exact test.
    """
    if c.size < 2 or b.size < 2:
        return NAN, 0
    ranks, tie_counts = _average_ranks(np.concatenate([c, b]))
    u_c = float(np.sum(ranks[: c.size])) - c.size * (c.size + 1) / 2
    mu = c.size * b.size / 2
    direction = int(np.sign(u_c - mu))
    has_ties = bool(np.any(tie_counts > 1))
    if min(c.size, b.size) <= 8 and not has_ties:
        from scipy import stats  # here only: importing scipy.stats costs ~1 s (kubebench history imports compare)

        return float(stats.mannwhitneyu(c, b, method="exact").pvalue), direction
    n = c.size + b.size
    tie_term = float(np.sum(tie_counts**3 - tie_counts))
    sigma = math.sqrt(c.size * b.size / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    if sigma == 0:
        return 1.0, 0
    z = (max(u_c, c.size * b.size - u_c) - mu - 0.5) / sigma
    return min(1.0, math.erfc(z / math.sqrt(2))), direction  # 2 × Φ(−z)


def _average_ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks (1-based, ties get their average rank) and the size of each group of ties."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    average = ends - (counts - 1) / 2
    return average[inverse], counts
