"""What a comparison of n runs a side can tell: false alarms and power of kubebench's decision rule.

A seeded simulation of :func:`kubebench.analyse.decision.decide` (the rule behind ``compare``, ``check``
and every verdict) on pairs of n runs a side, for n = 2 … 20 and run-to-run noise (CV) of 1–5%:

1. what each n detects: the smallest relative loss found 90% of the time (one-sided α 5%) by
   :func:`kubebench.numerics.twosample.detectable_change` (what ``run`` warns with), and the power the
   simulation measures at that loss;
2. error rates at CV 2%: false ``regressed`` on equal distributions (Gaussian noise, and Student-t noise
   with 3 degrees of freedom), power against 3%, 5% and 10% losses, and the rule kubebench had before
   (one-sided Welch and Mann–Whitney tests that both had to agree), whose rank test cannot reach p < 0.05
   below 4 runs a side;
3. one outlier run in ten: among seeded pairs whose nine candidate runs show a change at p < 0.01, how
   often a tenth run at half or three times the median keeps the verdict.

    PYTHONPATH=src python bench/gate_power.py [--pairs 4000]

``tests/analyse/test_decision.py`` pins a few of these figures on fewer pairs; docs/statistics.md has the
tables this prints (Markdown).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from kubebench.analyse.decision import decide
from kubebench.numerics.twosample import detectable_change

ALPHA, POWER = 0.05, 0.9
RUNS = (2, 3, 4, 5, 6, 8, 10, 15, 20)
CVS = (0.01, 0.02, 0.05)


def sample(rng: np.random.Generator, n: int, cv: float, level: float = 100.0, noise: str = "normal") -> list[float]:
    """n runs at ``level`` with run-to-run noise of coefficient of variation ``cv``."""
    if noise == "t3":  # heavy tails, same standard deviation (t with 3 degrees of freedom has variance 3)
        draws = rng.standard_t(3, n) / math.sqrt(3)
    else:
        draws = rng.standard_normal(n)
    return list(level * np.maximum(1 + cv * draws, 0.05))


def verdict_rates(n: int, cv: float, loss: float, pairs: int, seed: int, noise: str = "normal",
                  rule=None, threshold: float = 0.02) -> dict[str, float]:
    """Share of each verdict over ``pairs`` seeded pairs: a base and a candidate ``loss`` lower (maximize)."""
    rng = np.random.default_rng(seed)
    decide_pair = rule or (lambda c, b: decide(c, b, goal="maximize", threshold=threshold, alpha=ALPHA).verdict)
    counts = dict.fromkeys(("regressed", "improved", "unchanged", "inconclusive"), 0)
    for _ in range(pairs):
        base = sample(rng, n, cv, noise=noise)
        candidate = sample(rng, n, cv, 100.0 * (1 - loss), noise)
        counts[decide_pair(candidate, base)] += 1
    return {verdict: count / pairs for verdict, count in counts.items()}


def old_rule(candidate: list[float], base: list[float]) -> str:
    """kubebench's rule before #28 (regressed/improved only): one-sided Welch and Mann–Whitney p < α, same way."""
    from scipy import stats

    for alternative, verdict in (("less", "regressed"), ("greater", "improved")):
        welch = stats.ttest_ind(candidate, base, equal_var=False, alternative=alternative).pvalue
        ranks = stats.mannwhitneyu(candidate, base, alternative=alternative).pvalue
        if welch < ALPHA and ranks < ALPHA:
            return verdict
    return "inconclusive"


def outlier_kept(shift: float, factor: float, pairs: int, seed: int = 0) -> tuple[int, int]:
    """(pairs whose nine candidate runs show a change at p < 0.01 against ten base runs, of those the pairs
    that keep the verdict when a tenth candidate run comes in at ``factor`` × the nine's median); CV 2%."""
    supported = kept = 0
    for i in range(pairs):
        rng = np.random.default_rng(seed + i)
        base, nine = sample(rng, 10, 0.02), sample(rng, 9, 0.02, 100.0 * (1 + shift))
        nine_say = decide(nine, base)
        if nine_say.verdict in ("regressed", "improved") and nine_say.p < 0.01:
            supported += 1
            kept += decide([*nine, float(np.median(nine)) * factor], base).verdict == nine_say.verdict
    return supported, kept


def detects_table(pairs: int) -> list[str]:
    rows = ["| runs a side | " + " | ".join(f"CV {cv:.0%}" for cv in CVS) + " |",
            "|---:|" + "---:|" * len(CVS)]
    for n in RUNS:
        cells = []
        for cv in CVS:
            change = detectable_change(n, n, cv, ALPHA, POWER)
            # the test's power: a threshold of 0 (a gate's threshold above the change would call it unchanged)
            found = verdict_rates(n, cv, change, pairs, seed=1000 + n, threshold=0.0)["regressed"]
            cells.append(f"{change:.1%} ({found:.0%})")
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return rows


def rates_table(pairs: int) -> list[str]:
    rows = ["| runs a side | false regressed | false regressed, t₃ noise | power at 3% | at 5% | at 10% | before #28: at 5% |",
            "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in RUNS:
        null = verdict_rates(n, 0.02, 0.0, pairs, seed=2000 + n)["regressed"]
        heavy = verdict_rates(n, 0.02, 0.0, pairs, seed=3000 + n, noise="t3")["regressed"]
        power = [verdict_rates(n, 0.02, loss, pairs // 2, seed=4000 + n)["regressed"] for loss in (0.03, 0.05, 0.10)]
        before = verdict_rates(n, 0.02, 0.05, pairs // 4, seed=5000 + n, rule=old_rule)["regressed"]
        rows.append(f"| {n} | {null:.1%} | {heavy:.1%} | " + " | ".join(f"{p:.0%}" for p in power) + f" | {before:.0%} |")
    return rows


def outlier_table(pairs: int) -> list[str]:
    rows = ["| nine runs | tenth run | pairs the nine decide (p < 0.01) | verdict kept |", "|---|---|---:|---:|"]
    for shift in (-0.03, 0.03):
        for factor in (0.5, 3.0):
            supported, kept = outlier_kept(shift, factor, pairs)
            rows.append(f"| {shift:+.0%} | ×{factor:g} | {supported} | {kept / supported:.1%} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4000, help="seeded pairs per cell (power: half, the old rule: a quarter)")
    args = parser.parse_args()
    start = time.perf_counter()
    print(f"What n runs a side detect (one-sided α {ALPHA:.0%}, power {POWER:.0%}): the loss, and in brackets the "
          f"share of {args.pairs // 2} seeded pairs found regressed at that loss\n")
    print("\n".join(detects_table(args.pairs // 2)))
    print(f"\nError rates at CV 2% ({args.pairs} pairs per false-alarm cell, {args.pairs // 2} per power cell, "
          f"{args.pairs // 4} for the rule before #28)\n")
    print("\n".join(rates_table(args.pairs)))
    print("\nOne outlier run in ten (10 base runs, CV 2%)\n")
    print("\n".join(outlier_table(args.pairs // 4)))
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
