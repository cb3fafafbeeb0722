"""The level of each point of a series (one experiment's runs) and how much it wanders, robustly.

Pure, NumPy only. What :mod:`.changepoint` segments is not the runs but each point's **level**, with the
variance of that level, in the two layers that benchmark data has:

    run j of point i  =  level of i's segment  +  wobble of point i  +  noise of run j

- **The runs' noise** (run to run) may be heavy-tailed and hold outliers (a run slowed by a noisy
  neighbour). Its scale ``s`` is the median of every within-point difference of two runs, pooled over
  the series (40 experiments × 5 runs give 400 differences; a point's wobble cancels in them). Each
  point's level is Tukey's biweight M-estimate of its runs with that scale: a run beyond 4.7 ``s``
  (a 10–30% slow run at a CV of 2%) has no weight at all, and on Gaussian noise the estimate is 95% as
  precise as the mean. Its variance is the M-estimator's sandwich variance / the point's runs.
- **The wobble** (the machine's day: every run of one experiment shares it) is what the repeats cannot
  see. Its variance w² is what the consecutive differences of the levels show beyond the runs' share:
  the w² with which their standardized squares have χ²₁'s median, then (as precise as a mean) χ²₁'s
  mean below 9, those beyond 3 standard deviations left out (they straddle a step). Where the series
  has an A/A noise floor (``kubebench calibrate``), the w² it implies is pooled with the series' own,
  each weighted by its degrees of freedom.
- **An outlying experiment** (most of its runs slowed, or 1 or 2 runs that cannot outvote a slow one)
  is held within 3 standard deviations of the running median of the 5 points around it, the newest
  excepted (see :func:`clipped`).

Each point's variance is then w² + its runs' share, with Satterthwaite's degrees of freedom, which the
change-point penalty takes into account. Values are taken on a log scale when all are positive, so
that a difference of levels is relative.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .changepoint import Floor

#: Tukey's biweight constant in units of the runs' scale: 95% as efficient as the mean on Gaussian noise.
BIWEIGHT_K = 4.685
#: median of |X − Y| for X, Y independent N(0, 1): √2 × Φ⁻¹(0.75)
_PAIR_MEDIAN = math.sqrt(2) * 0.6744897501960817
#: points around each (itself in the middle) whose median it is compared with, and how many of its
#: standard deviations it may lie from that median before it is pulled in (an outlying experiment)
RUNNING, CLIP = 5, 3.0
#: standardized squared difference of consecutive levels beyond which it is left out of the wobble's
#: precise estimate (it straddles a step, or an outlying point): 3 standard deviations
CUT = 9.0
#: median of χ²₁
_CHI2_MEDIAN = 0.454936423119572


#: E[spread²] / one A/A experiment's variance, for k A/A experiments (``bench/changepoints.py`` simulates
#: it: spread = the largest |median of one / median of the others' runs − 1|, noise.spread's definition)
_SPREAD_SQUARED = {2: 2.0, 3: 2.7, 4: 3.3, 5: 3.5, 6: 3.7, 7: 3.9, 8: 4.1, 9: 4.2, 10: 4.3}


@dataclass(frozen=True)
class Levels:
    """Each non-empty point's level and that level's variance, and the noise they were built from."""

    level: np.ndarray
    variance: np.ndarray
    runs: np.ndarray
    #: robust scale of the runs around their point's level (``s``)
    scale: float
    #: variance of the points' shared offsets (the wobble), beyond what their runs explain
    wobble: float
    log: bool
    #: degrees of freedom of the typical point's variance (Satterthwaite's, of the wobble's and the runs' shares)
    dof: float


def flatten(points: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """(every value in one array, the number of values of each point) of non-empty points."""
    sizes = np.fromiter((len(p) for p in points), dtype=np.intp, count=len(points))
    return np.fromiter((v for p in points for v in p), dtype=float, count=int(sizes.sum())), sizes


def levels_of(points: Sequence[Sequence[float]], floor: Floor | None = None) -> Levels:
    """The robust levels of non-empty ``points`` (see the module docstring); ``floor``: the series'
    A/A noise floor (``kubebench calibrate``), if any, pooled with the series' own wobble estimate."""
    flat, sizes = flatten(points)
    log = bool(flat.size) and bool((flat > 0).all())
    if log:
        flat = np.log(flat)
    owner = np.repeat(np.arange(sizes.size), sizes)
    scale = run_scale(flat, sizes)
    level, tau2 = point_levels(flat, sizes, owner, scale)
    runs_share = tau2 / sizes
    own_dof = max((sizes.size - 1) * 2 / 3, 1.0) if sizes.size >= 4 else 0.0
    measured = _floor_wobble(floor, log, level, tau2)
    wobble = _pooled(wobble_of(level, runs_share, reweighted=False), own_dof, measured)
    level = clipped(level, wobble + runs_share)
    wobble = _pooled(wobble_of(level, runs_share), own_dof, measured)
    wobble_dof = own_dof + (measured[1] if measured else 0.0)
    return Levels(level, wobble + runs_share, sizes, scale, wobble, log, _dof(wobble, wobble_dof, runs_share, sizes))


