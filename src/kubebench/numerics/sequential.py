"""Sequential decisions: stop a trial's runs as soon as the question is answered, with error rates
that hold whatever round it stops at (``kubebench run --decide-against``, adaptive repeats, the
capacity search's probes). Pure: values in, decisions out.

The procedure is a group-sequential design with error spending (Lan & DeMets 1983; Jennison &
Turnbull, *Group Sequential Methods*, 2000, chapters 7 and 9), read through **repeated confidence
intervals**: after each round the interval is drawn with a multiplier ``c_k`` chosen so that the
true value lies inside the intervals of *every* round at once with the stated probability. A
verdict read from the interval of whatever round it stops at therefore keeps its error rate.

- The multipliers come from a spending function, ``level × t^rho`` of the information fraction
  ``t`` (Kim & DeMets' power family; ``rho = 1`` is close to Pocock's design and stops early most
  often). They are computed by numerical integration over the rounds (the recursion of Armitage,
  McPherson & Rowe, 1969), once per design, and cached.
- Information: a candidate of ``n`` runs against a base of ``m`` runs measures the change with
  variance ``σ²(1/n + 1/m)``, so its information fraction is ``(1/max + 1/m) / (1/n + 1/m)``:
  ``σ`` cancels, and a small base caps what more candidate runs can tell. Against a known level
  (one sample: the SLO bound, a CI's width) it is ``n / max``.
- ``σ`` is not known: the z multipliers are turned into Student t ones of the same tail
  probability with one degree of freedom fewer than the fixed-sample test has (``n + m − 3``;
  ``n − 2`` for one sample; at least 1). Matching tails with the full degrees of freedom lets a
  few tenths of a percent more false verdicts through (simulated: 5.4–5.6% for a nominal 5% with
  bases of 2–3 runs, 5.6–6.1% for one sample), one fewer keeps them at or below it (to within
  0.1% for one sample looked at 30 times and more): ``docs/statistics.md``.
- A comparison is made on the logarithm of the values (a ratio; scale-free from 1e-300 to 1e300);
  a side with a value ≤ 0 is compared on differences relative to the base's mean instead.

A candidate is ``regressed`` (``improved``) when its ``1 − 2α`` interval lies wholly on the worse
(better) side of no change — a one-sided test at ``α`` — and ``unchanged`` when its ``1 − 2β``
interval lies within ``1 ± margin``: a change of ``margin`` either way is called unchanged at most
``β`` of the time. Otherwise it goes on, and at ``max`` runs it is ``inconclusive``. Why the
default margin (3%) is wider than ``compare``'s 2% threshold is argued in ``docs/statistics.md``
("Sequential decisions"): at a 2% run-to-run CV, showing a change within ±2% takes 13 runs on
average, more than a fixed comparison of 10.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from ..rules import COMPARE_ALPHA, Goal, Verdict
from .stats import _json_number, t_quantile

if TYPE_CHECKING:
    import numpy as np

#: The verdict words of :mod:`kubebench.analyse.compare` (the same four, spelled the same).

#: False ``regressed`` (and false ``improved``) allowed on equal distributions, each.
ALPHA = COMPARE_ALPHA
#: False ``unchanged`` allowed when the change is ``margin`` (either way).
BETA = 0.10
#: ``unchanged`` means "within ± this"; the smallest change the decision is built to catch 90% of the time.
MARGIN = 0.03
#: Runs before the first look, when the spec's repeats do not say (adaptive repeats give their ``min``).
MIN_RUNS = 3
#: The exponent of the spending function ``level × t^rho``.
RHO = 1.0
#: Looks at most in one design: beyond, the rounds between looks are not judged (the design stays exact).
MAX_LOOKS = 40
#: Points of the numerical integration on each round's continuation interval (odd: Simpson's rule).
_GRID = 301
_NORMAL = NormalDist()


@dataclass(frozen=True)
class Design:
    """How a sequential decision is made: runs before the first look (``min_runs``) and at most
    (``max_runs``), the error rates and the margin of ``unchanged`` (see the module docstring)."""

    min_runs: int
    max_runs: int
    alpha: float = ALPHA
    beta: float = BETA
    margin: float = MARGIN
    rho: float = RHO

    def __post_init__(self) -> None:
        if not 1 <= self.min_runs <= self.max_runs:
            raise ValueError(f"need 1 <= min_runs <= max_runs, got {self.min_runs} and {self.max_runs}")
        for name in ("alpha", "beta"):
            if not 0 < getattr(self, name) < 0.5:
                raise ValueError(f"{name} must be between 0 and 0.5, got {getattr(self, name)!r}")
        if not 0 < self.margin < 1:
            raise ValueError(f"margin must be between 0 and 1, got {self.margin!r}")
        if not self.rho > 0:
            raise ValueError(f"rho must be positive, got {self.rho!r}")

    def looks(self) -> tuple[int, ...]:
        """The runs at which the decision is taken: every count from ``min_runs`` (at least 2) to
        ``max_runs``, or :data:`MAX_LOOKS` of them spread evenly when there are more."""
        return looks(max(2, self.min_runs), self.max_runs)


@dataclass(frozen=True)
class Decision:
    """Where a candidate stands against its base after ``runs`` runs: ``verdict`` is None while
    more runs may tell (see the module docstring for the rule)."""

    verdict: Verdict | None
    runs: int
    base_runs: int
    goal: Goal
    #: candidate / base: the ratio of geometric means (of means when a value is ≤ 0)
    ratio: float
    #: the 1 − 2α repeated interval of the ratio (``regressed`` / ``improved`` read it)
    ci: tuple[float, float]
    #: the 1 − 2β repeated interval of the ratio (``unchanged`` reads it)
    band: tuple[float, float]
    design: Design
    reason: str = ""
    sequential: bool = field(default=True)

    @property
    def decided(self) -> bool:
        return self.verdict is not None

    @property
    def change(self) -> float:
        """Signed relative change in the goal's direction, positive = better (as ``compare``'s)."""
        return self.ratio - 1 if self.goal == "maximize" else 1 - self.ratio

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON (nan becomes None)."""
        d = self.design
        return {"verdict": self.verdict, "runs": self.runs, "base_runs": self.base_runs, "goal": self.goal,
                "ratio": _json_number(self.ratio), "change": _json_number(self.change),
                "ci": [_json_number(v) for v in self.ci], "band": [_json_number(v) for v in self.band],
                "min_runs": d.min_runs, "max_runs": d.max_runs, "alpha": d.alpha, "beta": d.beta,
                "margin": d.margin, "reason": self.reason, "sequential": self.sequential}


