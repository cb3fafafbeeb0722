"""Change points of a series: where the level of a metric stepped, with magnitude and significance.

Pure: takes the repeat-level values of each point of a series (one point = one experiment's runs
of one trial, in time order) and returns where the level changed. No I/O.

How (method and its reasons in docs/history.md; figures from ``bench/changepoints.py``):

1. **Levels**: each point is summarized by a robust level and that level's variance
   (:mod:`.levels`): a biweight M-estimate of its runs, so a few slow runs and heavy tails do not move
   it; a variance of the wobble the experiments share (estimated from the series, pooled with the A/A
   noise floor when there is one) plus the runs' share; an outlying experiment held in. On a log scale
   when all values are positive, so that a step is relative (3% is 3% whatever the unit).
2. **Candidates** come from binary segmentation (ruptures' ``Binseg``, see below) of the levels with a
   weighted squared error (each level weighted by 1 / its variance: χ² units), a segment also cut
   twice at once where two cuts explain it better (circular binary segmentation: a regression fixed a
   few experiments later). A cut is kept while it lowers the cost by more than ``PENALTY`` × log(points)
   χ² units, as a BIC-like criterion would, widened as Student's t widens a z-test when the variance
   was estimated from few points (its Satterthwaite degrees of freedom).
3. **Confirmation**: each candidate is compared, with :func:`kubebench.analyse.compare.compare` (the
   same test, threshold and bootstrap CI as ``kubebench compare``), between the runs of the segment
   before it and those of the segment after it (at most ``CONFIRM_WINDOW`` points each side); a
   candidate whose verdict is not improved or regressed is dropped, the weakest first, and the others
   are compared again over the merged segments.
4. **Accepted changes** (``kubebench history accept``) split the series for good: nothing is compared
   across them, so later detections measure against the level after them.

Why ruptures' method, and why its loop is ours: Apache Otava (the maintained home of Hunter's
E-divisive) and MongoDB's signal-processing-algorithms both pin old NumPy/SciPy (``numpy==2.2.*`` and
``scipy<1.17``; ``numpy<2``), which would downgrade the NumPy and SciPy kubebench and PyTorch use, and
Otava brings BigQuery, Slack and Graphite clients. ruptures (maintained, NumPy 2 wheels) takes a custom
cost, which is what lets the levels and their variances drive the segmentation, but importing it
imports scipy.stats, scipy.signal and scipy.spatial: 1.5–2 s here, more than ``kubebench history`` may
take in all (< 1 s on 500 experiments × 20 trials). So :func:`binary_segmentation` is ruptures'
``Binseg`` loop written out (plus the two-cut step), and ``tests/analyse/test_changepoint.py`` runs
the real ruptures on seeded series and checks that both find the same breakpoints (two-cut step off).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # compare needs NumPy and SciPy: imported only when there is a candidate to confirm
    import numpy as np

    from ..rules import Goal
    from .compare import Comparison

#: Points on each side of a candidate that its comparison takes (up to the neighbouring changes): the
#: level just before and just after it, and a bootstrap of 2 × 100 runs instead of 2 × 1,000 on long series.
CONFIRM_WINDOW = 20

#: Widest bump (points) the two-cut step looks for: wider ones are found by single cuts (each of its
#: edges then splits long segments), and the search costs points × this, not points².
WIDEST_BUMP = 40

#: β of the penalty β · log(points), in units of a point's variance; chosen by simulation
#: (``bench/changepoints.py``): ≤ 5% of flat 40-point series report a change, in every scenario.
PENALTY = 3.0


@dataclass(frozen=True)
class Floor:
    """A series' A/A noise floor (``kubebench calibrate``): ``spread``, the largest relative difference
    between one A/A experiment's median and the median of the others' runs, over ``experiments`` A/A
    experiments of ``runs`` runs in all."""

    spread: float
    experiments: int = 2
    runs: int = 0


@dataclass(frozen=True)
class ChangePoint:
    """The level changed at point ``index`` (the first point at the new level)."""

    index: int
    #: the runs of the segment before (base) against those of the segment after (candidate)
    comparison: Comparison
    accepted: bool = False
    note: str = ""


def detect(points: Sequence[Sequence[float]], *, goal: Goal, threshold: float = 0.02, alpha: float = 0.05,
           accepted: Collection[int] = (), notes: dict[int, str] | None = None,
           penalty: float = PENALTY, floor: Floor | None = None) -> list[ChangePoint]:
    """The change points of a series of points (each the values of its repeats), in order.

    ``accepted``: indices of points where a change was accepted as intended: the series is cut
    there and they are reported (``accepted=True``) with their comparison. ``floor``: the trial's A/A
    noise floor, if it has one, pooled with the wobble between experiments the series itself shows.
    """
    values = [[v for v in p if math.isfinite(v)] for p in points]
    cuts = sorted({i for i in accepted if 0 < i < len(values)})
    bounds = [0, *cuts, len(values)]
    found: list[ChangePoint] = []
    for start, end in zip(bounds, bounds[1:]):
        found += _confirmed(values, start, end, goal, threshold, alpha, penalty, floor)
    if cuts:
        from .compare import compare
    for i, cut in enumerate(cuts):
        before = _pooled(values, max(bounds[i], cut - CONFIRM_WINDOW), cut)
        after = _pooled(values, cut, min(bounds[i + 2], cut + CONFIRM_WINDOW))
        found.append(ChangePoint(cut, compare(before, after, goal=goal, threshold=threshold, alpha=alpha),
                                 accepted=True, note=(notes or {}).get(cut, "")))
    return sorted(found, key=lambda c: c.index)


def _confirmed(values: list[list[float]], start: int, end: int, goal: Goal, threshold: float, alpha: float,
               penalty: float, floor: Floor | None) -> list[ChangePoint]:
    """Candidates of [start, end) that the comparison confirms (the weakest dropped first)."""
    candidates = candidates_of(values[start:end], penalty, floor)
    cuts = [start + c for c in candidates]
    if cuts:
        from .compare import compare
    while cuts:
        edges = [start, *cuts, end]
        compared = [compare(_pooled(values, max(edges[i], c - CONFIRM_WINDOW), c),
                            _pooled(values, c, min(edges[i + 2], c + CONFIRM_WINDOW)),
                            goal=goal, threshold=threshold, alpha=alpha) for i, c in enumerate(cuts)]
        weak = [(c.p_value if math.isfinite(c.p_value) else 2.0, i) for i, c in enumerate(compared)
                if c.verdict not in ("improved", "regressed")]
        if not weak:
            return [ChangePoint(cut, c) for cut, c in zip(cuts, compared)]
        del cuts[max(weak)[1]]
    return []


def candidates_of(points: Sequence[Sequence[float]], penalty: float = PENALTY, floor: Floor | None = None) -> list[int]:
    """Indices where binary segmentation over the points' robust levels splits the series (module docstring)."""
    usable = [p for p in points if p]
    if len(usable) < 2:
        return []
    from .levels import levels_of  # here: a series too short to split needs no NumPy

    positions = [i for i, p in enumerate(points) if p]
    found = levels_of(usable, floor)
    if not (found.variance > 0).all():
        return []
    pen = _penalty(penalty * math.log(len(usable)), found.dof)
    return [positions[b] for b in binary_segmentation(WeightedL2(found.level, 1 / found.variance), len(usable), pen)]


