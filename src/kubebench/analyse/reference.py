"""Results held against published figures (the spec's ``reference:``), and the exemplar gate.

For each reference and each trial it applies to (``where:`` matches the trial's parameters), the
fraction of the reference reached: ``median / reference`` for a metric to maximize, ``reference /
median`` for one to minimize (so above 1 is better than the reference either way), with a 95%
percentile-bootstrap CI of that median (2000 resamples, seeded). The gate (``kubebench efficiency
--fail-on reference[:N%]``) fails a trial whose fraction is below ``min_ratio`` (0.95 unless the
reference or the rule says otherwise), judged on the median, the figure reported; a trial without
values fails too, since it shows nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import SpecError
from ..numerics.stats import NAN, Summary, bootstrap_median_ratio, summarize
from ..spec.efficiency import Reference
from ..store.records import RunRecord
from .experiments import trial_values


@dataclass(frozen=True)
class ReferenceCheck:
    """One trial against one reference."""

    params: dict[str, object]
    reference: Reference
    goal: str
    values: Summary
    fraction: float
    ci: tuple[float, float]

    def passed(self, min_ratio: float | None = None) -> bool:
        """Whether the trial reached ``min_ratio`` (else the reference's own) of the reference."""
        limit = self.reference.min_ratio if min_ratio is None else min_ratio
        return not math.isnan(self.fraction) and self.fraction >= limit


def references_of(spec_text: str) -> list[Reference]:
    """The ``reference:`` entries of a stored spec (entries that do not validate are left out)."""
    import yaml

    try:
        raw = (yaml.safe_load(spec_text) or {}).get("reference") or []
    except (yaml.YAMLError, AttributeError):
        return []
    found = []
    for entry in [raw] if isinstance(raw, dict) else raw:
        try:
            found.append(Reference(**entry))
        except (TypeError, ValueError):
            continue
    return found


def check_references(runs: Sequence[RunRecord], references: Sequence[Reference],
                     goal_of: Callable[[str], str]) -> list[ReferenceCheck]:
    """Every (trial, reference) pair that applies, in trial order per reference."""
    checks = []
    for ref in references:
        goal = goal_of(ref.metric)
        for trial in trial_values(runs, ref.metric):
            if any(trial.params.get(k) != v for k, v in ref.where.items()):
                continue
            checks.append(_check(trial.params, trial.values, ref, goal))
    return checks


def _check(params: dict[str, object], values: Sequence[float], ref: Reference, goal: str) -> ReferenceCheck:
    summary = summarize(values)
    if summary.n == 0 or not summary.median > 0:
        return ReferenceCheck(params, ref, goal, summary, NAN, (NAN, NAN))
    low, high = bootstrap_median_ratio(values, [ref.value, ref.value])  # a constant: the median's own CI
    if goal == "maximize":
        return ReferenceCheck(params, ref, goal, summary, summary.median / ref.value, (low, high))
    return ReferenceCheck(params, ref, goal, summary, ref.value / summary.median, (1 / high, 1 / low))


_RULE = re.compile(r"^reference(?::\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*%)?$")


def parse_reference_rule(text: str) -> float | None:
    """``reference`` → None (each reference's ``min_ratio``); ``reference:97%`` → 0.97."""
    match = _RULE.match(text.strip())
    if match is None:
        raise SpecError(f"invalid --fail-on rule {text!r}: expected 'reference' or 'reference:N%' "
                        "(for example reference:95%, the least fraction of the reference that passes)")
    return float(match["number"]) / 100 if match["number"] else None
