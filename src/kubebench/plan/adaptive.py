"""Adaptive repeats and sequential decisions: which trials need another run, round after round.

Adaptive repeats: a trial is done when the repeated 95% CI of its primary metric's mean has a
half-width below ``target_ci`` × mean, or when it has ``max`` runs. The CI is the sequential one of
:mod:`kubebench.numerics.sequential`: stopping when it is narrow enough keeps its 95% whatever the
round (a plain t-interval, looked at after every run and stopped on when narrow, holds the mean
only 90–92% of the time at 2–3% noise: ``bench/sequential_decisions.py``).

Sequential decisions (``kubebench run --decide-against``): a trial is done as soon as it is
``regressed``, ``improved`` or ``unchanged`` against its base, or ``inconclusive`` at ``max`` runs
(:func:`kubebench.numerics.sequential.decide`).

Rounds interleave trials, as asv does, so slow drift of the machine is spread over all of them.
Pure: values in, decisions out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import SpecError
from ..numerics.sequential import MIN_RUNS, Decision, Design, decide, interval
from ..rules import Goal
from ..spec.model import AdaptiveRepeats, BenchmarkSpec
from .plan import Run, Trial, make_run

#: The confidence of adaptive repeats' CI (``target_ci`` is its half-width).
ADAPTIVE_CONFIDENCE = 0.95


def converged(values: Sequence[float], policy: AdaptiveRepeats) -> bool:
    """True when the repeated CI of the mean is tight enough (needs at least ``policy.min`` values, and 3)."""
    if len(values) < policy.min:
        return False
    low, high = interval(values, Design(policy.min, policy.max), ADAPTIVE_CONFIDENCE)
    mean = sum(values) / len(values)
    if not (low == low and high == high) or mean == 0:
        return False
    return (high - low) / 2 / abs(mean) <= policy.target_ci


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


@dataclass(frozen=True)
class Against:
    """What a sequential run decides against: the base's values of ``metric`` for each trial of the
    plan (by trial id; a trial the base lacks has none), and how it decides (``design``)."""

    #: in words: ``experiment bench-2026…`` or ``series bench (4 experiments since …)``
    text: str
    experiments: tuple[str, ...]
    metric: str
    goal: Goal
    design: Design
    base: Mapping[str, tuple[float, ...]] = field(default_factory=dict)


def sequential_design(spec: BenchmarkSpec, repeats: int | None, margin: float) -> Design:
    """The design of ``--decide-against`` from the spec's repeats: adaptive repeats give ``min`` and
    ``max``; a fixed number (or ``--repeats``) is the most, after :data:`MIN_RUNS` (or fewer) runs."""
    policy = spec.repeats
    if repeats is None and isinstance(policy, AdaptiveRepeats):
        low, high = policy.min, policy.max
    else:
        high = repeats if repeats is not None else int(policy)  # type: ignore[arg-type]
        low = min(MIN_RUNS, high)
    if high < 2:
        raise SpecError(f"--decide-against needs at least 2 runs per trial to decide, and repeats is {high}: "
                        "give `repeats: {min: 3, max: 10}` (or --repeats 10)")
    return Design(max(2, low), high, margin=margin)


def decision_round(trials: Sequence[Trial], values: Mapping[str, Sequence[float]], runs_done: Mapping[str, int],
                   repeat: int, against: Against) -> tuple[list[Run], dict[str, Decision]]:
    """The runs of round ``repeat`` (one for every trial still undecided under ``max`` runs) and the
    decisions of the trials that are done (decided, or ``inconclusive`` at ``max``)."""
    runs, done = [], {}
    for trial in trials:
        ran = runs_done.get(trial.id, 0)
        decision = decide(against.base.get(trial.id, ()), values.get(trial.id, ()), against.design, against.goal,
                          last=ran >= against.design.max_runs)
        if decision.decided:
            done[trial.id] = decision
        else:
            runs.append(make_run(trial, repeat))
    return runs, done
