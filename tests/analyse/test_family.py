"""Many trials × metrics at once: Holm and Benjamini–Hochberg keep the family's false alarms down."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from kubebench.analyse.family import (
    Check,
    adjust,
    directional_p,
    gate_fails,
    run_family,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from history_check import aa_family_false_alarms  # noqa: E402  (the bench's simulation, shared)


def test_holm_and_bh_match_their_definitions() -> None:
    p = [0.01, 0.04, 0.03, 0.005, float("nan")]
    holm = adjust(p, "holm")
    assert holm[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and np.isnan(holm[4])
    bh = adjust(p, "bh")
    assert bh[:4] == pytest.approx([0.02, 0.04, 0.04, 0.02])
    with pytest.raises(ValueError, match="correction must be one of"):
        adjust(p, "bonferroni")  # type: ignore[arg-type]


def test_the_decision_p_is_the_larger_one_sided_p_doubled() -> None:
    rng = np.random.default_rng(0)
    b, c = rng.normal(100, 2, 12), rng.normal(97, 2, 12)
    p, direction = directional_p(b, c)
    t = stats.ttest_ind(c, b, equal_var=False, alternative="less").pvalue
    u = stats.mannwhitneyu(c, b, alternative="less").pvalue
    assert direction == -1 and p == pytest.approx(2 * max(t, u), rel=1e-6)
    assert np.isnan(directional_p([1.0], [1.0, 2.0])[0])


def test_an_aa_family_of_20_trials_by_5_metrics_rarely_fails() -> None:
    # the figure: family-wise false alarms of `check` ≤ 5%, here on 20 seeded families (each of
    # 100 exact Mann–Whitney tests, ~0.5 s a family on a 2-core machine); bench/history_check.py
    # measures 400 (1.0%).
    assert aa_family_false_alarms(20, "holm") <= 0.05


def test_a_real_regression_in_a_big_family_still_fails_the_gate() -> None:
    rng = np.random.default_rng(3)
    tests = [Check({"t": i}, "ips", "maximize", tuple(rng.normal(1000, 20, 50)), tuple(rng.normal(1000, 20, 5)), 0.02)
             for i in range(99)]
    tests.append(Check({"t": 99}, "ips", "maximize", tuple(rng.normal(1000, 20, 50)), tuple(rng.normal(900, 20, 10)), 0.02))
    outcomes = run_family(tests, "holm")
    assert [o.test.params["t"] for o in outcomes if o.fails] == [99] and gate_fails(tests, "holm")
    assert not gate_fails(tests[:-1], "holm")
    assert outcomes[-1].adjusted_p < 0.05 <= min(o.adjusted_p for o in outcomes[:-1])


def test_goal_and_threshold_decide_the_verdict() -> None:
    base, slower = tuple(np.linspace(99, 101, 20)), tuple(np.linspace(97.5, 99.5, 20))
    [latency] = run_family([Check({}, "latency", "minimize", base, slower, 0.02)])
    assert latency.verdict == "improved" and not latency.fails
    [small] = run_family([Check({}, "ips", "maximize", base, slower, 0.10)])
    assert small.verdict == "unchanged"  # 1.5% slower, confidently within ±10%
    [short] = run_family([Check({}, "ips", "maximize", (1.0,), slower, 0.02)])
    assert short.verdict == "inconclusive"
