"""Change-point detection on seeded simulated series: kubebench's, before and after, beside Apache Otava's.

Every scenario is a series of 40 experiments (points) of 5 runs each, run-to-run CV 2%, of a metric to
maximize (throughput) at a level of 1000; the changed series has a 3% regression, the flat one none:

- ``gaussian``: run-to-run noise N(0, 2%) (the case the detector was first tuned on);
- ``student-t3``: Student-t noise with 3 degrees of freedom and scale 2% (its bulk is that of N(0, 2%), its
  tails heavy: its standard deviation is √3 × 2%, and 1 run in 20 lies beyond ±6.4%);
- ``outliers``: Gaussian noise, and 5% of runs slowed by a noisy neighbour, 10–30% slower (value ÷ 1.1–1.3);
- ``wobble``: Gaussian noise, and each experiment's runs share an offset uniform in ±1% (the machine's day);
- ``wobble-sd1``: the same with an offset N(0, 1%), wider: even knowing the noise and that there is one
  step, its maximum-likelihood location is within ±1 point in only 89.8% of series (``--oracle``);
- ``calibrated``: ``wobble-sd1`` with the A/A noise floor of three A/A experiments of the same noise
  (``kubebench.analyse.noise.spread``, as ``kubebench calibrate`` stores it) given to the detector;
- ``uneven``: Gaussian noise, each experiment with 1 to 9 runs (uniform, 5 on average);
- ``two-steps``: −3% at one point and +3% (the fix) at least 5 points later; found = both found;
- ``ramp``: a −3% slide spread evenly over 8 experiments; found = a regression reported within the ramp;
- ``all``: Student-t noise, outliers, wobble and uneven repeats at once (beyond the issue's list).

A step is "found" when a ``regressed`` change (``improved`` for the fix) is reported within ±1 point of
it; a flat series raises a false alarm when any change is reported. Steps lie at a random point in
[5, 35) (so each side has ≥ 5 experiments).

Detectors: ``ours`` (``kubebench.analyse.changepoint.detect``), ``before`` (the same function as it was
at a git revision, ``--before REV``, loaded from ``git show``), ``otava`` (Apache Otava's
``compute_change_points`` with its defaults — window 50, p < 0.001 — on each experiment's median, as
Otava users feed it one number per test run; run in ``bench/.venv-otava``, made on first use from a
pinned version, never in the project's environment: Otava pins older NumPy and SciPy).

    .venv/bin/python bench/changepoints.py [--seeds 500] [--before 37e82eb] [--no-otava] [--scenario NAME …]
    .venv/bin/python bench/changepoints.py --spread-factors      (the table levels._SPREAD_SQUARED holds)
    .venv/bin/python bench/changepoints.py --oracle              (the best ``wobble-sd1`` allows)
    .venv/bin/python bench/changepoints.py --short               (6–20 experiments, with and without a floor)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from benchlib import pinned_venv

if TYPE_CHECKING:
    from kubebench.analyse.changepoint import Floor

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OTAVA_VENV = BENCH / ".venv-otava"
OTAVA_PYTHON = OTAVA_VENV / "bin" / "python"
OTAVA_PACKAGES = ("apache-otava==0.8.0",)

POINTS, RUNS, CV, STEP, LEVEL = 40, 5, 0.02, -0.03, 1000.0
RAMP = 8  # experiments a ramp takes to slide by STEP
AA = 3  # A/A experiments of a calibrated scenario

#: each series' truth: (index, "regressed" | "improved") of its steps, or ("ramp", start, end) for a ramp
Truth = list[tuple[int, str]]


@dataclass(frozen=True)
class Scenario:
    name: str
    noise: str = "gaussian"  # or "t3"
    outliers: float = 0.0  # share of runs slowed by 10–30%
    wobble: float = 0.0  # half-width of each experiment's shared offset (uniform), or its sd when ``gaussian_wobble``
    gaussian_wobble: bool = False
    calibrated: bool = False  # the detector is given the A/A noise floor of three A/A experiments
    uneven: bool = False  # 1–9 runs per experiment instead of 5
    shape: str = "step"  # "step", "two-steps" or "ramp"


SCENARIOS = {s.name: s for s in (
    Scenario("gaussian"),
    Scenario("student-t3", noise="t3"),
    Scenario("outliers", outliers=0.05),
    Scenario("wobble", wobble=0.01),
    Scenario("wobble-sd1", wobble=0.01, gaussian_wobble=True),
    Scenario("calibrated", wobble=0.01, gaussian_wobble=True, calibrated=True),
    Scenario("uneven", uneven=True),
    Scenario("two-steps", shape="two-steps"),
    Scenario("ramp", shape="ramp"),
    Scenario("all", noise="t3", outliers=0.05, wobble=0.01, uneven=True),
)}


def levels(scenario: Scenario, rng: np.random.Generator, changed: bool) -> tuple[np.ndarray, Truth, tuple[int, int]]:
    """(level of each point, the steps to find, the ramp's [start, end) or (0, 0))."""
    level = np.full(POINTS, LEVEL)
    if not changed:
        return level, [], (0, 0)
    if scenario.shape == "ramp":
        at = int(rng.integers(5, POINTS - 5 - RAMP))
        slide = np.clip((np.arange(POINTS) - at + 1) / RAMP, 0, 1)
        return LEVEL * (1 + STEP * slide), [], (at, at + RAMP)
    at = int(rng.integers(5, POINTS - 5))
    level[at:] *= 1 + STEP
    if scenario.shape != "two-steps":
        return level, [(at, "regressed")], (0, 0)
    at = int(rng.integers(5, POINTS - 10))
    back = int(rng.integers(at + 5, POINTS - 4))
    level = np.full(POINTS, LEVEL)
    level[at:back] *= 1 + STEP
    return level, [(at, "regressed"), (back, "improved")], (0, 0)


@dataclass(frozen=True)
class Simulated:
    """One seeded series: each point's runs, the steps in it, the ramp's [start, end) or (0, 0), and the
    A/A noise floor given to the detector (0: none)."""

    points: list[list[float]]
    truth: Truth
    ramp: tuple[int, int]
    floor: Floor | None = None


def series(scenario: Scenario, seed: int, changed: bool) -> Simulated:
    """A seeded series of ``scenario`` (a calibrated scenario: the series of its uncalibrated twin)."""
    twin = scenario.name if not scenario.calibrated else scenario.name.replace("calibrated", "wobble-sd1")
    rng = np.random.default_rng([seed, int(changed), *twin.encode()])
    level, truth, ramp = levels(scenario, rng, changed)
    points = [experiment(scenario, rng, mean) for mean in level]
    floor = None
    if scenario.calibrated:
        from kubebench.analyse.changepoint import Floor
        from kubebench.analyse.noise import spread

        floor = Floor(spread([experiment(scenario, rng, LEVEL) for _ in range(AA)])[0], AA, AA * RUNS)
    return Simulated(points, truth, ramp, floor)


def experiment(scenario: Scenario, rng: np.random.Generator, mean: float) -> list[float]:
    """The runs of one experiment at level ``mean``."""
    n = int(rng.integers(1, 10)) if scenario.uneven else RUNS
    if scenario.noise == "t3":
        noise = CV * rng.standard_t(3, n)  # scale 2%: its bulk is N(0, 2%)'s, its sd √3 × 2%
    else:
        noise = CV * rng.standard_normal(n)
    shared = rng.standard_normal() if scenario.gaussian_wobble else rng.uniform(-1, 1)
    runs = mean * (1 + scenario.wobble * shared) * (1 + noise)
    slow = rng.random(n) < scenario.outliers
    runs[slow] /= 1 + rng.uniform(0.10, 0.30, int(slow.sum()))
    return runs.tolist()


def found(reported: Sequence[tuple[int, str]], truth: Truth, ramp: tuple[int, int]) -> bool:
    """Whether every step of ``truth`` (or the ramp) is among the ``reported`` (index, verdict) pairs."""
    if ramp != (0, 0):
        return any(v == "regressed" and ramp[0] - 1 <= i <= ramp[1] + 1 for i, v in reported)
    return all(any(v == verdict and abs(i - at) <= 1 for i, v in reported) for at, verdict in truth)


Detector = Callable[[Simulated], list[tuple[int, str]]]


def kubebench_detector(detect: Callable, floors: bool = True, **options: object) -> Detector:
    """A detector of (index, verdict) pairs from a ``detect`` function of kubebench's signature (given the
    A/A floor where there is one, unless not ``floors``: the detector before had no such argument)."""
    def run(simulated: Simulated) -> list[tuple[int, str]]:
        floor = {"floor": simulated.floor} if simulated.floor and floors else {}
        return [(c.index, c.comparison.verdict) for c in detect(simulated.points, goal="maximize", **floor, **options)]
    return run


def rates(scenario: Scenario, seeds: Sequence[int], detector: Detector) -> dict[str, float]:
    """Share of ``seeds`` where the change is found, and where the flat series reports any change."""
    hits = alarms = 0
    for seed in seeds:
        changed = series(scenario, seed, changed=True)
        hits += found(detector(changed), changed.truth, changed.ramp)
        alarms += bool(detector(series(scenario, seed, changed=False)))
    return {"detected": hits / len(seeds), "false_alarms": alarms / len(seeds)}


def before_detector(rev: str) -> Detector:
    """kubebench's ``detect`` as it was at git revision ``rev`` (loaded beside today's, same package)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:src/kubebench/analyse/changepoint.py"],
                            check=True, capture_output=True, text=True).stdout
    path = BENCH / "results" / f"changepoint_{rev}.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"kubebench.analyse._changepoint_{rev}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return kubebench_detector(module.detect, floors=False)


# Otava, in its own environment: reads {"series": [[median, …], …]}, prints [[(index, change), …], …]
OTAVA_RUN = """
import json, sys
from otava.analysis import compute_change_points
out = []
for medians in json.load(sys.stdin)["series"]:
    found, _ = compute_change_points(medians)
    out.append([(int(cp.index), float(cp.stats.forward_rel_change())) for cp in found])
print(json.dumps(out))
"""


def ensure_otava() -> None:
    """bench/.venv-otava with Apache Otava (pinned), made once."""
    pinned_venv(OTAVA_VENV, OTAVA_PACKAGES)


def otava_rates(scenario: Scenario, seeds: Sequence[int]) -> dict[str, float]:
    """:func:`rates` of Otava on each experiment's median (every series in one Otava process)."""
    made = [series(scenario, seed, changed) for seed in seeds for changed in (True, False)]
    medians = [[float(np.median(p)) for p in simulated.points] for simulated in made]
    done = subprocess.run([str(OTAVA_PYTHON), "-c", OTAVA_RUN], input=json.dumps({"series": medians}),
                          check=True, capture_output=True, text=True)
    answers = json.loads(done.stdout)
    hits = alarms = 0
    for simulated, answer in zip(made, answers):
        reported = [(i, "regressed" if change < 0 else "improved") for i, change in answer]
        if simulated.truth or simulated.ramp != (0, 0):
            hits += found(reported, simulated.truth, simulated.ramp)
        else:
            alarms += bool(reported)
    return {"detected": hits / len(seeds), "false_alarms": alarms / len(seeds)}


def spread_factors(seeds: int = 4000) -> dict[int, float]:
    """E[spread²] / one experiment's variance for k = 2…10 A/A experiments (``levels._SPREAD_SQUARED``):
    experiments of 5 runs whose levels differ by N(0, 2%), the runs' own noise negligible."""
    from kubebench.analyse.noise import spread

    rng = np.random.default_rng(0)
    found = {}
    for k in range(2, 11):
        squares = [spread([list(LEVEL * (1 + 0.02 * rng.standard_normal()) * (1 + 1e-6 * rng.standard_normal(RUNS)))
                           for _ in range(k)])[0] ** 2 for _ in range(seeds)]
        found[k] = round(float(np.mean(squares)) / 0.02**2, 1)
    return found


def oracle(seeds: int = 4000) -> float:
    """Share of ``wobble-sd1`` step series whose one step, placed where the means of the experiments' runs
    split best (the maximum-likelihood location knowing the noise and that there is one step), is within
    ±1 point: a bound on what any detector finds there."""
    from kubebench.analyse.changepoint import WeightedL2

    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(seeds):
        at = int(rng.integers(5, POINTS - 5))
        runs = LEVEL * (1 + 0.01 * rng.standard_normal(POINTS))[:, None] * (1 + CV * rng.standard_normal((POINTS, RUNS)))
        means = np.log(runs).mean(axis=1)
        means[at:] += np.log1p(STEP)
        hits += abs(WeightedL2(means, np.ones(POINTS)).best_split(0, POINTS)[1] - at) <= 1
    return hits / seeds


def short_series(seeds: int = 2000) -> list[str]:
    """On 6, 10 and 20 experiments (5 runs, CV 2%, wobble N(0, 1%)): flat series with a candidate change,
    and a 5% step at the middle found as a candidate, without and with an A/A floor of 3 experiments."""
    from kubebench.analyse.changepoint import Floor, candidates_of
    from kubebench.analyse.noise import spread

    wobbly = SCENARIOS["wobble-sd1"]
    lines = []
    for n in (6, 10, 20):
        alarms, hits = [0, 0], [0, 0]
        for seed in range(seeds):
            rng = np.random.default_rng([seed, n])
            flat = [experiment(wobbly, rng, LEVEL) for _ in range(n)]
            step = [experiment(wobbly, rng, LEVEL * (1 if i < n // 2 else 0.95)) for i in range(n)]
            floor = Floor(spread([experiment(wobbly, rng, LEVEL) for _ in range(AA)])[0], AA, AA * RUNS)
            for k, given in enumerate((None, floor)):
                alarms[k] += bool(candidates_of(flat, floor=given))
                hits[k] += n // 2 in candidates_of(step, floor=given)
        lines.append(f"{n} experiments: flat with a candidate {alarms[0] / seeds:.1%} (A/A floor: {alarms[1] / seeds:.1%}); "
                     f"5% step a candidate {hits[0] / seeds:.1%} (A/A floor: {hits[1] / seeds:.1%})")
    return lines


def table(rows: dict[str, dict[str, dict[str, float]]], seeds: int) -> str:
    """A Markdown table: per scenario, each detector's detection and false-alarm rates."""
    names = list(next(iter(rows.values())))
    head = "| scenario | " + " | ".join(f"{n}: found | {n}: false alarms" for n in names) + " |"
    lines = [head, "| --- |" + " ---: |" * (2 * len(names))]
    for scenario, by in rows.items():
        cells = " | ".join(f"{by[n]['detected']:.1%} | {by[n]['false_alarms']:.1%}" for n in names)
        lines.append(f"| {scenario} | {cells} |")
    return "\n".join(lines) + f"\n\n({seeds} seeds per scenario and series; found: ≥ 90% wanted; false alarms: ≤ 5%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--before", default="", help="git revision of the detector to compare with (e.g. 37e82eb)")
    parser.add_argument("--no-otava", action="store_true", help="leave Otava out (no bench/.venv-otava)")
    parser.add_argument("--scenario", nargs="*", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--spread-factors", action="store_true", help="print E[A/A spread²] / variance by k, and stop")
    parser.add_argument("--oracle", action="store_true", help="print the best wobble-sd1 allows, and stop")
    parser.add_argument("--short", action="store_true", help="print the figures of short series, and stop")
    args = parser.parse_args()
    if args.spread_factors or args.oracle or args.short:
        print(spread_factors() if args.spread_factors else f"{oracle():.1%}" if args.oracle else "\n".join(short_series()))
        return
    from kubebench.analyse.changepoint import detect

    detectors = {"before": before_detector(args.before)} if args.before else {}
    detectors["ours"] = kubebench_detector(detect)
    if not args.no_otava:
        ensure_otava()
    seeds = range(args.seeds)
    rows: dict[str, dict[str, dict[str, float]]] = {}
    for name in args.scenario:
        started = time.perf_counter()
        rows[name] = {label: rates(SCENARIOS[name], seeds, d) for label, d in detectors.items()}
        if not args.no_otava:
            rows[name]["otava"] = otava_rates(SCENARIOS[name], seeds)
        print(f"{name}: {rows[name]} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    print(table(rows, args.seeds))


if __name__ == "__main__":
    main()
