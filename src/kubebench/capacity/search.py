"""Capacity under an SLO (pure): which probes to run next, and the answer with its interval.

For every point of the sweep, a bisection over the search parameter: ``low`` is probed (it must meet
the SLO, else the capacity is below the range), ``high`` is probed (it must fail, else the capacity
is above it), then the middle of the bracket (geometric on a log scale) until the bracket is within
the resolution. Each probe is repeated until every bounded metric's confidence interval lies on one
side of its bound, so a probe costs runs only while its verdict is in doubt. The interval is the
sequential one of :mod:`kubebench.numerics.sequential` (repeated over the probe's looks, ``min`` to
``max`` runs): the verdict keeps its error rate whatever run it stops at, where a plain CI looked at
after every run would not.

The search is replayed from the runs done so far at every step, so a killed search resumes where it
stopped, and the same runs always give the same next probe.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from ..numerics.sequential import Design, interval
from ..numerics.stats import summarize
from ..spec.model import CapacitySearch

Verdict = Literal["meets", "fails", "undecided"]
Status = Literal["found", "below range", "above range", "searching"]


def _bounds(search: CapacitySearch) -> dict[str, float]:
    """The SLO's bounds: the model's validator has turned each one (``2s``, ``100ms``) into a float."""
    return cast(dict[str, float], search.slo)


@dataclass(frozen=True)
class Probe:
    """What is known of one value of the parameter: each bounded metric's values, and runs done."""

    x: float
    values: Mapping[str, Sequence[float]]
    runs: int

    def verdict(self, search: CapacitySearch) -> tuple[Verdict, str]:
        """``meets``/``fails`` once every repeated CI is on one side of its bound (or at ``max`` runs,
        by the means); ``undecided`` while more runs may tell; and why, with the runs it took."""
        decided_all, reasons = True, []
        design = Design(search.min, search.max)
        taken = f"after {self.runs} run{'s' * (self.runs != 1)}, sequential"
        for metric, bound in _bounds(search).items():
            values = [v for v in self.values.get(metric, ()) if math.isfinite(v)]
            if len(values) < search.min:
                decided_all = False
                continue
            low, high = interval(values, design, search.confidence)
            mean = sum(values) / len(values)
            if low > bound:
                return "fails", f"{metric} {mean:.4g} > {bound:g} (CI {low:.4g}…{high:.4g}; {taken})"
            if not high <= bound:
                decided_all = False
            reasons.append(f"{metric} {mean:.4g} ≤ {bound:g}")
        if decided_all:
            return "meets", ", ".join(reasons) + f" ({taken})"
        if self.runs < search.max:
            return "undecided", "needs more runs"
        return _by_means(self, search)


def _by_means(probe: Probe, search: CapacitySearch) -> tuple[Verdict, str]:
    for metric, bound in _bounds(search).items():
        values = [v for v in probe.values.get(metric, ()) if math.isfinite(v)]
        if len(values) < 1:
            return "fails", f"no value of {metric} in {probe.runs} runs"
        mean = sum(values) / len(values)
        if mean > bound:
            return "fails", f"{metric} mean {mean:.4g} > {bound:g} after {probe.runs} runs (CI undecided)"
    return "meets", f"means within the SLO after {probe.runs} runs (CI undecided)"


@dataclass(frozen=True)
class Capacity:
    """The answer for one point: the bracket the capacity lies in, an estimate inside it with its
    interval, how it ended, and what it cost."""

    point: dict
    status: Status
    meets: float | None
    fails: float | None
    estimate: float | None
    ci: tuple[float, float] | None
    probes: int
    runs: int
    steps: list[tuple[float, str, str]] = field(default_factory=list)


def midpoint(search: CapacitySearch, low: float, high: float) -> float:
    """The next value between ``low`` and ``high`` (geometric on a log scale), rounded for display."""
    x = math.sqrt(low * high) if search.scale == "log" else (low + high) / 2
    return float(round(x)) if search.integer else float(f"{x:.4g}")


