"""Where a run's time goes, over the repeats of each trial: each phase's median with a confidence
interval (:func:`startup`), the difference of two experiments split by phase (:func:`phase_overheads`,
what ``kubebench overhead`` adds to its one number), and gates on phases (``--fail-on
"startup_seconds:p95<5s"``, :func:`parse_phase_gate`).

The median's interval is distribution-free: the order statistics that bracket the median with at
least the asked-for probability (a binomial(n, ½) count), so it needs no model of how start-up
times spread (they are skewed: a slow image pull, a node coming up); with too few runs there is none
(6 runs give 96.9% for the outermost pair).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import SpecError
from ..numerics.stats import summarize
from ..store.records import RunRecord
from ..timeline import CHAIN, PHASE_METRICS
from .experiments import matched_trials, trial_values

NAN = float("nan")
#: Phases that are part of the end-to-end time, in the run's order (the split of ``overhead``).
CHAIN_METRICS = tuple(metric for _, metric in CHAIN)


@dataclass(frozen=True)
class PhaseStat:
    """One phase of one trial over its repeats: the median, its interval, the runs it came from."""

    metric: str
    median: float
    low: float
    high: float
    n: int
    values: tuple[float, ...] = ()

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the runs' values (linear interpolation), nan without any."""
        if not self.values:
            return NAN
        ordered = sorted(self.values)
        pos = (len(ordered) - 1) * q
        low = math.floor(pos)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class TrialPhases:
    """The phases of one trial."""

    trial_id: str
    params: dict[str, object]
    phases: tuple[PhaseStat, ...]

    def get(self, metric: str) -> PhaseStat | None:
        """The phase ``metric`` (``scheduling_seconds`` …), if the trial's runs have it."""
        return next((p for p in self.phases if p.metric == metric), None)


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The distribution-free interval of the median (see the module's docstring); nan, nan when
    ``len(values)`` is too small for ``confidence``."""
    x = sorted(v for v in values if math.isfinite(v))
    n = len(x)
    # P(X ≤ k) for X ~ Binomial(n, ½): the interval (x[k], x[n-1-k]) covers the median with 1 - 2 P(X ≤ k)
    cumulative, best = 0.0, None
    for k in range(n // 2):
        cumulative += math.comb(n, k) / 2**n
        if 1 - 2 * cumulative >= confidence:
            best = k
        else:
            break
    return (x[best], x[n - 1 - best]) if best is not None else (NAN, NAN)


def phase_stat(metric: str, values: Sequence[float], confidence: float = 0.95) -> PhaseStat:
    """A phase's median and interval over ``values``."""
    low, high = median_interval(values, confidence)
    return PhaseStat(metric, summarize(values).median, low, high, len(values), tuple(values))


def startup(runs: Sequence[RunRecord], confidence: float = 0.95) -> list[TrialPhases]:
    """Each trial's phases over its counted, succeeded runs (metrics of :data:`PHASE_METRICS` only)."""
    present = [m for m in PHASE_METRICS if any(m in r.metrics for r in runs)]
    by_metric = {m: {t.trial_id: t for t in trial_values(runs, m)} for m in present}
    trials = trial_values(runs, present[0]) if present else []
    return [TrialPhases(t.trial_id, dict(t.params), tuple(
        phase_stat(m, by_metric[m][t.trial_id].values, confidence)
        for m in present if by_metric[m][t.trial_id].values)) for t in trials]


@dataclass(frozen=True)
class PhaseSplit:
    """How the platform's end-to-end time differs from the bare run's, phase by phase (medians, seconds)."""

    total: float
    deltas: tuple[tuple[str, float], ...]  # (phase metric, platform − bare), largest difference first

    def main(self, share: float = 0.1) -> list[tuple[str, float]]:
        """The phases that make up the difference: those of at least ``share`` of the largest one."""
        if not self.deltas:
            return []
        top = abs(self.deltas[0][1])
        return [(m, d) for m, d in self.deltas if top > 0 and abs(d) >= share * top]


def phase_overheads(bare: Sequence[RunRecord], platform: Sequence[RunRecord]) -> list[tuple[dict[str, object], PhaseSplit]]:
    """For each trial of ``bare`` matched in ``platform``: the difference of their median end-to-end
    times, and of each phase (a phase one of them does not have counts 0 there: a local run has no
    image pull)."""
    pairs = [(b, p) for b, p in matched_trials(bare, platform, "end_to_end_seconds") if p is not None]
    found = []
    for b_trial, p_trial in pairs:
        def median(runs: Sequence[RunRecord], trial_id: str, metric: str) -> float:
            values = [r.metrics.get(metric, 0.0) for r in runs
                      if r.trial_id == trial_id and not r.warmup and r.status == "succeeded"
                      and "end_to_end_seconds" in r.metrics]
            return summarize(values).median if values else NAN

        deltas = []
        for metric in CHAIN_METRICS:
            if any(metric in r.metrics for r in [*bare, *platform]):
                delta = median(platform, p_trial.trial_id, metric) - median(bare, b_trial.trial_id, metric)
                if math.isfinite(delta):
                    deltas.append((metric, delta))
        total = median(platform, p_trial.trial_id, "end_to_end_seconds") - median(bare, b_trial.trial_id,
                                                                                    "end_to_end_seconds")
        found.append((dict(b_trial.params), PhaseSplit(total, tuple(sorted(deltas, key=lambda d: -abs(d[1]))))))
    return found


@dataclass(frozen=True)
class PhaseGate:
    """``METRIC:[STAT]<LIMIT`` (or ``>``): a trial fails when its STAT of METRIC is past LIMIT."""

    text: str
    metric: str
    stat: str  # median | mean | max | p50 … p99
    op: str  # < | >
    limit: float

    def value(self, phase: PhaseStat) -> float:
        """The trial's statistic this gate reads."""
        if self.stat == "median":
            return phase.median
        if self.stat == "mean":
            return summarize(phase.values).mean
        if self.stat == "max":
            return max(phase.values) if phase.values else NAN
        return phase.quantile(int(self.stat[1:]) / 100)

    def passes(self, phase: PhaseStat) -> bool:
        """Whether the trial's phase is within the limit (a phase with no values fails)."""
        value = self.value(phase)
        return math.isfinite(value) and (value < self.limit if self.op == "<" else value > self.limit)


_GATE = re.compile(r"^(?P<metric>[A-Za-z_][A-Za-z0-9_]*):(?P<stat>median|mean|max|p[0-9]{1,2})?"
                   r"(?P<op>[<>])(?P<limit>[0-9]*\.?[0-9]+)(?P<unit>ms|s|m|%)?$")


def parse_phase_gate(text: str) -> PhaseGate:
    """A gate from ``--fail-on`` text: ``startup_seconds:p95<5s``, ``overhead_fraction:<10%``,
    ``image_pull_seconds:max<30s``, ``queue_seconds:median<2m``; SpecError saying the form otherwise."""
    found = _GATE.match(text.replace(" ", ""))
    if found is None or found["metric"] not in PHASE_METRICS:
        raise SpecError(f"invalid --fail-on rule {text!r}: expected PHASE:[median|mean|max|pNN]<LIMIT[s|ms|m|%] "
                        f"with PHASE one of {', '.join(PHASE_METRICS)} (e.g. startup_seconds:p95<5s)")
    limit = float(found["limit"]) * {"ms": 1e-3, "s": 1.0, "m": 60.0, "%": 0.01, None: 1.0}[found["unit"]]
    if (found["unit"] == "%") != (found["metric"] == "overhead_fraction"):
        raise SpecError(f"invalid --fail-on rule {text!r}: a fraction takes a limit in % and a phase one in "
                        "seconds (s, ms, m)")
    return PhaseGate(text, found["metric"], found["stat"] or "median", found["op"], limit)


def failing(trials: Sequence[TrialPhases], gates: Sequence[PhaseGate]) -> list[tuple[TrialPhases, PhaseGate, float]]:
    """``(trial, gate, its value)`` of every gate a trial does not pass (a trial without the phase fails)."""
    found = []
    for trial in trials:
        for gate in gates:
            phase = trial.get(gate.metric)
            if phase is None or not gate.passes(phase):
                found.append((trial, gate, gate.value(phase) if phase is not None else NAN))
    return found
