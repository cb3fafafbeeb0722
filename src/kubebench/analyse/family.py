"""Many comparisons at once (trials × metrics) with the family's false alarms under control.

Each test is the comparison of ``kubebench compare`` (:mod:`.compare`, :func:`.decision.decide`): Yuen's
trimmed Welch t-test on log values. Its p-value here is the one-sided p in the observed direction,
doubled so that it counts either direction (an "improved" is a claim too). Over the family of tests:

- ``holm`` (default): Holm's step-down adjustment; the chance that *any* verdict of the family is
  false stays ≤ ``alpha`` (family-wise error rate), whatever the dependence between the tests;
- ``bh``: Benjamini–Hochberg; the expected share of false verdicts among the verdicts stays ≤
  ``alpha`` (false discovery rate): more power on big sweeps, more false alarms allowed.

A test then gives improved or regressed when its adjusted p < ``alpha`` and its ratio CI is not wholly
within ``1 ± threshold`` (as :func:`.compare.compare` decides), unchanged when that CI is wholly
within, inconclusive otherwise; it *fails the gate* when it regressed and lost more than its threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..rules import Goal, Verdict
from .compare import Comparison, compare, rule_p

Correction = Literal["holm", "bh"]
CORRECTIONS: dict[str, str] = {"holm": "Holm (family-wise error rate)", "bh": "Benjamini–Hochberg (false discovery rate)"}


@dataclass(frozen=True)
class Check:
    """One member of the family: a trial × metric with its base and candidate values."""

    params: dict[str, object]
    metric: str
    goal: Goal
    base: tuple[float, ...]
    candidate: tuple[float, ...]
    threshold: float


@dataclass(frozen=True)
class Outcome:
    """A test's comparison, its p-value before and after the family's adjustment, and its verdict."""

    test: Check
    comparison: Comparison
    p_value: float
    adjusted_p: float
    verdict: Verdict

    @property
    def fails(self) -> bool:
        """Regressed, and lost more than the test's threshold."""
        return self.verdict == "regressed" and -self.comparison.change > self.test.threshold


def directional_p(base: Sequence[float], candidate: Sequence[float]) -> tuple[float, int]:
    """(two-sided p of compare's decision rule, direction of candidate vs base: -1/0/+1); nan below 2 values."""
    p, direction = rule_p_of(base, candidate)
    return (p if math.isnan(p) else min(1.0, 2 * p)), direction


def rule_p_of(base: Sequence[float], candidate: Sequence[float]) -> tuple[float, int]:
    """(one-sided p of :func:`.compare.compare`'s rule in the observed direction, that direction: -1/0/+1),
    see :func:`.compare.rule_p`; (nan, 0) below 2 finite values a side."""
    return rule_p(candidate, base)


def adjust(p_values: Sequence[float], correction: Correction) -> list[float]:
    """Holm or Benjamini–Hochberg adjusted p-values (nan stays nan and is not counted)."""
    order = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m = len(order)
    adjusted = [math.nan] * len(p_values)
    if correction == "holm":
        running = 0.0
        for rank, (p, i) in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p))
            adjusted[i] = running
    elif correction == "bh":
        running = 1.0
        for rank in range(m - 1, -1, -1):
            p, i = order[rank]
            running = min(running, m * p / (rank + 1))
            adjusted[i] = running
    else:
        raise ValueError(f"correction must be one of {sorted(CORRECTIONS)}, got {correction!r}")
    return adjusted


def run_family(tests: Sequence[Check], correction: Correction = "holm", alpha: float = 0.05) -> list[Outcome]:
    """Every test compared, its p adjusted over the family, and its verdict (see the module docstring)."""
    raw = [directional_p(t.base, t.candidate) for t in tests]
    adjusted = adjust([p for p, _ in raw], correction)
    outcomes = []
    for test, (p, direction), adj in zip(tests, raw, adjusted):
        comparison = compare(test.base, test.candidate, goal=test.goal, threshold=test.threshold, alpha=alpha)
        outcomes.append(Outcome(test, comparison, p, adj, _verdict(comparison, direction, adj, alpha)))
    return outcomes


def gate_fails(tests: Sequence[Check], correction: Correction = "holm", alpha: float = 0.05) -> bool:
    """Whether :func:`run_family` would fail the gate, comparing (bootstrap CI) only the significant tests:
    a test whose adjusted p is not below ``alpha`` cannot fail whatever its CI (what simulations use)."""
    raw = [directional_p(t.base, t.candidate) for t in tests]
    adjusted = adjust([p for p, _ in raw], correction)
    for test, (p, direction), adj in zip(tests, raw, adjusted):
        if adj < alpha:
            comparison = compare(test.base, test.candidate, goal=test.goal, threshold=test.threshold, alpha=alpha)
            if Outcome(test, comparison, p, adj, _verdict(comparison, direction, adj, alpha)).fails:
                return True
    return False


def _verdict(c: Comparison, direction: int, adjusted_p: float, alpha: float) -> Verdict:
    """As :func:`.compare.compare` decides, with the family's adjusted p: ``unchanged`` only when the
    ratio's CI lies within ``1 ± threshold``; a change that is not significant is ``inconclusive``."""
    if c.base.n < 2 or c.candidate.n < 2:
        return "inconclusive"
    low, high = c.ratio_ci
    if 1 - c.threshold <= low and high <= 1 + c.threshold:
        return "unchanged"
    if not adjusted_p < alpha or direction == 0:
        return "inconclusive"
    return "improved" if (direction > 0) == (c.goal == "maximize") else "regressed"
