"""What a benchmark can detect before it runs: the smallest change its repeats find at the gate's error rates.

From the run-to-run noise (CV) of each trial — measured by ``kubebench calibrate`` (the A/A floor), else
by the series' recent experiments, else by the experiment's own first runs — and the repeats of the spec,
:func:`detectability` gives the smallest relative loss that ``kubebench check`` finds with probability
:data:`~kubebench.rules.GATE_POWER` when the candidate and its base both have that many runs
(:func:`kubebench.numerics.twosample.detectable_change`). The gate's error rate per test is that of
``check``'s first Holm step over the family of trials × metrics: ``alpha / tests``, two-sided (a
change either way counts), so one-sided ``alpha / (2 · tests)``. When a trial's threshold (its noise
floor, else the default) is below what its repeats detect, the gate cannot fail on a regression of that
size, and the advice is the repeats that would. Pure: numbers in, a frozen value and its words out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..numerics.twosample import detectable_change, repeats_for
from ..rules import COMPARE_ALPHA, GATE_POWER


@dataclass(frozen=True)
class TrialNoise:
    """One trial's run-to-run noise of the primary metric and the gate's threshold for it."""

    label: str
    cv: float
    threshold: float


@dataclass(frozen=True)
class Detectability:
    """What the gate can see of the trial that needs the most repeats (see the module docstring)."""

    repeats: int
    trial: TrialNoise
    #: the smallest relative loss its repeats detect
    change: float
    tests: int
    #: where the noise comes from, in words ("the A/A floor of `kubebench calibrate`")
    source: str
    #: the repeats that detect a change of the threshold (None: not even 1,000), when more than ``repeats``
    advised: int | None
    power: float = GATE_POWER
    alpha: float = COMPARE_ALPHA

    @property
    def enough(self) -> bool:
        """True when the repeats detect changes at the trial's threshold."""
        return self.change <= self.trial.threshold

    def text(self) -> str:
        """``3 repeats at CV 2.0% … detect changes above 6.2% …; the gate's threshold is 2%: use `repeats: 9```."""
        where = f" ({self.trial.label})" if self.trial.label else ""
        said = (f"{self.repeats} repeat{'s' * (self.repeats != 1)} at CV {self.trial.cv:.1%}{where}, from {self.source}, "
                f"detect changes above {self.change:.1%} (the gate's α {self.alpha:g} over its {self.tests} "
                f"test{'s' * (self.tests != 1)}, power {self.power:.0%})")
        if self.enough:
            return f"{said}: the gate's threshold, {self.trial.threshold:.1%}, is within reach"
        advice = (f"use `repeats: {self.advised}`" if self.advised is not None
                  else "no number of repeats gets there: lower the noise, or raise the threshold")
        return f"{said}; the gate's threshold is {self.trial.threshold:.1%}: {advice}"


def detectability(trials: Mapping[str, TrialNoise], repeats: int, tests: int, source: str,
                  alpha: float = COMPARE_ALPHA, power: float = GATE_POWER) -> Detectability | None:
    """The trial of ``trials`` (by any key) whose threshold is furthest below what ``repeats`` detect (the
    noisiest when all are within reach); None when no trial has a measured noise, or below 2 repeats."""
    usable = [t for t in trials.values() if t.cv > 0 and math.isfinite(t.cv)]
    if not usable or repeats < 2:
        return None
    per_test = alpha / (2 * max(1, tests))
    scored = [(detectable_change(repeats, repeats, t.cv, per_test, power), t) for t in usable]
    change, worst = max(scored, key=lambda pair: (pair[0] / pair[1].threshold if pair[1].threshold > 0 else math.inf,
                                                  pair[0]))
    advised = None
    if change > worst.threshold:
        advised = repeats_for(worst.threshold, worst.cv, per_test, power)
    return Detectability(repeats, worst, change, tests, source, advised, power, alpha)


def pooled_cv(groups: list[list[float]]) -> float:
    """The within-group coefficient of variation of groups of runs (each an experiment's): the root mean
    square of each group's CV (scale-free: huge or tiny values neither overflow nor underflow); nan
    without a group of 2 runs."""
    from ..numerics.stats import summarize

    cvs = [cv for g in groups if len(g) > 1 and math.isfinite(cv := summarize(g).cv)]
    return math.sqrt(math.fsum(cv * cv for cv in cvs) / len(cvs)) if cvs else math.nan
