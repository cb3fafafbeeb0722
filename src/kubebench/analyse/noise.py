"""A benchmark's own noise floor from A/A experiments: the same spec run two or more times.

Per trial × metric, ``spread`` is the largest relative difference between one A/A experiment's
median and the median of the other experiments' runs pooled — how far apart two runs of an
unchanged benchmark land — and ``cv`` the pooled within-experiment coefficient of variation.
``kubebench check`` and ``history`` then take ``max(spread, MIN_THRESHOLD)`` as the threshold below
which a difference is noise, instead of one global default. Pure: values in, floors out.

A floor is a threshold below which the gate passes every change, so what it is measured from is
checked (security review 2026-12-02 N10: a baseline and a 20% regression given as "A/A" stored a 25%
floor, and ``check`` then passed the regression): :func:`aa_differences` says how experiments given as
A/A differ in what they ran (job, spec, trials, labels, code), and a floor is stored at most
:data:`MAX_FLOOR` unless asked.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..store.series_records import NoiseFloor, SeriesData

#: A threshold below this is not believed: two A/A experiments may land unusually close by chance.
MIN_THRESHOLD = 0.005
#: A floor above this is stored as this (``calibrate --max-floor`` raises it): a benchmark whose A/A
#: experiments land further apart cannot gate changes of that size, and a wrong "A/A" would disarm the gate.
MAX_FLOOR = 0.10
#: Labels that tell A/A experiments apart by design (``calibrate`` sets them).
AA_LABELS = frozenset({"calibration", "aa"})
#: Provenance fields that say which code ran: A/A experiments must agree on them.
CODE_FIELDS = ("git", "image", "packages", "python")


@dataclass(frozen=True)
class AAExperiment:
    """What an experiment given as A/A ran: its job, spec, trials, labels and environment (provenance)."""

    id: str
    job_fingerprint: str
    spec_text: str
    trials: frozenset[str]
    labels: Mapping[str, str] = field(default_factory=dict)
    environment: Mapping[str, object] = field(default_factory=dict)


def aa_differences(experiments: Sequence[AAExperiment], job_fingerprint: str) -> list[str]:
    """How the experiments differ from each other, or from the spec's job (``job_fingerprint``), in what they
    ran: one line per difference ("" differences: a true A/A set)."""
    from ..provenance import flatten

    found = [f"{e.id} ran another job than the spec's (its command or template differs)"
             for e in experiments if e.job_fingerprint != job_fingerprint]
    first, *others = experiments
    for e in others:
        pair = f"{first.id} and {e.id}"
        if e.spec_text != first.spec_text:
            found.append(f"{pair} were run from different spec texts")
        if e.trials != first.trials:
            found.append(f"{pair} ran different trials (parameters)")
        for key in sorted((first.labels.keys() | e.labels.keys()) - AA_LABELS):
            if first.labels.get(key) != e.labels.get(key):
                found.append(f"{pair} differ in label {key}: {first.labels.get(key, '(none)')} ≠ {e.labels.get(key, '(none)')}")
        code_a, code_b = flatten(dict(first.environment)), flatten(dict(e.environment))
        for key in sorted(k for k in code_a.keys() | code_b.keys() if k.startswith(CODE_FIELDS)):
            if code_a.get(key) != code_b.get(key):
                found.append(f"{pair} ran different code: {key} {code_a.get(key, '(none)')} ≠ {code_b.get(key, '(none)')}")
    return found


def capped(floors: Sequence[NoiseFloor], cap: float = MAX_FLOOR) -> tuple[list[NoiseFloor], list[NoiseFloor]]:
    """(the floors with every spread at most ``cap``, the floors as measured that were above it)."""
    from dataclasses import replace

    above = [f for f in floors if f.spread > cap]
    return [replace(f, spread=cap) if f.spread > cap else f for f in floors], above


def spread(experiments: Sequence[Sequence[float]]) -> tuple[float, float]:
    """(largest |median of one / median of the others − 1|, pooled CV) of one trial × metric."""
    groups = [[v for v in g if math.isfinite(v)] for g in experiments]
    groups = [g for g in groups if g]
    if len(groups) < 2:
        return math.nan, math.nan
    widest = 0.0
    for i, group in enumerate(groups):
        others = statistics.median([v for j, g in enumerate(groups) if j != i for v in g])
        if others:
            widest = max(widest, abs(statistics.median(group) / others - 1))
    variances = [statistics.variance(g) for g in groups if len(g) > 1]
    mean = statistics.fmean([v for g in groups for v in g])
    cv = math.sqrt(statistics.fmean(variances)) / abs(mean) if variances and mean else math.nan
    return max(widest, MIN_THRESHOLD), cv


def noise_floors(data: SeriesData, experiment_ids: Sequence[str], metrics: Sequence[str]) -> list[NoiseFloor]:
    """The floors of every trial × metric measured in the A/A experiments ``experiment_ids``."""
    floors = []
    for key, by_experiment in data.runs.items():
        for metric in metrics:
            groups = [[m[metric] for m in by_experiment.get(e, []) if metric in m] for e in experiment_ids]
            widest, cv = spread(groups)
            if math.isfinite(widest):
                used = tuple(e for e, g in zip(experiment_ids, groups) if g)
                floors.append(NoiseFloor(key, metric, widest, cv if math.isfinite(cv) else 0.0, used,
                                         sum(len(g) for g in groups)))
    return floors
