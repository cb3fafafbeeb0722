"""Experiment-level analysis over run records: trials matched by parameters, compared, scaled.

Pure: takes the records the store returns and the metric to look at; no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import SpecError
from ..store.records import FAILED_STATES, RunRecord
from .compare import Comparison, Goal, compare
from .studies import Overhead, ScalingPoint, overhead, scaling_efficiency


@dataclass(frozen=True)
class TrialValues:
    """One trial's values of a metric, and how many of its runs failed."""

    trial_id: str
    params: dict[str, object]
    values: tuple[float, ...]
    failed: int


@dataclass(frozen=True)
class TrialComparison:
    """A trial of the base and the candidate with equal parameters, compared on one metric."""

    params: dict[str, object]
    metric: str
    comparison: Comparison
    #: Failed runs of each side: they count, and are shown, but give no value.
    failed: tuple[int, int] = (0, 0)

    def to_dict(self) -> dict[str, object]:
        """The JSON form: ``params``, ``metric``, ``base``, ``candidate``, ``ratio``, ``ratio_ci``, ``p_value``, ``verdict``…"""
        data = {"params": self.params, "metric": self.metric, **self.comparison.to_dict()}
        data["base"]["failed"], data["candidate"]["failed"] = self.failed  # type: ignore[index]
        return data


def trial_values(runs: Sequence[RunRecord], metric: str) -> list[TrialValues]:
    """Values of ``metric`` per trial (counted runs only), in trial order."""
    grouped: dict[str, list[RunRecord]] = {}
    for run in runs:
        if not run.warmup:
            grouped.setdefault(run.trial_id, []).append(run)
    return [
        TrialValues(
            trial_id,
            trial_runs[0].params,
            tuple(r.metrics[metric] for r in trial_runs if r.status == "succeeded" and metric in r.metrics),
            sum(1 for r in trial_runs if r.status in FAILED_STATES),
        )
        for trial_id, trial_runs in grouped.items()
    ]


def params_key(params: dict[str, object]) -> str:
    """A hashable, order-independent form of a parameter point."""
    return json.dumps(params, sort_keys=True, default=str)


def matched_trials(base: Sequence[RunRecord], candidate: Sequence[RunRecord],
                   metric: str) -> list[tuple[TrialValues, TrialValues]]:
    """Pairs of trials with equal swept parameters.

    A parameter fixed within each experiment describes what is being compared (a version, a
    backend, a flag) and may differ between them; parameters that vary must match.
    """
    base_trials, candidate_trials = trial_values(base, metric), trial_values(candidate, metric)
    swept = _varying(base_trials) | _varying(candidate_trials)

    def key(trial: TrialValues) -> str:
        return params_key({k: v for k, v in trial.params.items() if k in swept})

    candidates = {key(t): t for t in candidate_trials}
    pairs = [(b, candidates[key(b)]) for b in base_trials if key(b) in candidates]
    if not pairs:
        raise SpecError("the two experiments have no trials with equal parameters to compare")
    return pairs


def _varying(trials: Sequence[TrialValues]) -> set[str]:
    names = {k for t in trials for k in t.params}
    return {k for k in names if len({params_key({k: t.params.get(k)}) for t in trials}) > 1}


def compare_experiments(base: Sequence[RunRecord], candidate: Sequence[RunRecord], metric: str, goal: Goal,
                        threshold: float = 0.02) -> list[TrialComparison]:
    """Every matched trial compared on ``metric`` (verdicts respect ``goal``)."""
    return [
        TrialComparison(b.params, metric, compare(b.values, c.values, goal=goal, threshold=threshold),
                        (b.failed, c.failed))
        for b, c in matched_trials(base, candidate, metric)
    ]


def overheads(bare: Sequence[RunRecord], platform: Sequence[RunRecord], metric: str,
              goal: Goal) -> list[tuple[dict[str, object], Overhead]]:
    """Platform overhead per matched trial: the same spec run bare and through the platform."""
    return [(b.params, overhead(b.values, p.values, goal=goal)) for b, p in matched_trials(bare, platform, metric)]


def scaling(runs: Sequence[RunRecord], metric: str, workers_param: str = "workers",
            ) -> list[tuple[dict[str, object], list[ScalingPoint]]]:
    """Scaling efficiency over ``workers_param`` for every combination of the other parameters."""
    groups: dict[str, tuple[dict[str, object], dict[int, tuple[float, ...]]]] = {}
    for trial in trial_values(runs, metric):
        if workers_param not in trial.params:
            raise SpecError(f"parameter {workers_param!r} is not swept in this experiment; "
                            f"parameters: {', '.join(trial.params) or 'none'}")
        rest = {k: v for k, v in trial.params.items() if k != workers_param}
        entry = groups.setdefault(params_key(rest), (rest, {}))
        entry[1][int(trial.params[workers_param])] = trial.values
    return [(rest, scaling_efficiency(by_workers)) for rest, by_workers in groups.values()]
