"""Checks of what an analysis is asked for, light enough for ``kubebench results`` (no NumPy, no SciPy)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import SpecError
from ..store.records import RunRecord


def metric_names(*experiments: Sequence[RunRecord]) -> list[str]:
    """Every metric some run of ``experiments`` has, sorted."""
    return sorted({name for runs in experiments for run in runs for name in run.metrics})


def check_metric(metric: str, found: Sequence[str], declared: Sequence[str] = ()) -> None:
    """Raise SpecError (exit 2) naming the metrics there are, when ``metric`` is neither among the
    ``found`` ones nor ``declared`` by the spec: a typo must not make a CI gate pass."""
    if metric in declared or metric in found:
        return
    known = dict.fromkeys([*declared, *found])
    raise SpecError(f"no run has a metric {metric!r}; metrics: {', '.join(known) or 'none'}")
