"""Seeded simulations of sequential decisions (tests and ``bench/sequential_decisions.py``): a base of
``base_runs`` runs and a candidate whose runs come one per round, Gaussian run-to-run noise of
coefficient of variation ``cv``, the candidate ``change`` (relative) away from the base; optionally a
share ``outliers`` of runs slowed by a noisy neighbour (10–30% lower)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..numerics.sequential import Design, decide, interval


@dataclass
class Tally:
    """How the simulated trials ended, and the candidate runs they took."""

    trials: int = 0
    runs: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)

    def add(self, verdict: str, runs: int) -> None:
        self.trials += 1
        self.runs += runs
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1

    def rate(self, verdict: str) -> float:
        return self.verdicts.get(verdict, 0) / self.trials if self.trials else 0.0

    @property
    def mean_runs(self) -> float:
        return self.runs / self.trials if self.trials else 0.0


def _sample(rng: random.Random, n: int, level: float, cv: float, outliers: float = 0.0) -> list[float]:
    values = [level * (1 + cv * rng.gauss(0.0, 1.0)) for _ in range(n)]
    if outliers:
        values = [v * (1 - rng.uniform(0.1, 0.3)) if rng.random() < outliers else v for v in values]
    return values


def sequential(change: float, design: Design, trials: int, seed: int, base_runs: int = 10,
               cv: float = 0.02, outliers: float = 0.0) -> Tally:
    """Trials decided by :func:`~kubebench.numerics.sequential.decide`, one candidate run per round."""
    rng, tally = random.Random(seed), Tally()
    for _ in range(trials):
        base = _sample(rng, base_runs, 100.0, cv, outliers)
        candidate: list[float] = []
        while True:
            candidate += _sample(rng, 1, 100.0 * (1 + change), cv, outliers)
            decision = decide(base, candidate, design, "maximize")
            if decision.decided:
                tally.add(decision.verdict or "inconclusive", decision.runs)
                break
    return tally


def fixed(change: float, runs: int, trials: int, seed: int, rule: Callable[[Sequence[float], Sequence[float]], str],
          base_runs: int = 10, cv: float = 0.02) -> Tally:
    """Trials of ``runs`` candidate runs each, judged once by ``rule(base, candidate)`` (a verdict)."""
    rng, tally = random.Random(seed), Tally()
    for _ in range(trials):
        base = _sample(rng, base_runs, 100.0, cv)
        tally.add(rule(base, _sample(rng, runs, 100.0 * (1 + change), cv)), runs)
    return tally


def adaptive(cv: float, target: float, low: int, high: int, trials: int, seed: int, repeated: bool,
             uniform: bool = False) -> tuple[float, float]:
    """(mean runs, share of trials whose CI at the stop holds the true mean) of adaptive repeats that stop
    when the 95% CI's half-width is below ``target``: the repeated CI, or a plain t-interval."""
    from ..numerics.stats import summarize

    rng, runs, held = random.Random(seed), 0, 0
    design = Design(low, high)
    for _ in range(trials):
        values: list[float] = []
        while True:
            values.append(100.0 * (1 + (rng.uniform(-cv, cv) if uniform else cv * rng.gauss(0.0, 1.0))))
            if len(values) < low:
                continue
            if repeated:
                ci_low, ci_high = interval(values, design, 0.95)
            else:
                s = summarize(values)
                ci_low, ci_high = s.ci_low, s.ci_high
            mean = sum(values) / len(values)
            narrow = ci_low == ci_low and (ci_high - ci_low) / 2 <= target * mean
            if narrow or len(values) >= high:
                runs += len(values)
                held += ci_low <= 100.0 <= ci_high
                break
    return runs / trials, held / trials