def _pooled(own: float, own_dof: float, measured: tuple[float, float] | None) -> float:
    """The series' own wobble estimate and the A/A floor's, weighted by their degrees of freedom."""
    if measured is None or own_dof + measured[1] <= 0:
        return own
    return (own * own_dof + measured[0] * measured[1]) / (own_dof + measured[1])


def clipped(level: np.ndarray, variance: np.ndarray, window: int = RUNNING, limit: float = CLIP) -> np.ndarray:
    """The levels, each but the newest at most ``limit`` standard deviations from the median of the
    ``window`` points around it (fewer at the ends): an outlying experiment (one whose runs were mostly
    slowed, or a point of 1 or 2 runs, whose runs cannot outvote a slow one) is pulled in, a step is not
    (a running median keeps a step and drops an impulse narrower than half its window). The newest
    ``window // 2`` have fewer neighbours after them than before: a running median there would take a
    fresh step for an outlier (on e0–e4 with a step at e3 it pulled e3 halfway back), so they are kept as
    they are: a change there is reported when seen, and gone when later experiments return to the old
    level (it is then a bump that two cuts would have to pay for)."""
    if level.size < window:
        return level
    half = window // 2
    around = np.empty(level.size)
    around[half:-half] = np.median(np.lib.stride_tricks.sliding_window_view(level, window), axis=1)
    for i in (*range(half), *range(level.size - half, level.size)):  # the ends: fewer points around
        around[i] = np.median(level[max(0, i - half):i + half + 1])
    sd = np.sqrt(variance)
    held = around + np.clip(level - around, -limit * sd, limit * sd)
    held[-half:] = level[-half:]
    return held


def run_scale(flat: np.ndarray, sizes: np.ndarray) -> float:
    """Robust standard deviation of the runs: median |difference| of two runs of one point / (√2 Φ⁻¹(¾)).

    Differences within a point: its wobble cancels, and no level has to be estimated first (a point
    of 2 runs has 1 difference, one of 5 has 10). 0 when no point has two runs.
    """
    diffs = []
    ends = np.cumsum(sizes)
    for size in np.unique(sizes):
        if size < 2:
            continue
        rows = np.flatnonzero(sizes == size)
        block = flat[(ends[rows] - size)[:, None] + np.arange(size)]
        upper = np.triu_indices(int(size), 1)
        diffs.append(np.abs(block[:, upper[0]] - block[:, upper[1]]).ravel())
    if not diffs:
        return 0.0
    return float(np.median(np.concatenate(diffs))) / _PAIR_MEDIAN


