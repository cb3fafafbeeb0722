"""Compare a candidate's repeats of one metric with a base's, and decide whether it regressed.

What is reported:

- ``ratio`` = median(candidate) / median(base): what the tables show beside the two medians.
- ``ratio_ci``: the ``1 − 2·alpha`` confidence interval (90% at the default alpha 0.05) of the ratio
  candidate / base, from the test below (of the ratio of trimmed geometric means, which for benchmark
  noise sits within a fraction of the noise of the ratio of medians).
- ``p_value``: the one-sided p-value of the test in the direction the candidate moved; nan when a side
  has fewer than 2 values.
- ``change``: signed relative change in the goal's direction, positive = better
  (``ratio - 1`` when maximizing, ``1 - ratio`` when minimizing).

The verdict is :func:`kubebench.analyse.decision.decide`'s (``alpha`` = 0.05, ``threshold`` = 0.02 by
default, from :mod:`kubebench.rules`): Yuen's trimmed Welch t-test on log values, read off the CI —
``unchanged`` when the whole CI lies within ``1 ± threshold``, ``improved`` / ``regressed`` when it
lies wholly on one side of 1 (one-sided p < alpha: a false ``regressed`` at most alpha of the time on
equal distributions, a false ``improved`` too), else ``inconclusive`` with the reason in words. Why
that test (reachable at 2–5 runs a side, robust to one outlier run in ten, scale-free):
:mod:`kubebench.numerics.twosample`; its error rates and power per number of runs and noise:
``docs/statistics.md`` (``bench/gate_power.py``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kubebench.errors import SpecError
from kubebench.numerics.stats import NAN, Summary, _json_number, summarize
from kubebench.numerics.twosample import shift_test
from kubebench.rules import COMPARE_ALPHA, COMPARE_THRESHOLD, GOALS, Goal, Verdict

from .decision import decide


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

    @property
    def confidence(self) -> float:
        """The level of ``ratio_ci``: ``1 − 2·alpha`` (its ends are the one-sided bounds the verdict reads)."""
        return 1 - 2 * self.alpha

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON; nan becomes ``None``."""
        data: dict[str, Any] = {
            f.name: _json_number(getattr(self, f.name)) for f in dataclasses.fields(self)
        }
        data["base"] = self.base.to_dict()
        data["candidate"] = self.candidate.to_dict()
        data["ratio_ci"] = [_json_number(v) for v in self.ratio_ci]
        data["confidence"] = self.confidence
        return data


def ci_label(alpha: float = COMPARE_ALPHA) -> str:
    """``90% CI``: what the tables call the CI of a comparison made at ``alpha``."""
    level = 1 - 2 * alpha
    return f"{level:.0%} CI" if level * 100 == round(level * 100) else f"{level:.1%} CI"


def compare(
    base: Sequence[float],
    candidate: Sequence[float],
    *,
    goal: Goal,
    threshold: float = COMPARE_THRESHOLD,
    alpha: float = COMPARE_ALPHA,
) -> Comparison:
    """Compare the candidate's values of one metric with the base's (see module docstring)."""
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got {goal!r}")
    b_sum, c_sum = summarize(base), summarize(candidate)
    decision = decide(candidate, base, goal=goal, threshold=threshold, alpha=alpha)
    ratio = c_sum.median / b_sum.median if b_sum.median > 0 else NAN
    change = ratio - 1 if goal == "maximize" else 1 - ratio
    return Comparison(b_sum, c_sum, goal, ratio, decision.ci, change, decision.p, decision.verdict, threshold, alpha,
                      decision.reason)


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


def rule_p(c: Sequence[float], b: Sequence[float]) -> tuple[float, int]:
    """The one-sided p-value of the decision's test in the observed direction, and that direction
    (-1/0/+1) of the candidate ``c`` against the base ``b``: the candidate moved when it is below
    ``alpha``; (nan, 0) below 2 finite values a side."""
    test = shift_test(c, b)
    return (NAN, 0) if test is None else (test.p_one_sided(), test.direction)
