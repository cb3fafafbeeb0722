"""Sequential decisions against fixed ones, on seeded simulations (``docs/statistics.md``, "Sequential
decisions"): error rates and runs used.

1. ``run --decide-against``: a base of 10 runs, run-to-run CV 2% (Gaussian); the candidate equal to
   it, or 3% worse (a maximized metric), or 2% worse. Sequential designs (kubebench's default:
   ``unchanged`` within ±3%; and the literal ±2% threshold) against fixed 10-run comparisons:
   kubebench's ``compare`` and the same rule as the sequential one read once at 10 runs; and the
   smallest fixed number of runs with the same error rates.
2. Adaptive repeats (``repeats: {min: 3, max: 20, target_ci: 0.02}``): runs and how often the 95% CI
   at the stop holds the true mean, with a plain t-interval and with the repeated one.
3. Capacity probes (``search: {min: 2, max: 6, confidence: 0.95}``): a probe whose metric's mean lies
   at its bound (every CI-based verdict is then wrong: at most 5% should be), or 5–20% away (CV 5%).

    PYTHONPATH=src .venv/bin/python bench/sequential_decisions.py [--trials 4000]
"""

from __future__ import annotations

import argparse
import random
import time

from kubebench.analyse.compare import compare
from kubebench.capacity.search import Probe
from kubebench.numerics.sequential import Design, decide
from kubebench.spec.model import CapacitySearch
from kubebench.testing.sequential import adaptive, fixed, sequential

SCENARIOS = (("equal", 0.0), ("3% worse", -0.03), ("2% worse", -0.02))


def _compare_rule(base, candidate) -> str:
    return compare(base, candidate, goal="maximize").verdict


def _one_look(runs: int, margin: float = 0.03):
    design = Design(runs, runs, margin=margin)

    def rule(base, candidate) -> str:
        return decide(base, candidate, design, "maximize").verdict or "inconclusive"

    return rule


def decisions(trials: int) -> list[tuple[str, dict]]:
    """Rows: design → per scenario (rates, mean runs)."""
    rows = []
    designs = [
        ("sequential, unchanged ±3% (default), 3…20 runs", lambda c, s: sequential(c, Design(3, 20), trials, s)),
        ("sequential, unchanged ±3%, 3…10 runs", lambda c, s: sequential(c, Design(3, 10), trials, s)),
        ("sequential (default), 3% of runs 10–30% slower (a noisy neighbour)",
         lambda c, s: sequential(c, Design(3, 20), trials, s, outliers=0.03)),
        ("sequential, unchanged ±2% (the threshold), 3…20 runs",
         lambda c, s: sequential(c, Design(3, 20, margin=0.02), trials, s)),
        ("fixed 10 runs, `compare` (today)", lambda c, s: fixed(c, 10, trials, s, _compare_rule)),
        ("fixed 10 runs, the same rule read once", lambda c, s: fixed(c, 10, trials, s, _one_look(10))),
    ]
    for name, simulate in designs:
        rows.append((name, {label: simulate(change, 1 + i) for i, (label, change) in enumerate(SCENARIOS)}))
    return rows


def fewest_fixed(trials: int, power: float = 0.90) -> int:
    """The fewest runs a fixed comparison (the same rule, read once) needs to find a 3% regression
    ``power`` of the time."""
    for runs in range(3, 21):
        if fixed(-0.03, runs, trials, 2, _one_look(runs)).rate("regressed") >= power:
            return runs
    return 21


def _old_probe_verdict(values: list[float], bound: float, search: CapacitySearch) -> tuple[str, str]:
    """The capacity probe's rule before #28: a plain t-interval, looked at after every run."""
    from kubebench.numerics.stats import summarize

    if len(values) < search.min:
        return "undecided", ""
    s = summarize(values, confidence=search.confidence)
    low, high = (s.ci_low, s.ci_high) if len(values) >= 2 else (s.mean, s.mean)
    if low > bound:
        return "fails", "CI"
    if high <= bound:
        return "meets", "CI"
    if len(values) < search.max:
        return "undecided", ""
    return ("fails" if s.mean > bound else "meets"), "CI undecided"