def point_levels(flat: np.ndarray, sizes: np.ndarray, owner: np.ndarray, scale: float,
                 k: float = BIWEIGHT_K) -> tuple[np.ndarray, float]:
    """(each point's biweight M-estimate of location with the runs' ``scale``, its variance per run).

    Tukey's biweight: a run's weight falls with its distance from the level and is 0 beyond ``k``
    scales, so a slow run (10–30% at a CV of 2%) does not count at all. Started from each point's
    median (from where the runs of the majority pull the level to their own), iterated by reweighted
    means (until settled, 20 rounds at most); a point whose runs are all beyond ``k`` of its median
    keeps the median. The variance per run is the sandwich s² · E ψ² / (E ψ')² over every run's
    residual, E ψ² taken with runs − points degrees of freedom (each point's level is fitted).
    """
    level = grouped_median(flat, sizes)
    if not scale > 0:
        means = np.bincount(owner, flat, sizes.size) / sizes
        within = int(sizes.sum()) - sizes.size
        var = float(((flat - means[owner]) ** 2).sum()) / within if within else 0.0
        return means, var
    for _ in range(20):
        u = (flat - level[owner]) / (k * scale)
        weight = np.where(np.abs(u) < 1, (1 - u * u) ** 2, 0.0)
        total = np.bincount(owner, weight, sizes.size)
        moved = np.bincount(owner, weight * flat, sizes.size)
        level, before = np.where(total > 0, moved / np.where(total > 0, total, 1.0), level), level
        if np.max(np.abs(level - before)) < 1e-7 * scale:  # settled (within a few rounds, most often)
            break
    u = (flat - level[owner]) / (k * scale)
    inside = np.abs(u) < 1
    psi = np.where(inside, k * u * (1 - u * u) ** 2, 0.0)  # in units of the scale
    slope = np.where(inside, (1 - u * u) * (1 - 5 * u * u), 0.0)
    dof = int(sizes.sum()) - sizes.size
    several = sizes[owner] > 1
    if dof <= 0 or not several.any():
        return level, scale * scale
    e_slope = max(float(slope[several].mean()), 0.5)
    return level, scale * scale * float((psi * psi).sum()) / dof / e_slope**2


