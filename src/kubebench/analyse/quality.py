"""Warnings about how far numbers can be trusted: what pyperf calls "benchmark unstable".

Pure: summaries and scaling points in, short warnings out (each says what is wrong and its likely
cause). The CLI, the report and the dashboard show the same warnings for the same data.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..numerics.stats import Summary

if TYPE_CHECKING:  # studies needs NumPy; `kubebench results` imports this module and must stay light
    from .studies import ScalingPoint

#: A trial's CV counts as far above the rest when it is this many times their median CV …
CV_OUTLIER_FACTOR = 3.0
#: … and above this CV in absolute terms (a 0.3% CV among 0.1% ones is still a quiet trial).
CV_OUTLIER_MIN = 0.10
#: A trial whose runs' CV is above this is unstable, whatever the other trials do (pyperf warns at 10%).
UNSTABLE_CV = 0.10
#: Scaling efficiency above 100% by more than this is flagged (below it, noise explains it).
SUPERLINEAR_TOLERANCE = 0.02


def ci_crosses_zero(summary: Summary) -> bool:
    """True when the CI of a metric whose values are all non-negative reaches below zero: the
    t-interval says only that there are too few (or too spread) runs, never a negative throughput."""
    return summary.n >= 2 and summary.min >= 0 and summary.ci_low < 0


def cv_outliers(cvs: Mapping[str, float]) -> list[str]:
    """Warnings for the trials (label → CV of their runs) whose CV is far above the other trials'."""
    known = {label: cv for label, cv in cvs.items() if cv is not None and math.isfinite(cv)}
    warnings = []
    for label, cv in known.items():
        others = [v for other, v in known.items() if other != label]
        if not others:
            continue
        typical = statistics.median(others)
        if cv > CV_OUTLIER_MIN and cv > CV_OUTLIER_FACTOR * typical:
            warnings.append(
                f"{label}: its runs disagree (CV {cv:.0%}, the other trials {typical:.0%}); likely a noisy "
                "neighbour, throttling or a run that hit a cold cache: check its runs and add repeats")
    return warnings


def noise_warnings(cvs: Mapping[str, float]) -> list[str]:
    """A warning for every trial (label → CV of its runs) whose CV is above :data:`UNSTABLE_CV`, saying
    too when it is far above the other trials' (:func:`cv_outliers`): one noisy trial or all of them."""
    outliers = {w.partition(": ")[0] for w in cv_outliers(cvs)}
    known = {label: cv for label, cv in cvs.items() if cv is not None and math.isfinite(cv)}
    warnings = []
    for label, cv in known.items():
        if cv <= UNSTABLE_CV:
            continue
        others = [v for other, v in known.items() if other != label]
        versus = f", far above the other trials' {statistics.median(others):.0%}" if label in outliers else ""
        warnings.append(f"{label}: unstable: CV {cv:.0%} > {UNSTABLE_CV:.0%}{versus}: its runs disagree; likely a "
                        "noisy neighbour, throttling or a run that hit a cold cache: check its runs and add repeats")
    return warnings


def zero_crossing_warning(labels: Sequence[str]) -> list[str]:
    """One warning for the trials whose CI reaches below zero (see :func:`ci_crosses_zero`); the trials
    are separated by ``;`` (each label has commas of its own: ``batch_size=16, workers=2``)."""
    if not labels:
        return []
    shown = "; ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
    return [f"{shown}: n too small: the 95% CI reaches below zero for a metric that cannot be negative; "
            "add repeats for a usable interval"]


def scaling_warnings(points: Sequence[ScalingPoint], label: str = "") -> list[str]:
    """Warnings for scaling efficiencies above 100%, with the likely cause."""
    where = f"{label}: " if label else ""
    baseline = next((p for p in points if p.workers == p.baseline_workers), None)
    warnings = []
    for p in points:
        if p.workers == p.baseline_workers or not p.efficiency > 1 + SUPERLINEAR_TOLERANCE:
            continue
        cause = "the replicas may not get like-for-like resources (threads per replica, CPU share)"
        if baseline is not None and baseline.throughput.cv > CV_OUTLIER_MIN:
            cause = (f"the {p.baseline_workers}-worker baseline is erratic (CV {baseline.throughput.cv:.0%}), "
                     "or " + cause)
        warnings.append(f"{where}efficiency {p.efficiency:.0%} at {p.workers} workers is above 100% "
                        f"(superlinear): {cause}; fix the threads per replica and check the baseline's runs")
    return warnings