def probes(trials: int, cv: float = 0.05) -> list[tuple[float, dict[str, tuple[float, float, float]]]]:
    """Per true mean / bound: (share fails, share decided by the CI, mean runs), old rule and sequential."""
    search = CapacitySearch(parameter="rate", low=1, high=2, slo={"m": 1.0}, min=2, max=6)
    rows = []
    for offset in (0.0, -0.05, 0.05, -0.10, 0.10, -0.20, 0.20):
        found = {}
        for rule in ("plain CI", "sequential"):
            rng = random.Random(7)
            fails = by_ci = runs = 0
            for _ in range(trials):
                values: list[float] = []
                while True:
                    values.append((1 + offset) * (1 + cv * rng.gauss(0.0, 1.0)))
                    verdict, why = (_old_probe_verdict(values, 1.0, search) if rule == "plain CI"
                                    else Probe(1, {"m": values}, len(values)).verdict(search))
                    if verdict != "undecided":
                        fails += verdict == "fails"
                        by_ci += "CI undecided" not in why
                        runs += len(values)
                        break
            found[rule] = (fails / trials, by_ci / trials, runs / trials)
        rows.append((offset, found))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"1. decisions against a base of 10 runs, CV 2%, {args.trials} seeded trials per cell")
    print("| design | equal: regressed / improved / unchanged / inconclusive | runs | 3% worse: regressed / "
          "unchanged / inconclusive | runs | 2% worse: regressed | runs | mean runs (equal, 3% worse) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, cells in decisions(args.trials):
        equal, worse, slight = cells["equal"], cells["3% worse"], cells["2% worse"]
        both = (equal.mean_runs + worse.mean_runs) / 2
        print(f"| {name} | {equal.rate('regressed'):.1%} / {equal.rate('improved'):.1%} / "
              f"{equal.rate('unchanged'):.1%} / {equal.rate('inconclusive'):.1%} | {equal.mean_runs:.2f} | "
              f"{worse.rate('regressed'):.1%} / {worse.rate('unchanged'):.1%} / {worse.rate('inconclusive'):.1%} | "
              f"{worse.mean_runs:.2f} | {slight.rate('regressed'):.1%} | {slight.mean_runs:.2f} | "
              f"{both:.2f} ({both / 10:.0%} of 10) |")
    print(f"fewest runs of a fixed comparison (the same rule, read once) that finds a 3% regression 90% of the time: "
          f"{fewest_fixed(args.trials)}")
    print(f"\n2. adaptive repeats {{min: 3, max: 20, target_ci: 0.02}}, {args.trials} seeded trials per cell")
    print("| noise | plain t-interval: runs, CI holds the mean | repeated CI: runs, CI holds the mean |")
    print("| --- | --- | --- |")
    for label, cv, uniform in (("Gaussian CV 1%", 0.01, False), ("Gaussian CV 2%", 0.02, False),
                               ("Gaussian CV 3%", 0.03, False), ("uniform ±3%", 0.03, True)):
        old = adaptive(cv, 0.02, 3, 20, args.trials, 11, repeated=False, uniform=uniform)
        new = adaptive(cv, 0.02, 3, 20, args.trials, 11, repeated=True, uniform=uniform)
        print(f"| {label} | {old[0]:.1f}, {old[1]:.1%} | {new[0]:.1f}, {new[1]:.1%} |")
    print(f"\n3. capacity probes (min 2, max 6, 95%; CV 5%), {args.trials} seeded probes per cell")
    print("| true mean / bound | plain CI: fails, decided by the CI, runs | sequential: fails, decided by the CI, runs |")
    print("| --- | --- | --- |")
    for offset, found in probes(args.trials):
        old, new = found["plain CI"], found["sequential"]
        print(f"| {1 + offset:.2f} | {old[0]:.1%}, {old[1]:.1%}, {old[2]:.2f} | {new[0]:.1%}, {new[1]:.1%}, {new[2]:.2f} |")
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