def _penalty(chi2: float, dof: float) -> float:
    """The penalty ``chi2`` (in units of a point's variance, known) for a variance estimated with ``dof``
    degrees of freedom: the square of Student's t quantile of the same tail probability as √chi2's."""
    if dof > 1e6 or not chi2 > 0:
        return chi2
    from ..numerics.stats import t_quantile

    tail = max(math.erfc(math.sqrt(chi2 / 2)) / 2, 1e-15)  # P(Z > √chi2), where t's quantile is still exact
    return max(chi2, t_quantile(max(1, round(dof)), 1 - tail) ** 2)


def binary_segmentation(cost: "WeightedL2", n: int, pen: float, circular: bool = True) -> list[int]:
    """Breakpoints of [0, n) by greedy binary segmentation: split where the cost falls most, while it
    falls by more than ``pen`` a cut (ruptures' ``Binseg(min_size=1, jump=1).predict(pen=…)``, same ties,
    when not ``circular``).

    ``circular``: a segment may also be cut twice at once, where two cuts lower its cost by more than
    2 ``pen`` and more than one cut would (circular binary segmentation, Olshen et al. 2004): a
    regression fixed a few experiments later is a bump that no single cut explains well.
    Ours rather than ruptures' own loop: importing ruptures imports scipy.stats, scipy.signal and
    scipy.spatial (1.5–2 s here), longer than ``kubebench history`` may take in all; a test checks
    that both give the same breakpoints on seeded series.
    """
    best: dict[tuple[int, int], tuple[float, list[int]]] = {}

    def split(start: int, end: int) -> tuple[float, list[int]]:
        if (start, end) not in best:
            fall, at = cost.best_split(start, end)
            found = (fall - pen, [at])
            if circular:
                fall, pair = cost.best_pair(start, end)
                found = max(found, (fall - 2 * pen, pair))
            best[(start, end)] = found
        return best[(start, end)]

    breakpoints = [n]
    while True:
        edges = [0, *breakpoints]
        gain, at = max(split(a, b) for a, b in zip(edges, edges[1:]))
        if at[0] < 0 or not gain > 0:
            return breakpoints[:-1]
        breakpoints = sorted([*breakpoints, *at])