def looks(first: int, last: int, limit: int = MAX_LOOKS) -> tuple[int, ...]:
    """Run counts from ``first`` to ``last`` at which a design looks: all of them, or ``limit`` spread evenly."""
    if last <= first:
        return (max(first, last),)
    if last - first + 1 <= limit:
        return tuple(range(first, last + 1))
    step = (last - first) / (limit - 1)
    return tuple(sorted({first + round(i * step) for i in range(limit)}))


def fractions(counts: Sequence[int], base_runs: float = math.inf) -> tuple[float, ...]:
    """Information fractions of looks at ``counts`` candidate runs against ``base_runs`` (inf: a known level)."""
    inverse_base = 0.0 if math.isinf(base_runs) else 1.0 / base_runs
    last = 1.0 / counts[-1] + inverse_base
    return tuple(last / (1.0 / n + inverse_base) for n in counts)


@functools.lru_cache(maxsize=512)
def boundaries(info: tuple[float, ...], level: float, rho: float = RHO) -> tuple[float, ...]:
    """Two-sided z boundaries ``c_k`` of looks at information fractions ``info`` (increasing, the
    last 1): P(|Z_j| ≥ c_j for some j ≤ k) = ``level × info[k]^rho`` under no change, Z_j being
    the standardized estimate after look j (increments independent, as a Brownian motion's)."""
    import numpy as np

    out: list[float] = []
    spent, previous = 0.0, 0.0
    xs = mass = None
    for t in info:
        target = level * min(1.0, t) ** rho - spent
        step = t - previous
        if xs is None or mass is None:
            c = _NORMAL.inv_cdf(1 - target / 2) if target > 0 else math.inf
            crossed = target
            edge = c * math.sqrt(t) if math.isfinite(c) else 12 * math.sqrt(t)
            xs = np.linspace(-edge, edge, _GRID)
            density = np.exp(-xs * xs / (2 * t)) / math.sqrt(2 * math.pi * t)
        else:
            c, crossed = _next_boundary(xs, mass, t, step, target)
            edge = c * math.sqrt(t) if math.isfinite(c) else xs[-1] + 12 * math.sqrt(step)
            ys = np.linspace(-edge, edge, _GRID)
            kernel = np.exp(-(ys[:, None] - xs[None, :]) ** 2 / (2 * step)) / math.sqrt(2 * math.pi * step)
            density, xs = kernel @ mass, ys
        mass = density * _simpson(xs)
        spent += crossed
        previous = t
        out.append(c)
    return tuple(out)


