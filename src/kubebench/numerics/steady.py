"""Warm-up and drift detection in a per-step series (step times or rates) of one run.

Warm-up: MSER-5, the Marginal Standard Error Rule with batches of 5 steps (White 1997; Franklin
& White 2008). The series is cut into batch means Y_1..Y_k, and the truncation d (in batches) is
chosen to minimize

    MSER(d) = sum_{i>d} (Y_i - fit_d(i))^2 / (k - d)^2

the squared standard error of what remains: dropping early steps pays off only while they add
more bias than the removed data would have reduced noise. As usual for MSER, d is limited to the
first half of the series (near the end the few remaining batches make the statistic unreliable,
and a run that needs more than half its steps to warm up is not steady).

Two changes to textbook MSER-5, both found necessary by simulation:

- The steady model is a line, not a constant: ``fit_d`` is the least-squares line through
  Y_{d+1..k} (textbook MSER uses their mean). A constant model reads a steady slowdown (thermal
  throttling) as one long warm-up and cuts up to half of the run, which hides the very drift we
  want to report. With a line, a drift fits and is kept, while a warm-up transient still does
  not fit and is cut. (Detrending once with a line fitted to the second half was tried first;
  extrapolating that noisier line back to the start misplaced the cut.)
- Tie-breaking: past the warm-up the MSER curve is flat up to noise, and its plain minimum
  wanders into the steady part whenever a few batches happen to be noisy (in 1000 simulated runs
  the plain minimum placed a 20-step warm-up within ±5 steps ~77% of the time, this rule ~99.9%
  of the time). Like the "one standard error rule" of model
  selection, we take the *smallest* truncation whose MSER is within two standard errors of the
  minimum, treating MSER as a variance estimate with m - 2 degrees of freedom (m kept batches;
  relative SE sqrt(2/(m-2))). Any warm-up left in this way changes the steady mean by less than
  that mean's own noise, which is the trade-off MSER makes anyway.

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

from kubebench.numerics.stats import NAN

BATCH = 5
MIN_BATCHES_KEPT = 4  # a line through fewer batches leaves too few degrees of freedom to judge
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

    Non-finite values are dropped first. A series shorter than 25 steps is too short to detect a
    warm-up (a cut must leave 4 batches of 5 for the line): all of it counts as steady.
    Never raises for short or empty input.
    """
    x = np.asarray(series, dtype=float).ravel()
    x = x[np.isfinite(x)]
    warmup = mser5_truncation(x)
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
    """Warm-up length in steps by MSER-5 around a line (a multiple of 5; 0 when too short)."""
    batches = _batch_means(series)
    last = min(batches.size // 2, batches.size - MIN_BATCHES_KEPT)
    if last < 1:
        return 0
    scores = _line_mser_scores(batches)[: last + 1]
    best = int(np.argmin(scores))
    # The least truncation whose score is within SE_TOLERANCE standard errors of the best one;
    # the score is a variance estimate with (kept batches - 2) degrees of freedom.
    dof = batches.size - best - 2
    tolerance = scores[best] * (1 + SE_TOLERANCE * math.sqrt(2 / dof))
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
    means: np.ndarray = x[: k * BATCH].reshape(k, BATCH).mean(axis=1)
    return means


def _line_mser_scores(batches: np.ndarray) -> np.ndarray:
    """For every truncation d: residual sum of squares of a line fitted to batches[d:], / (k-d)^2.

    All fits at once from sums over the tails (reverse cumulative sums), after centring t and y
    so that the sums of squares do not cancel catastrophically.
    """
    k = batches.size
    t = np.arange(k, dtype=float) - (k - 1) / 2
    y = batches - batches.mean()

    def tail_sum(v: np.ndarray) -> np.ndarray:
        return np.cumsum(v[::-1])[::-1]

    m = tail_sum(np.ones(k))
    st, sy = tail_sum(t), tail_sum(y)
    stt = tail_sum(t * t) - st**2 / m
    sty = tail_sum(t * y) - st * sy / m
    syy = tail_sum(y * y) - sy**2 / m
    with np.errstate(divide="ignore", invalid="ignore"):
        ssr = np.where(stt > 0, syy - sty**2 / stt, 0.0)
    scores: np.ndarray = np.maximum(ssr, 0.0) / m**2
    return scores
