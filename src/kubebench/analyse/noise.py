"""A benchmark's own noise floor from A/A experiments: the same spec run two or more times.

Per trial × metric, ``spread`` is the largest relative difference between one A/A experiment's
median and the median of the other experiments' runs pooled — how far apart two runs of an
unchanged benchmark land — and ``cv`` the pooled within-experiment coefficient of variation.
``kubebench check`` and ``history`` then take ``max(spread, MIN_THRESHOLD)`` as the threshold below
which a difference is noise, instead of one global default. Pure: values in, floors out.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from ..store.series_records import NoiseFloor, SeriesData

#: A threshold below this is not believed: two A/A experiments may land unusually close by chance.
MIN_THRESHOLD = 0.005


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
