"""Experiment-level analysis over run records: trials matched by parameters, compared, scaled.

Pure: takes the records the store returns and the metric to look at; no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import SpecError
from ..rules import COMPARE_ALPHA, COMPARE_THRESHOLD, Goal, worker_parameters
from ..store.records import FAILED_STATES, RunRecord
from .compare import Comparison, compare
from .family import CORRECTIONS, Correction, adjust, rule_p_of
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
    #: The base's trial has no trial with its parameters in the candidate.
    missing: bool = False
    #: The p of the verdict's rule adjusted over every trial compared (nan: not tested), and how.
    adjusted_p: float = math.nan
    correction: str = ""

    @property
    def no_candidate_values(self) -> str:
        """Why the candidate has no value for this trial ("" when it has some): a CI gate fails on it."""
        if self.missing:
            return "the trial is missing from the candidate"
        if self.comparison.candidate.n:
            return ""
        if self.failed[1]:
            return f"every candidate run of the trial failed ({self.failed[1]})"
        return f"no candidate run of the trial has {self.metric!r}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``params``, ``metric``, ``base``, ``candidate``, ``ratio``, ``ratio_ci``, ``p_value``,
        ``verdict``, ``reason``, ``missing``…"""
        data = {"params": self.params, "metric": self.metric, **self.comparison.to_dict(), "missing": self.missing,
                "adjusted_p": None if math.isnan(self.adjusted_p) else self.adjusted_p, "correction": self.correction}
        data["base"]["failed"], data["candidate"]["failed"] = self.failed
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
                   metric: str) -> list[tuple[TrialValues, TrialValues | None]]:
    """Each trial of the base with the candidate's trial of equal swept parameters (None: it has none).

    A parameter fixed within each experiment describes what is being compared (a version, a
    backend, a flag) and may differ between them; parameters that vary must match.
    """
    base_trials, candidate_trials = trial_values(base, metric), trial_values(candidate, metric)
    swept = _varying(base_trials) | _varying(candidate_trials)

    def key(trial: TrialValues) -> str:
        return params_key({k: v for k, v in trial.params.items() if k in swept})

    candidates = {key(t): t for t in candidate_trials}
    pairs = [(b, candidates.get(key(b))) for b in base_trials]
    if not any(c is not None for _, c in pairs):
        raise SpecError("the two experiments have no trials with equal parameters to compare")
    return pairs


def _varying(trials: Sequence[TrialValues]) -> set[str]:
    names = {k for t in trials for k in t.params}
    return {k for k in names if len({params_key({k: t.params.get(k)}) for t in trials}) > 1}


def compare_experiments(base: Sequence[RunRecord], candidate: Sequence[RunRecord], metric: str, goal: Goal,
                        threshold: float = COMPARE_THRESHOLD, correction: Correction | None = "holm",
                        alpha: float = COMPARE_ALPHA) -> list[TrialComparison]:
    """Every trial of the base compared on ``metric`` with the candidate's (verdicts respect ``goal``);
    a trial the candidate lacks is compared with no values (``inconclusive``, ``missing``).

    Over several trials, a trial improved or regressed only when its rule's p stays below ``alpha``
    after ``correction`` over all of them (Holm: a false ``regressed`` anywhere in the family at most
    ``alpha`` of the time, a false ``improved`` too); one
    significant alone but not over the family is ``inconclusive``, saying so. A single trial is
    judged as :func:`.compare.compare` judges it."""
    rows, p_values = [], []
    for b, c in matched_trials(base, candidate, metric):
        values, failed = (c.values, c.failed) if c is not None else ((), 0)
        comparison = compare(b.values, values, goal=goal, threshold=threshold, alpha=alpha)
        if c is None:
            comparison = replace(comparison, reason="the trial is missing from the candidate")
        rows.append(TrialComparison(b.params, metric, comparison, (b.failed, failed), missing=c is None))
        p_values.append(rule_p_of(b.values, values)[0])
    if correction is None:
        return rows
    tested = sum(not math.isnan(p) for p in p_values)
    adjusted_rows = []
    for row, p, adjusted in zip(rows, p_values, adjust(p_values, correction)):
        comparison = row.comparison
        if comparison.verdict in ("improved", "regressed") and not adjusted < alpha:
            comparison = replace(comparison, verdict="inconclusive", reason=(
                f"significant alone (p={p:.2g}) but not over the {tested} trials compared "
                f"({CORRECTIONS[correction]}: adjusted p={adjusted:.2g})"))
        adjusted_rows.append(replace(row, comparison=comparison, adjusted_p=adjusted, correction=correction))
    return adjusted_rows


def family_note(rows: Sequence[TrialComparison]) -> str:
    """``the verdict's p adjusted over the 3 trials tested (Holm (family-wise error rate))``; "" for one
    trial or none adjusted (what every view of a comparison says under its verdicts)."""
    tested = sum(not math.isnan(r.adjusted_p) for r in rows)
    if tested < 2 or not rows[0].correction:
        return ""
    return f"the verdict's p adjusted over the {tested} trials tested ({CORRECTIONS[rows[0].correction]})"


def overheads(bare: Sequence[RunRecord], platform: Sequence[RunRecord], metric: str,
              goal: Goal) -> list[tuple[dict[str, object], Overhead]]:
    """Platform overhead per matched trial: the same spec run bare and through the platform."""
    return [(b.params, overhead(b.values, p.values, goal=goal))
            for b, p in matched_trials(bare, platform, metric) if p is not None]


def workers_parameter(runs: Sequence[RunRecord], metric: str) -> str:
    """The swept parameter that holds the number of workers (``workers``, ``nodes``, ``gpus`` …,
    see :data:`kubebench.rules.WORKER_PARAMETER`); SpecError when there is none or several."""
    trials = trial_values(runs, metric)
    swept = [k for k in dict.fromkeys(k for t in trials for k in t.params) if k in _varying(trials)]
    found = worker_parameters(swept)
    if len(found) == 1:
        return found[0]
    if found:
        raise SpecError(f"several swept parameters could be the number of workers ({', '.join(found)}): "
                        "choose one with --workers-param")
    raise SpecError("no swept parameter holds a number of workers (workers, nodes, gpus, replicas …); "
                    f"swept: {', '.join(swept) or 'none'}; name it with --workers-param")


def scaling(runs: Sequence[RunRecord], metric: str, workers_param: str | None = None,
            ) -> list[tuple[dict[str, object], list[ScalingPoint]]]:
    """Scaling efficiency over ``workers_param`` (default: found by name, see :func:`workers_parameter`)
    for every combination of the other parameters."""
    workers_param = workers_param or workers_parameter(runs, metric)
    groups: dict[str, tuple[dict[str, object], dict[int, tuple[float, ...]]]] = {}
    for trial in trial_values(runs, metric):
        if workers_param not in trial.params:
            raise SpecError(f"parameter {workers_param!r} is not swept in this experiment; "
                            f"parameters: {', '.join(trial.params) or 'none'}")
        rest = {k: v for k, v in trial.params.items() if k != workers_param}
        entry = groups.setdefault(params_key(rest), (rest, {}))
        entry[1][_worker_count(workers_param, trial.params[workers_param])] = trial.values
    return [(rest, scaling_efficiency(by_workers)) for rest, by_workers in groups.values()]


def _worker_count(name: str, value: object) -> int:
    """A trial's number of workers; SpecError when its parameter holds no whole number."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
        return int(value)
    raise SpecError(f"parameter {name!r} must hold whole numbers of workers, got {value!r}")
