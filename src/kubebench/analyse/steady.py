"""Warm-up and drift detection in a per-step series (step times or rates) of one run.

Warm-up: MSER-5, the Marginal Standard Error Rule with batches of 5 steps (White 1997; Franklin
& White 2008). The series is cut into batch means Y_1..Y_k, and the truncation d (in batches)
minimizes

    MSER(d) = sum_{i>d} (Y_i - mean(Y_{d+1..k}))^2 / (k - d)^2

i.e. the squared standard error of the remaining mean: dropping early steps pays off only while
they add more bias than the removed data would have reduced noise. As usual for MSER, d is limited
to the first half of the series, because near the end the few remaining batches make the
statistic unreliable (and a run that needs more than half its steps to warm up is not steady).

One change to plain MSER: it runs on the series minus a straight line fitted to its second half.
Plain MSER reads a steady slowdown (thermal throttling) as one long warm-up and cuts up to half of
the series, which hides the very drift we want to report. Removing the trend of the second half
(which MSER already assumes to be past the warm-up) leaves a warm-up transient visible and makes a
linear drift look stationary, so it is kept and measured.

Tie-breaking: after the warm-up the MSER curve is flat up to noise, and its plain minimum wanders
into the steady part whenever a few batches happen to be noisy (in simulation, plain MSER-5 put
a 20-step warm-up within ±5 steps only ~61% of the time). Like the "one standard error rule" of
model selection, we take the *smallest* truncation whose MSER is within two standard errors of
the minimum, treating MSER as a variance estimate from m kept batches (relative SE sqrt(2/(m-1))).
That put the same warm-up within ±5 steps ~99% of the time; any warm-up it leaves in is one whose
effect on the steady mean is within that mean's own noise, which is what MSER trades off anyway.

Drift: a least-squares line over the steady part; ``drift = (fit_end - fit_start) / fit_start``
over the whole steady window. ``drifting`` when |drift| > 5% and the slope is significant
(p < 0.05). The p-value treats steps as independent, which overstates significance for
autocorrelated noise; the 5% size floor is what keeps that from flagging harmless wobble.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from kubebench.analyse.stats import NAN

BATCH = 5
MIN_STEPS = 2 * BATCH  # MSER needs at least two batches to compare
SE_TOLERANCE = 2.0  # how many standard errors above the MSER minimum still count as a tie
DRIFT_LIMIT = 0.05
DRIFT_ALPHA = 0.05


@dataclass(frozen=True)
class SteadyState:
    """Where a series becomes steady, and what the steady part looks like."""

    warmup_steps: int
    steady_mean: float
    steady_median: float
    n_steady: int
    drift: float
    drifting: bool


def detect_steady_state(series: Sequence[float]) -> SteadyState:
    """Find the warm-up (MSER-5) and the drift of the rest (see module docstring).

    Non-finite values are dropped first. Series shorter than 10 steps are too short to detect a
    warm-up: all of it counts as steady. Never raises for short or empty input.
    """
    x = np.asarray(series, dtype=float).ravel()
    x = x[np.isfinite(x)]
    warmup = mser5_truncation(x) if x.size >= MIN_STEPS else 0
    steady = x[warmup:]
    drift, p_value = linear_drift(steady)
    drifting = bool(abs(drift) > DRIFT_LIMIT and p_value < DRIFT_ALPHA)
    if steady.size == 0:
        return SteadyState(warmup, NAN, NAN, 0, drift, drifting)
    return SteadyState(
        warmup_steps=warmup,
        steady_mean=float(np.mean(steady)),
        steady_median=float(np.median(steady)),
        n_steady=int(steady.size),
        drift=drift,
        drifting=drifting,
    )


def mser5_truncation(series: np.ndarray) -> int:
    """Warm-up length in steps by MSER-5 on the second-half-detrended series (a multiple of 5)."""
    batches = _batch_means(_detrend_by_second_half(series))
    if batches.size < 2:
        return 0
    scores = np.array([_mser(batches[d:]) for d in range(batches.size // 2 + 1)])
    best = int(np.argmin(scores))
    # The least truncation whose score is within two standard errors of the best one (relative
    # SE of a variance from m values: sqrt(2 / (m - 1))); see "Tie-breaking" in the docstring.
    kept = batches.size - best
    tolerance = scores[best] * (1 + SE_TOLERANCE * math.sqrt(2 / max(kept - 1, 1)))
    return int(np.argmax(scores <= tolerance)) * BATCH


def linear_drift(steady: np.ndarray) -> tuple[float, float]:
    """(relative change of the fitted line over the window, p-value of its slope).

    (nan, nan) when fewer than 3 points or the line starts at 0; a constant series has no drift.
    """
    if steady.size < 3:
        return NAN, NAN
    if np.all(steady == steady[0]):
        return 0.0, 1.0
    fit = stats.linregress(np.arange(steady.size), steady)
    start = fit.intercept
    end = fit.intercept + fit.slope * (steady.size - 1)
    if start == 0:
        return NAN, float(fit.pvalue)
    return float((end - start) / abs(start)), float(fit.pvalue)


def _batch_means(x: np.ndarray) -> np.ndarray:
    """Means of consecutive batches of 5; a last incomplete batch is left out of the statistic."""
    k = x.size // BATCH
    return x[: k * BATCH].reshape(k, BATCH).mean(axis=1)


def _mser(batches: np.ndarray) -> float:
    """MSER statistic of the batches kept after a truncation."""
    return float(np.sum((batches - batches.mean()) ** 2) / batches.size**2)


def _detrend_by_second_half(x: np.ndarray) -> np.ndarray:
    """x minus the least-squares line of its second half, extended over the whole series."""
    steps = np.arange(x.size)
    half = x.size // 2
    if x.size - half < 3 or math.isclose(np.ptp(x[half:]), 0.0):
        return x
    slope, intercept = np.polyfit(steps[half:], x[half:], 1)
    return x - (slope * steps + intercept)