def narrow_enough(search: CapacitySearch, low: float, high: float) -> bool:
    """The bracket is within the resolution (for integers: adjacent)."""
    if search.integer:
        return high - low <= 1
    return high - low <= search.resolution * low


def walk(search: CapacitySearch, probes: Mapping[float, Probe]) -> tuple[float | None, Capacity]:
    """Replay the bisection over ``probes``: the next value to run (None when done) and the answer so far."""
    steps: list[tuple[float, str, str]] = []

    def judge(x: float) -> tuple[Verdict, str] | None:
        probe = probes.get(x)
        if probe is None or probe.runs == 0:
            return None
        verdict = probe.verdict(search)
        steps.append((x, verdict[0], verdict[1]))
        return verdict

    def answer(status: Status, meets: float | None, fails: float | None) -> Capacity:
        estimate, ci = estimate_crossing(search, probes, meets, fails)
        return Capacity({}, status, meets, fails, estimate, ci, len(probes), sum(p.runs for p in probes.values()),
                        steps)

    low, high = float(search.low), float(search.high)
    for x, needed in ((low, "meets"), (high, "fails")):
        verdict = judge(x)
        if verdict is None or verdict[0] == "undecided":
            return x, answer("searching", None, None)
        if verdict[0] != needed:
            return None, answer("below range" if x == low else "above range",
                                None if x == low else high, low if x == low else None)
    while not narrow_enough(search, low, high):
        x = midpoint(search, low, high)
        if x in (low, high):
            break
        verdict = judge(x)
        if verdict is None or verdict[0] == "undecided":
            return x, answer("searching", low, high)
        low, high = (x, high) if verdict[0] == "meets" else (low, x)
    return None, answer("found", low, high)


def estimate_crossing(search: CapacitySearch, probes: Mapping[float, Probe], meets: float | None,
                      fails: float | None) -> tuple[float | None, tuple[float, float] | None]:
    """Where the binding metric crosses its bound between the last probe that met the SLO and the
    first that failed (linear between the two), and where its CI's ends cross it: the capacity's
    estimate and interval. None outside a bracket."""
    if meets is None or fails is None or meets not in probes or fails not in probes:
        return None, None
    estimates, lows, highs = [], [], []
    for metric, bound in _bounds(search).items():
        a = summarize(list(probes[meets].values.get(metric, ())), confidence=search.confidence)
        b = summarize(list(probes[fails].values.get(metric, ())), confidence=search.confidence)
        if a.n == 0 or b.n == 0:
            continue
        estimates.append(_cross(meets, fails, a.mean, b.mean, bound))
        lows.append(_cross(meets, fails, _or(a.ci_high, a.mean), _or(b.ci_high, b.mean), bound))
        highs.append(_cross(meets, fails, _or(a.ci_low, a.mean), _or(b.ci_low, b.mean), bound))
    if not estimates:
        return None, None
    return min(estimates), (min(lows), min(highs))


def _or(value: float, fallback: float) -> float:
    return fallback if value != value else value


def _cross(x0: float, x1: float, y0: float, y1: float, bound: float) -> float:
    """x where the line through (x0, y0) and (x1, y1) reaches ``bound``, kept within [x0, x1]."""
    if y1 == y0:
        return x1 if y0 <= bound else x0
    x = x0 + (bound - y0) * (x1 - x0) / (y1 - y0)
    return min(max(x, x0), x1)


def grid_probes(search: CapacitySearch) -> int:
    """Probes of a fixed grid over [low, high] with the same resolution, for comparison."""
    if search.integer:
        return int(search.high - search.low) + 1
    if search.scale == "log":
        return int(math.ceil(math.log(search.high / search.low) / math.log1p(search.resolution))) + 1
    return int(math.ceil((search.high - search.low) / (search.resolution * search.low))) + 1
