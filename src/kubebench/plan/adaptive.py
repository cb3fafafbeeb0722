"""Adaptive repeats: which trials need another run, round after round.

A trial is done when the 95% CI of its primary metric's mean (Student t) has a half-width below
``target_ci`` × mean, or when it has ``max`` runs. Rounds interleave trials, as asv does, so slow
drift of the machine is spread over all of them. Pure: values in, decisions out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..numerics.stats import summarize
from ..spec.model import AdaptiveRepeats
from .plan import Run, Trial, make_run


def converged(values: Sequence[float], policy: AdaptiveRepeats) -> bool:
    """True when the CI of the mean is tight enough (needs at least ``policy.min`` values)."""
    if len(values) < policy.min:
        return False
    half_width = summarize(values).ci_half_width_rel
    return half_width == half_width and half_width <= policy.target_ci


def next_round(trials: Sequence[Trial], values: Mapping[str, Sequence[float]], runs_done: Mapping[str, int],
               repeat: int, policy: AdaptiveRepeats) -> list[Run]:
    """Repeat number ``repeat`` of every trial that has not converged and is under ``max`` runs."""
    if repeat >= policy.max:
        return []
    return [
        make_run(trial, repeat)
        for trial in trials
        if runs_done.get(trial.id, 0) < policy.max and not converged(values.get(trial.id, ()), policy)
    ]
