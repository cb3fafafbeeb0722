"""Two standard benchmark studies: scaling efficiency over worker counts, and platform overhead.

Both use medians of the repeats (robust to one slow run, like :mod:`kubebench.analyse.compare`)
and percentile-bootstrap CIs of ratios of medians, seeded so that reports are reproducible.

Scaling baseline: efficiency is measured against the smallest worker count N0 in the data, which
should be 1. When it is not (say the study starts at 2 GPUs because one does not fit the model),
N0 is the baseline and ideal scaling from it is linear: speedup(N) = median(N) / median(N0) and
efficiency(N) = speedup(N) / (N / N0). The efficiency is then relative to N0 workers, not to one,
which each point records in ``baseline_workers``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubebench.errors import SpecError
from kubebench.numerics.stats import NAN, Summary, bootstrap_median_ratio, summarize
from kubebench.rules import GOALS, Goal


@dataclass(frozen=True)
class ScalingPoint:
    """Throughput at one worker count, relative to the baseline worker count."""

    workers: int
    throughput: Summary
    speedup: float
    efficiency: float
    efficiency_ci: tuple[float, float]
    baseline_workers: int


@dataclass(frozen=True)
class Overhead:
    """How much worse a platform is than bare metal: +0.042 means 4.2% worse."""

    goal: Goal
    bare: Summary
    platform: Summary
    overhead: float
    ci: tuple[float, float]

    def describe(self) -> str:
        """One line such as ``overhead +4.2% ± 1.1%`` (± is half the CI's width)."""
        if math.isnan(self.overhead):
            return "overhead n/a (no values)"
        text = f"overhead {self.overhead * 100:+.1f}%"
        low, high = self.ci
        if math.isnan(low) or math.isnan(high):
            return text + " (too few runs for a CI)"
        return text + f" ± {(high - low) / 2 * 100:.1f}%"


def scaling_efficiency(
    throughput_by_workers: Mapping[int, Sequence[float]],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int | np.random.Generator = 0,
) -> list[ScalingPoint]:
    """Speedup and parallel efficiency per worker count, sorted by workers (see module docstring).

    Raises SpecError when there is no usable baseline: no worker counts, a count below 1, or
    no positive throughput at the smallest count.
    """
    counts = _worker_counts(throughput_by_workers)
    base_n = counts[0]
    base = np.asarray(throughput_by_workers[base_n], dtype=float)
    base_median = summarize(base).median
    if not base_median > 0:
        raise SpecError(
            f"scaling efficiency needs a positive throughput at the baseline of {base_n} "
            f"worker(s), got {base.tolist()}"
        )
    baseline = _Baseline(int(base_n), _finite(base), base_median)
    rng = np.random.default_rng(seed)
    return [
        _scaling_point(n, throughput_by_workers[n], baseline, confidence, resamples, rng)
        for n in counts
    ]


def overhead(
    bare: Sequence[float],
    platform: Sequence[float],
    *,
    goal: Goal,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int | np.random.Generator = 0,
) -> Overhead:
    """Relative overhead of ``platform`` over ``bare`` from their medians, with a bootstrap CI.

    maximize (throughput): bare / platform - 1; minimize (time): platform / bare - 1.
    Either way positive means the platform is worse.
    """
    if goal not in GOALS:
        raise ValueError(f"goal must be one of {GOALS}, got {goal!r}")
    bare_sum, platform_sum = summarize(bare), summarize(platform)
    worse, better = (bare, platform) if goal == "maximize" else (platform, bare)
    worse_median, better_median = summarize(worse).median, summarize(better).median
    value = worse_median / better_median - 1 if better_median > 0 else NAN
    low, high = bootstrap_median_ratio(
        _finite(worse), _finite(better), confidence=confidence, resamples=resamples, seed=seed
    )
    return Overhead(goal, bare_sum, platform_sum, value, (low - 1, high - 1))


def _worker_counts(throughput_by_workers: Mapping[int, Sequence[float]]) -> list[int]:
    """Sorted worker counts, validated as whole numbers of at least 1."""
    if not throughput_by_workers:
        raise SpecError(
            "scaling efficiency needs throughput for at least one worker count, got none"
        )
    bad = [
        n
        for n in throughput_by_workers
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1
    ]
    if bad:
        raise SpecError(f"worker counts must be whole numbers of at least 1, got {bad}")
    return sorted(throughput_by_workers)


@dataclass(frozen=True)
class _Baseline:
    """The worker count that scaling is measured against, with its finite values and median."""

    workers: int
    values: np.ndarray
    median: float


def _scaling_point(
    n: int,
    values: Sequence[float],
    baseline: _Baseline,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> ScalingPoint:
    """One ScalingPoint; the baseline's own efficiency is exactly 1 by definition."""
    summary = summarize(values)
    speedup = summary.median / baseline.median
    ideal = int(n) / baseline.workers
    if n == baseline.workers:
        ci = (1.0, 1.0) if summary.n else (NAN, NAN)
    else:
        low, high = bootstrap_median_ratio(
            _finite(values), baseline.values, confidence=confidence, resamples=resamples, seed=rng
        )
        ci = (low / ideal, high / ideal)
    return ScalingPoint(int(n), summary, speedup, speedup / ideal, ci, baseline.workers)


def _finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The finite values, as summarize counts them."""
    x = np.asarray(values, dtype=float).ravel()
    finite: np.ndarray = x[np.isfinite(x)]
    return finite
