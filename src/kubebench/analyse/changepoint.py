"""Change points of a series: where the level of a metric stepped, with magnitude and significance.

Pure: takes the repeat-level values of each point of a series (one point = one experiment's runs
of one trial, in time order) and returns where the level changed. No I/O.

How (library choice and method, see docs/history.md):

1. **Candidates** come from binary segmentation (ruptures' ``Binseg``, see below) with a cost written for our data:
   the squared error of every *run* around its segment's mean, where segments may only start at a
   point (an experiment), so a point's repeats are never split and points of any repeat count mix.
   Values are taken on a log scale when all are positive, so that a step is relative (3% is 3%
   whatever the metric's unit). A split is kept while it lowers the cost by more than a penalty of
   ``PENALTY`` × log(points) × the noise of a point, as a BIC-like criterion would.
2. **The noise of a point** is the larger of what the repeats say (pooled within-point variance / runs
   per point) and what the points say (the median absolute difference between consecutive points'
   means, robust to the steps themselves): runs of one experiment often share a machine's mood, and
   the within-point variance alone would then see every day-to-day wobble as a change.
3. **Confirmation**: each candidate is compared, with :func:`kubebench.analyse.compare.compare` (the
   same test, threshold and bootstrap CI as ``kubebench compare``), between the runs of the segment
   before it and those of the segment after it (at most ``CONFIRM_WINDOW`` points each side); a
   candidate whose verdict is not improved or regressed is dropped, the weakest first, and the others are compared again over the merged segments.
4. **Accepted changes** (``kubebench history accept``) split the series for good: nothing is compared
   across them, so later detections measure against the level after them.

Why ruptures' method, and why its loop is ours: Apache Otava (the maintained home of Hunter's
E-divisive) and MongoDB's signal-processing-algorithms both pin old NumPy/SciPy (``numpy==2.2.*`` and
``scipy<1.17``; ``numpy<2``), which would downgrade the NumPy and SciPy kubebench and PyTorch use, and
Otava brings BigQuery, Slack and Graphite clients. ruptures (maintained, NumPy 2 wheels) takes a custom
cost, which is what lets the repeats drive the segmentation, but importing it imports scipy.stats,
scipy.signal and scipy.spatial: 1.5–2 s here, more than ``kubebench history`` may take in all
(< 1 s on 500 experiments × 20 trials). So :func:`binary_segmentation` is ruptures' ``Binseg`` loop
written out (20 lines), and ``tests/analyse/test_changepoint.py`` runs the real ruptures on seeded
series and checks that both find the same breakpoints. The penalty was chosen by simulation
(``bench/history_detection.py``).
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

#: β of the penalty β · log(points) · noise; chosen by simulation: ≤ 5% of flat 40-point series
#: report a change, ≥ 90% of 3% steps (CV 2%, 5 runs per point) are found within ±1 point.
PENALTY = 3.0


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
           penalty: float = PENALTY) -> list[ChangePoint]:
    """The change points of a series of points (each the values of its repeats), in order.

    ``accepted``: indices of points where a change was accepted as intended: the series is cut
    there and they are reported (``accepted=True``) with their comparison.
    """
    values = [[v for v in p if math.isfinite(v)] for p in points]
    cuts = sorted({i for i in accepted if 0 < i < len(values)})
    bounds = [0, *cuts, len(values)]
    found: list[ChangePoint] = []
    for start, end in zip(bounds, bounds[1:]):
        found += _confirmed(values, start, end, goal, threshold, alpha, penalty)
    if cuts:
        from .compare import compare
    for i, cut in enumerate(cuts):
        before = _pooled(values, max(bounds[i], cut - CONFIRM_WINDOW), cut)
        after = _pooled(values, cut, min(bounds[i + 2], cut + CONFIRM_WINDOW))
        found.append(ChangePoint(cut, compare(before, after, goal=goal, threshold=threshold, alpha=alpha),
                                 accepted=True, note=(notes or {}).get(cut, "")))
    return sorted(found, key=lambda c: c.index)


def _confirmed(values: list[list[float]], start: int, end: int, goal: Goal, threshold: float, alpha: float,
               penalty: float) -> list[ChangePoint]:
    """Candidates of [start, end) that the comparison confirms (the weakest dropped first)."""
    candidates = candidates_of(values[start:end], penalty)
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


def candidates_of(points: Sequence[Sequence[float]], penalty: float = PENALTY) -> list[int]:
    """Indices where binary segmentation over the repeats splits the series (see the module docstring)."""
    usable = [p for p in points if p]
    if len(usable) < 2:
        return []
    import numpy as np  # here: a series too short to split needs no NumPy

    positions = [i for i, p in enumerate(points) if p]
    flat, sizes = _flatten(usable)
    if (flat > 0).all():
        flat = np.log(flat)
    noise = _noise(flat, sizes)
    if not noise > 0:
        return []
    pen = penalty * math.log(len(usable)) * float(sizes.mean()) * noise
    return [positions[b] for b in binary_segmentation(GroupedL2.of(flat, sizes), len(usable), pen)]


def binary_segmentation(cost: "GroupedL2", n: int, pen: float) -> list[int]:
    """Breakpoints of [0, n) by greedy binary segmentation: split where the cost falls most, while it
    falls by more than ``pen`` (ruptures' ``Binseg(min_size=1, jump=1).predict(pen=…)``, same ties).

    Ours rather than ruptures' own loop: importing ruptures imports scipy.stats, scipy.signal and
    scipy.spatial (1.5–2 s here), longer than ``kubebench history`` may take in all; a test checks
    that both give the same breakpoints on seeded series.
    """
    best: dict[tuple[int, int], tuple[float, int]] = {}

    def split(start: int, end: int) -> tuple[float, int]:
        if (start, end) not in best:
            best[(start, end)] = cost.best_split(start, end)
        return best[(start, end)]

    breakpoints = [n]
    while True:
        edges = [0, *breakpoints]
        gain, at = max(split(a, b) for a, b in zip(edges, edges[1:]))
        if at < 0 or not gain > pen:
            return breakpoints[:-1]
        breakpoints = sorted([*breakpoints, at])


def point_noise(points: Sequence[Sequence[float]]) -> float:
    """Variance of one point's mean: within-point variance / repeats, or the points' own scatter if larger.

    Points without values are skipped (as :func:`candidates_of` does): they would count as points of no runs.
    """
    return _noise(*_flatten([p for p in points if p]))


def _flatten(points: Sequence[Sequence[float]]) -> tuple[np.ndarray, np.ndarray]:
    """(every value in one array, the number of values of each point) of non-empty points."""
    import numpy as np

    sizes = np.fromiter((len(p) for p in points), dtype=np.intp, count=len(points))
    return np.fromiter((v for p in points for v in p), dtype=float, count=int(sizes.sum())), sizes


def _noise(flat: np.ndarray, sizes: np.ndarray) -> float:
    import numpy as np

    owner = np.repeat(np.arange(sizes.size), sizes)
    means = np.bincount(owner, flat, sizes.size) / sizes
    within_df = int(sizes.sum()) - sizes.size
    within = float(((flat - means[owner]) ** 2).sum()) / within_df / float(sizes.mean()) if within_df else 0.0
    if means.size < 4:
        return within
    mad = float(np.median(np.abs(np.diff(means))))
    between = (mad / 0.6744897501960817) ** 2 / 2  # |a − b| of two N(μ, v) has median 0.674·√(2v)
    return max(within, between)


def _pooled(values: list[list[float]], start: int, end: int) -> list[float]:
    return [v for p in values[start:end] for v in p]


class GroupedL2:
    """Cost (ruptures' interface): squared error of every run of points [start, end) around their mean.

    Prefix sums make each segment's cost O(1), whatever the repeats per point.
    """

    model = "grouped-l2"
    min_size = 1

    def __init__(self, points: Sequence[Sequence[float]]) -> None:
        self._prefix(*_flatten(points))

    @classmethod
    def of(cls, flat: np.ndarray, sizes: np.ndarray) -> "GroupedL2":
        """The cost of points given as every value in one array and the number of values of each."""
        cost = cls.__new__(cls)
        cost._prefix(flat, sizes)
        return cost

    def _prefix(self, flat: np.ndarray, sizes: np.ndarray) -> None:
        import numpy as np

        owner = np.repeat(np.arange(sizes.size), sizes)
        # centred first: sums of squares of large values around a small spread would cancel
        centred = flat - math.fsum(flat) / flat.size
        self._n, self._s, self._s2 = (np.concatenate(([0.0], np.cumsum(per))) for per in (
            sizes.astype(float), np.bincount(owner, centred, sizes.size), np.bincount(owner, centred * centred, sizes.size)))

    def fit(self, signal: np.ndarray) -> "GroupedL2":
        self.signal = signal.reshape(-1, 1) if signal.ndim == 1 else signal
        return self

    def error(self, start: int, end: int) -> float:
        n = self._n[end] - self._n[start]
        s = self._s[end] - self._s[start]
        return max(0.0, float((self._s2[end] - self._s2[start]) - s * s / n))

    def best_split(self, start: int, end: int) -> tuple[float, int]:
        """(largest fall of the cost when [start, end) is cut in two, where): every cut at once, in NumPy;
        of equal falls the last, as ``max`` over (fall, cut) pairs picks; (0, -1) when it cannot be cut."""
        import numpy as np

        cuts = np.arange(start + 1, end)
        if not cuts.size:
            return 0.0, -1
        n, s, s2 = self._n, self._s, self._s2
        left = np.maximum(0.0, (s2[cuts] - s2[start]) - (s[cuts] - s[start]) ** 2 / (n[cuts] - n[start]))
        right = np.maximum(0.0, (s2[end] - s2[cuts]) - (s[end] - s[cuts]) ** 2 / (n[end] - n[cuts]))
        falls = self.error(start, end) - left - right
        last = falls.size - 1 - int(np.argmax(falls[::-1]))
        return float(falls[last]), int(cuts[last])

    def sum_of_costs(self, bkps: Sequence[int]) -> float:
        edges = [0, *bkps]
        return sum(self.error(a, b) for a, b in zip(edges, edges[1:]))