def _next_boundary(xs: np.ndarray, mass: np.ndarray, t: float, step: float, target: float) -> tuple[float, float]:
    """The boundary at information ``t`` whose crossing probability (from the mass still inside at
    the previous look, on points ``xs`` of the score scale) is ``target``; and that probability."""
    sd = math.sqrt(step)

    def crossing(c: float) -> float:
        edge = c * math.sqrt(t)
        return float(mass @ (_phi((-edge - xs) / sd) + _phi((xs - edge) / sd)))

    # crossing(c) is at most the whole tail beyond c, so the root lies below that tail's quantile
    high = _NORMAL.inv_cdf(1 - target / 2) if 0 < target < 1 else 40.0
    if target <= 0 or crossing(high) >= target:
        return math.inf, 0.0
    # regula falsi (Illinois) on log(crossing / target): a dozen evaluations instead of bisection's 60
    low, f_low = 0.0, math.log(max(crossing(0.0), 1e-300) / target)
    f_high = math.log(max(crossing(high), 1e-300) / target)
    side = 0
    for _ in range(100):
        c = (low * f_high - high * f_low) / (f_high - f_low)
        f = math.log(max(crossing(c), 1e-300) / target)
        if abs(f) < 1e-12 or high - low < 1e-12:
            break
        if f > 0:
            low, f_low = c, f
            f_high = f_high / 2 if side == 1 else f_high
            side = 1
        else:
            high, f_high = c, f
            f_low = f_low / 2 if side == -1 else f_low
            side = -1
    return c, crossing(c)


def _simpson(xs: np.ndarray) -> np.ndarray:
    import numpy as np

    weights = np.ones(xs.size)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    scaled: np.ndarray = weights * (xs[1] - xs[0]) / 3
    return scaled


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF of an array (``erfc`` by its Chebyshev fit, relative error < 1.2e-7:
    SciPy's exact one costs 0.4 s of import, and the boundaries need no more)."""
    import numpy as np

    z = np.abs(x) / math.sqrt(2)
    u = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + u * (1.00002368 + u * (0.37409196 + u * (0.09678418 + u * (
        -0.18628806 + u * (0.27886807 + u * (-1.13520398 + u * (1.48851587 + u * (-0.82215223 + u * 0.17087277))))))))
    tail = 0.5 * u * np.exp(-z * z + poly)
    phi: np.ndarray = np.where(x < 0, tail, 1.0 - tail)
    return phi


def multiplier(z: float, df: int) -> float:
    """The Student t multiplier (``df`` degrees of freedom) with the tail of the z boundary ``z``."""
    if not math.isfinite(z):
        return math.inf
    tail = 0.5 * math.erfc(z / math.sqrt(2))
    if tail < 1e-12:
        return math.inf
    return -t_quantile(max(1, df), tail)


def _look(n: int, counts: tuple[int, ...]) -> int | None:
    """Index of the look at ``n`` runs (the last one beyond it); None between looks or before the first."""
    if n >= counts[-1]:
        return len(counts) - 1
    return counts.index(n) if n in counts else None


def interval(values: Sequence[float], design: Design, confidence: float) -> tuple[float, float]:
    """The repeated ``confidence`` interval of the mean of one sample (a probe's metric, a trial's
    repeats) after ``len(values)`` of at most ``design.max_runs`` runs; (nan, nan) before the first
    look (``min_runs``, at least 2 values) or between looks."""
    x = [float(v) for v in values if math.isfinite(v)]
    n = len(x)
    counts = design.looks()
    k = _look(n, counts) if n >= 2 else None
    if k is None:
        return math.nan, math.nan
    z = boundaries(fractions(counts), 1 - confidence, design.rho)[k]
    mean = math.fsum(x) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in x) / (n - 1))
    half = multiplier(z, n - 2) * sd / math.sqrt(n) if sd > 0 else 0.0
    return mean - half, mean + half


