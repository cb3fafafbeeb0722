"""Adaptive repeats versus a fixed 10 runs, on a synthetic workload with 3% run-to-run noise.

Runs 20 trials through kubebench (local backend, the real runner) with
``repeats: {min: 3, max: 20, target_ci: 0.02}`` and with ``repeats: 10``, for two readings of
"3% noise": Gaussian with a 3% coefficient of variation, and uniform within ±3%. Prints the mean
number of runs per trial, adaptive over fixed, and how many trials reached a 95% CI of ±2%.

    .venv/bin/python bench/adaptive_repeats.py
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

from kubebench.numerics.stats import summarize
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

# The distribution of kubebench.workloads.synthetic's noisy workload, 3% each.
NOISE = {
    "gaussian CV 3%": "gaussian",
    "uniform ±3%": "uniform",
}
SPEC = """
name: adaptive-bench
job:
  command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, rate, --mean, 100, --noise, 0.03,
            --distribution, {noise}]
parameters:
  trial: {trials}
repeats: {repeats}
telemetry: {{enabled: false}}
metrics: [{{name: rate, primary: true}}]
"""


def run(folder: Path, name: str, noise: str, repeats: str) -> list[tuple[int, float]]:
    """(runs, CI half-width relative) of every trial."""
    spec = folder / f"{name}.yaml"
    spec.write_text(SPEC.format(noise=noise, trials=list(range(20)), repeats=repeats))
    config = settings(home=folder / "home")
    store = open_store(config.store_url)
    experiment = plan_experiment(load_spec(spec), config, name)
    execute(experiment, store)
    by_trial: dict[str, list[float]] = {}
    for r in store.runs(name):
        by_trial.setdefault(r.trial_id, []).append(r.metrics["rate"])
    return [(len(v), summarize(v).ci_half_width_rel) for v in by_trial.values()]


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="kubebench-adaptive-"))
    try:
        print(f"{'noise':<16} {'mode':<9} {'runs/trial':>10} {'trials at ±2%':>14} {'median ±CI':>11}")
        for label, noise in NOISE.items():
            results = {}
            for mode, repeats in (("adaptive", "{min: 3, max: 20, target_ci: 0.02}"), ("fixed", "10")):
                trials = run(folder, f"{mode}-{label.split()[0]}", noise, repeats)
                mean_runs = statistics.mean(n for n, _ in trials)
                reached = sum(1 for _, ci in trials if ci <= 0.02)
                results[mode] = mean_runs
                print(f"{label:<16} {mode:<9} {mean_runs:>10.1f} {reached:>11}/20 "
                      f"{statistics.median(ci for _, ci in trials) * 100:>10.2f}%")
            print(f"{label:<16} adaptive / fixed runs: {results['adaptive'] / results['fixed']:.0%} (target ≤ 60%)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