def _pooled(values: list[list[float]], start: int, end: int) -> list[float]:
    return [v for p in values[start:end] for v in p]


class WeightedL2:
    """Cost (ruptures' interface): Σ wᵢ (levelᵢ − their weighted mean)² of points [start, end), in units of
    χ² when each weight is 1 / the variance of its level. Prefix sums make each segment's cost O(1)."""

    model = "weighted-l2"
    min_size = 1

    def __init__(self, level: Sequence[float] | np.ndarray, weight: Sequence[float] | np.ndarray) -> None:
        import numpy as np

        level, weight = np.asarray(level, dtype=float), np.asarray(weight, dtype=float)
        # centred first: sums of squares of large values around a small spread would cancel
        centred = level - float(np.average(level, weights=weight)) if level.size else level
        self._w, self._s, self._s2 = (np.concatenate(([0.0], np.cumsum(per)))
                                      for per in (weight, weight * centred, weight * centred * centred))

    def fit(self, signal: np.ndarray) -> "WeightedL2":
        self.signal = signal.reshape(-1, 1) if signal.ndim == 1 else signal
        return self

    def error(self, start: int, end: int) -> float:
        w = self._w[end] - self._w[start]
        s = self._s[end] - self._s[start]
        return max(0.0, float((self._s2[end] - self._s2[start]) - s * s / w)) if w > 0 else 0.0

    def best_split(self, start: int, end: int) -> tuple[float, int]:
        """(largest fall of the cost when [start, end) is cut in two, where): every cut at once, in NumPy;
        of equal falls the last, as ``max`` over (fall, cut) pairs picks; (0, -1) when it cannot be cut."""
        import numpy as np

        cuts = np.arange(start + 1, end)
        if not cuts.size:
            return 0.0, -1
        w, s, s2 = self._w, self._s, self._s2
        left = np.maximum(0.0, (s2[cuts] - s2[start]) - (s[cuts] - s[start]) ** 2 / (w[cuts] - w[start]))
        right = np.maximum(0.0, (s2[end] - s2[cuts]) - (s[end] - s[cuts]) ** 2 / (w[end] - w[cuts]))
        falls = self.error(start, end) - left - right
        last = falls.size - 1 - int(np.argmax(falls[::-1]))
        return float(falls[last]), int(cuts[last])

    def best_pair(self, start: int, end: int, widest: int = WIDEST_BUMP) -> tuple[float, list[int]]:
        """(largest fall of the cost when [start, end) is cut at i < j, j − i ≤ ``widest``, [i, j]); (0, [-1])
        when it cannot be. The rest, [start, i) and [j, end), is taken around one mean, as circular binary
        segmentation compares a bump with what surrounds it."""
        import numpy as np

        m = end - start
        if m < 3:
            return 0.0, [-1]
        w, s, s2 = self._w[start:end + 1], self._s[start:end + 1], self._s2[start:end + 1]
        whole = self.error(start, end)
        best = (-math.inf, -1, -1)
        for width in range(1, min(widest, m - 2) + 1):  # bumps [i, i + width) with 0 < i and i + width < m
            lo, hi = slice(1, m - width), slice(1 + width, m)
            aw, a, a2 = w[hi] - w[lo], s[hi] - s[lo], s2[hi] - s2[lo]
            rw, r, r2 = w[-1] - aw, s[-1] - a, s2[-1] - a2
            with np.errstate(divide="ignore", invalid="ignore"):
                falls = whole - np.maximum(a2 - a * a / aw, 0) - np.maximum(r2 - r * r / rw, 0)
            falls = np.where(np.isfinite(falls), falls, -np.inf)
            at = int(np.argmax(falls))
            if falls[at] > best[0]:
                best = (float(falls[at]), start + 1 + at, start + 1 + at + width)
        return (best[0], [best[1], best[2]]) if best[1] > 0 else (0.0, [-1])

    def sum_of_costs(self, bkps: Sequence[int]) -> float:
        edges = [0, *bkps]
        return sum(self.error(a, b) for a, b in zip(edges, edges[1:]))