def decide(base: Sequence[float], candidate: Sequence[float], design: Design, goal: Goal,
           last: bool = False) -> Decision:
    """The candidate against the base after ``len(candidate)`` runs (see the module docstring);
    ``last``: no run follows (``max_runs`` are done, some of them failed), so an open question is
    ``inconclusive``."""
    b = [float(v) for v in base if math.isfinite(v)]
    c = [float(v) for v in candidate if math.isfinite(v)]
    n, m = len(c), len(b)
    nan2 = (math.nan, math.nan)
    if m < 2:
        return Decision("inconclusive", n, m, goal, math.nan, nan2, nan2, design,
                        f"the base has {m} value{'s' * (m != 1)} (a decision needs 2)")
    counts = design.looks()
    k = _look(n, counts) if n >= 2 else None
    final = last or n >= design.max_runs
    if k is None:
        verdict: Verdict | None = "inconclusive" if final else None
        return Decision(verdict, n, m, goal, math.nan, nan2, nan2, design,
                        f"{n} value{'s' * (n != 1)} after {design.max_runs} runs (a decision needs 2)" if final
                        else f"next look at {next(x for x in counts if x > n)} runs")
    d, se, to_ratio = _difference(b, c)
    info = fractions(counts, m)
    df = n + m - 3
    ci = _bounds(d, se, multiplier(boundaries(info, 2 * design.alpha, design.rho)[k], df), to_ratio)
    band = _bounds(d, se, multiplier(boundaries(info, 2 * design.beta, design.rho)[k], df), to_ratio)
    verdict, reason = _verdict(ci, band, design, goal, final)
    return Decision(verdict, n, m, goal, to_ratio(d), ci, band, design, reason)


def _difference(b: list[float], c: list[float]) -> tuple[float, float, Callable[[float], float]]:
    """(change estimate, its standard error, the map back to a ratio): on logs when every value is
    positive, else on differences relative to the base's mean."""
    positive = min(b) > 0 and min(c) > 0
    to_ratio: Callable[[float], float]
    if positive:
        lb, lc = [math.log(v) for v in b], [math.log(v) for v in c]
        to_ratio = _exp
    else:
        scale = abs(math.fsum(b) / len(b)) or 1.0
        lb, lc = [v / scale for v in b], [v / scale for v in c]
        to_ratio = _plus_one
    mb, mc = math.fsum(lb) / len(lb), math.fsum(lc) / len(lc)
    squares = math.fsum((v - mb) ** 2 for v in lb) + math.fsum((v - mc) ** 2 for v in lc)
    pooled = squares / (len(lb) + len(lc) - 2) if len(lb) + len(lc) > 2 else 0.0
    se = math.sqrt(pooled * (1 / len(lb) + 1 / len(lc)))
    return mc - mb, se, to_ratio


def _exp(x: float) -> float:
    return math.exp(x) if x < 709 else math.inf


def _plus_one(x: float) -> float:
    return 1.0 + x


def _bounds(d: float, se: float, factor: float, to_ratio: Callable[[float], float]) -> tuple[float, float]:
    half = factor * se if se > 0 else 0.0  # both sides constant: the change is what it is
    return to_ratio(d - half), to_ratio(d + half)


def _verdict(ci: tuple[float, float], band: tuple[float, float], design: Design, goal: Goal,
             final: bool) -> tuple[Verdict | None, str]:
    low, high = ci
    worse_side = high < 1 if goal == "maximize" else low > 1
    better_side = low > 1 if goal == "maximize" else high < 1
    level = f"{1 - 2 * design.alpha:.0%}"
    shown = f"{low - 1:+.1%} … {high - 1:+.1%}"
    if worse_side or better_side:
        verdict: Verdict = "regressed" if worse_side else "improved"
        return verdict, f"the change's {level} CI ({shown}) excludes no change (one-sided α = {design.alpha:g})"
    margin = f"±{design.margin * 100:g}%"
    if 1 - design.margin <= band[0] and band[1] <= 1 + design.margin:
        return "unchanged", (f"the change's {1 - 2 * design.beta:.0%} CI ({band[0] - 1:+.1%} … {band[1] - 1:+.1%}) "
                             f"lies within {margin}")
    if final:
        return "inconclusive", f"after {design.max_runs} runs the change's {level} CI ({shown}) reaches beyond {margin}"
    return None, f"the change's {level} CI ({shown}) still reaches beyond {margin} and includes no change"