def grouped_median(flat: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The median of each point's values (points of equal size at once)."""
    out = np.empty(sizes.size)
    ends = np.cumsum(sizes)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        out[rows] = np.median(flat[(ends[rows] - size)[:, None] + np.arange(size)], axis=1)
    return out


def wobble_of(level: np.ndarray, runs_share: np.ndarray, reweighted: bool = True) -> float:
    """Variance of the points' shared offsets: the w² ≥ 0 with which the consecutive differences d of the
    levels, each squared and divided by its variance 2 w² + the runs' share of both points (z²), have the
    median of χ²₁ (robust to half of them straddling steps or outlying points, but imprecise); then, if
    ``reweighted``, the w² with which those of them below ``CUT`` at that w² have the mean of χ²₁ below
    ``CUT`` (as precise as a mean, without the differences that straddle a step), a few rounds from the
    first. 0 with fewer than 4 points."""
    if level.size < 4:
        return 0.0
    d2 = np.diff(level) ** 2
    runs = runs_share[1:] + runs_share[:-1] + 1e-300
    if np.ptp(runs) <= 1e-9 * runs[0]:  # points of equal runs: both equations solve in closed form
        return _equal_runs_wobble(d2, float(runs[0]), reweighted)
    first = _solve(partial(_median_excess, d2, runs), float(np.max(d2)))
    if not reweighted:
        return first
    expected = _chi2_truncated_mean(CUT)
    w2, kept = first, None
    for _ in range(5):  # the differences kept depend on w², w² on them: a few rounds settle both
        now = d2 / (2 * w2 + runs) < CUT
        if kept is not None and np.array_equal(now, kept):
            break
        kept = now
        w2 = _solve(partial(_truncated_excess, d2[kept], runs[kept], expected), float(np.max(d2)))
    return w2


def _equal_runs_wobble(d2: np.ndarray, runs: float, reweighted: bool) -> float:
    """:func:`wobble_of` where every difference's runs' share is ``runs``: median(d²) / (2 w² + runs) = χ²₁'s
    median, then mean(d² kept) / (2 w² + runs) = χ²₁'s mean below ``CUT``."""
    w2 = max(0.0, (float(np.median(d2)) / _CHI2_MEDIAN - runs) / 2)
    if not reweighted:
        return w2
    expected, kept = _chi2_truncated_mean(CUT), None
    for _ in range(5):
        now = d2 / (2 * w2 + runs) < CUT
        if kept is not None and np.array_equal(now, kept):
            break
        kept = now
        w2 = max(0.0, (float(d2[kept].mean()) / expected - runs) / 2)
    return w2


def _median_excess(d2: np.ndarray, runs: np.ndarray, w2: float) -> float:
    z2 = d2 / (2 * w2 + runs)
    half = z2.size // 2  # the median by partition: np.median's checks cost more than the bisection's sums
    low = np.partition(z2, [half - 1, half] if z2.size % 2 == 0 else half)
    median = (low[half - 1] + low[half]) / 2 if z2.size % 2 == 0 else low[half]
    return float(median) - _CHI2_MEDIAN


def _truncated_excess(d2: np.ndarray, runs: np.ndarray, expected: float, w2: float) -> float:
    return float((d2 / (2 * w2 + runs)).mean()) - expected


def _solve(excess: Callable[[float], float], high: float) -> float:
    """The w² ≥ 0 where the decreasing ``excess`` crosses 0 (bisection); 0 when it is not positive at 0."""
    if excess(0.0) <= 0:
        return 0.0
    high += 1e-300
    while excess(high) > 0:
        high *= 2
    low = 0.0
    for _ in range(40):  # to 1e-12 of the bracket: far below what the noise's estimate can tell
        mid = (low + high) / 2
        low, high = (mid, high) if excess(mid) > 0 else (low, mid)
    return high


def _dof(wobble: float, wobble_dof: float, runs_share: np.ndarray, sizes: np.ndarray) -> float:
    """Satterthwaite's degrees of freedom of w² + r (a typical point's variance): r from the runs' residuals
    (runs − points), w² from ``wobble_dof`` (n − 1 consecutive differences, an MA(1), have the precision of
    2/3 as many independent values; plus the A/A floor's)."""
    runs = float(np.median(runs_share))
    runs_dof = max(int(sizes.sum()) - sizes.size, 1)
    spread = (wobble * wobble / wobble_dof if wobble_dof > 0 else 0.0) + runs * runs / runs_dof
    return (wobble + runs) ** 2 / spread if spread > 0 else math.inf


def _chi2_truncated_mean(q: float) -> float:
    """E[X | X < q] for X ~ χ²₁: P(χ²₃ < q) / P(χ²₁ < q) (x f₁(x) = f₃(x))."""
    below = math.erf(math.sqrt(q / 2))
    return (below - math.sqrt(2 * q / math.pi) * math.exp(-q / 2)) / below


def _floor_wobble(floor: Floor | None, log: bool, level: np.ndarray, tau2: float) -> tuple[float, float] | None:
    """(the wobble variance the A/A floor implies, its degrees of freedom), None without a floor.

    The floor is the largest of k A/A experiments' relative differences from the others' median: its
    square is about ``_SPREAD_SQUARED[k]`` times one experiment's variance (simulated, 4,000 seeds), of
    which the runs' share is τ² / (their runs per experiment). k − 1 degrees of freedom.
    """
    if floor is None or not floor.spread > 0 or floor.experiments < 2:
        return None
    k = floor.experiments
    spread = math.log1p(floor.spread) if log else floor.spread * abs(float(np.median(level)))
    factor = _SPREAD_SQUARED.get(k) or 2 * math.log(k) - 0.3
    runs = tau2 / max(floor.runs / k, 1.0) if floor.runs else 0.0
    return max(0.0, spread * spread / factor - runs), float(k - 1)
