"""One decision about one pair: did the candidate's level move against the base's, and which way?

:func:`decide` is the rule every verdict of kubebench comes from (``compare``, ``check``, change-point
confirmation, sequential decisions build on it). Pure: values in, a frozen :class:`Decision` out.

The test is Yuen's trimmed Welch t-test on log values (:mod:`kubebench.numerics.twosample`: why that
test); ``alpha`` is the error rate of each direction:

- ``ci``: the ``1 − 2·alpha`` confidence interval (90% at alpha 0.05) of the ratio candidate / base
  (of their trimmed geometric means); each of its ends is a one-sided bound at ``1 − alpha``;
- ``p``: the one-sided p-value in the direction the candidate moved;
- ``verdict``, read off the interval:

  1. ``inconclusive`` below 2 values a side: no variance, no test;
  2. ``unchanged`` when the whole CI lies within ``1 ± threshold``: the change is confidently smaller
     than ``threshold`` (two one-sided tests at ``alpha``, an equivalence test);
  3. ``improved`` / ``regressed`` (by ``goal``) when ``p < alpha``, i.e. the CI lies wholly on one side
     of 1: on equal distributions a false ``regressed`` comes at most ``alpha`` of the time, a false
     ``improved`` too;
  4. otherwise ``inconclusive``: no significant change, and the CI reaches beyond ``± threshold``;
     ``reason`` says so, with the smallest change these runs could have shown at this noise.

Values that are not all positive have no ratio: ``ratio`` and ``ci`` are nan, the test runs on the values
themselves (scale-free), and the verdict is ``improved``, ``regressed`` or ``inconclusive``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ..numerics.twosample import ShiftTest, detectable_change, shift_test
from ..rules import COMPARE_ALPHA, COMPARE_THRESHOLD, GATE_POWER, GOALS, Goal, Verdict

NAN = math.nan


@dataclass(frozen=True)
class Decision:
    """What :func:`decide` found (see the module docstring)."""

    verdict: Verdict
    #: candidate / base: the ratio of their trimmed geometric means (nan: values not all positive, or too few)
    ratio: float
    #: the ``confidence`` interval of ``ratio``
    ci: tuple[float, float]
    #: one-sided p-value in the direction of ``direction`` (nan: too few values)
    p: float
    #: -1 the candidate is lower, +1 higher, 0 neither
    direction: int
    #: ``1 − 2·alpha``: the level of ``ci``
    confidence: float
    #: values (candidate, base) tested, and how many runs of each were trimmed at each end
    n: tuple[int, int]
    trimmed: tuple[int, int]
    #: why this verdict, in words
    reason: str
    #: of an inconclusive verdict: the smallest relative loss these runs detect at their own noise (power
    #: :data:`~kubebench.rules.GATE_POWER`); nan otherwise
    detectable: float = NAN


def decide(candidate: Iterable[float], base: Iterable[float], *, goal: Goal = "maximize",
           threshold: float = COMPARE_THRESHOLD, alpha: float = COMPARE_ALPHA) -> Decision:
    """The verdict on ``candidate`` against ``base`` (values of one metric; non-finite ones are dropped)."""
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got {goal!r}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be between 0 and 0.5, got {alpha!r}")
    c = [v for v in map(float, candidate) if math.isfinite(v)]
    b = [v for v in map(float, base) if math.isfinite(v)]
    confidence = 1 - 2 * alpha
    test = shift_test(c, b)
    if test is None:
        side, n = ("candidate", len(c)) if len(c) < 2 else ("base", len(b))
        return Decision("inconclusive", NAN, (NAN, NAN), NAN, 0, confidence, (len(c), len(b)), (0, 0),
                        f"too few values: the {side} has {n} (a verdict needs 2 per side)")
    ratio, ci = _ratio(test, c, b, confidence)
    p = test.p_one_sided()
    verdict, reason = _verdict(test, p, ci, goal, threshold, alpha, confidence)
    detectable = _detectable(test, alpha) if verdict == "inconclusive" else NAN
    if detectable > threshold:
        reason += (f"; {test.n[1]} base and {test.n[0]} candidate runs at this noise detect changes above "
                   f"{detectable:.1%} (power {GATE_POWER:.0%}): add repeats")
    return Decision(verdict, ratio, ci, p, test.direction, confidence, test.n, test.trimmed, reason, detectable)


def _ratio(test: ShiftTest, c: list[float], b: list[float], confidence: float) -> tuple[float, tuple[float, float]]:
    if not test.log:
        return NAN, (NAN, NAN)
    if test.se == 0:  # both sides constant: the ratio itself, exactly (0.75 is 0.75, not exp(log 0.75))
        exact = c[0] / b[0]
        return exact, (exact, exact)
    low, high = test.bounds(confidence)
    return math.exp(test.estimate), (math.exp(low), math.exp(high))


def _detectable(test: ShiftTest, alpha: float) -> float:
    """What these runs detect at the noise they show: the CV implied by the test's standard error."""
    if not test.log or test.se == 0:
        return NAN
    h_c, h_b = (n - 2 * g for n, g in zip(test.n, test.trimmed))
    sigma = test.se / math.sqrt(1 / h_c + 1 / h_b)
    return detectable_change(test.n[0], test.n[1], math.sqrt(math.expm1(sigma * sigma)), alpha, GATE_POWER)


def _verdict(test: ShiftTest, p: float, ci: tuple[float, float], goal: Goal, threshold: float, alpha: float,
             confidence: float) -> tuple[Verdict, str]:
    low, high = ci
    band = f"±{threshold:.0%}" if threshold * 100 == round(threshold * 100) else f"±{threshold:.1%}"
    shown = f"{low - 1:+.1%} … {high - 1:+.1%}"
    level = f"{confidence:.0%}" if confidence * 100 == round(confidence * 100) else f"{confidence:.1%}"
    if 1 - threshold <= low and high <= 1 + threshold:
        return "unchanged", f"the change's {level} CI ({shown}) lies within {band}"
    if p < alpha and test.direction:
        verdict: Verdict = "improved" if (test.direction > 0) == (goal == "maximize") else "regressed"
        where = f"the change's {level} CI ({shown}) excludes 0" if test.log else "no ratio: a value is not positive"
        return verdict, f"significant (one-sided p={p:.2g}; {where})"
    if not test.log:
        return "inconclusive", f"no significant change (one-sided p={p:.2g}), and no CI of the ratio (a value is not positive)"
    return "inconclusive", f"no significant change; the change's {level} CI ({shown}) reaches beyond {band}"
