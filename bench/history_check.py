"""Family-wise false alarms of `kubebench check` on seeded A/A families, and its power on a real regression.

A family is 20 trials × 5 metrics; each test compares a candidate of 5 runs with a baseline of
10 experiments × 5 runs, all drawn from the same distribution (CV 2%): any failing test is a false alarm.

    PYTHONPATH=src python bench/history_check.py [--families 1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kubebench.analyse.family import Check, gate_fails


def aa_family(seed: int, trials: int = 20, metrics: int = 5) -> list[Check]:
    """One seeded A/A family: base and candidate of every trial × metric from one distribution."""
    rng = np.random.default_rng(seed)
    return [Check({"trial": t}, f"m{m}", "maximize" if m % 2 else "minimize",
                 tuple(1000 * (1 + 0.02 * rng.standard_normal(50))), tuple(1000 * (1 + 0.02 * rng.standard_normal(5))),
                 0.02)
            for t in range(trials) for m in range(metrics)]


def aa_family_false_alarms(families: int, correction: str = "holm") -> float:
    """Share of A/A families where `check` fails (any test regressed beyond its threshold)."""
    return sum(gate_fails(aa_family(seed), correction) for seed in range(families)) / families


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", type=int, default=1000)
    args = parser.parse_args()
    for correction in ("holm", "bh"):
        start = time.perf_counter()
        rate = aa_family_false_alarms(args.families, correction)
        print(f"{correction}: A/A families of 20 trials × 5 metrics failing: {rate:.1%} of {args.families} "
              f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
