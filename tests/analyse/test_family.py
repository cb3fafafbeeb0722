"""Many trials × metrics at once: Holm and Benjamini–Hochberg keep the family's false alarms down."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from kubebench.analyse.compare import compare
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


def test_the_decision_p_is_the_one_sided_p_doubled() -> None:
    rng = np.random.default_rng(0)
    b, c = rng.normal(100, 2, 12), rng.normal(97, 3, 12)  # a noisier candidate: Welch's branch
    p, direction = directional_p(b, c)
    t = stats.ttest_ind(np.log(c), np.log(b), equal_var=False, trim=0.1, alternative="less").pvalue
    assert direction == -1 and p == pytest.approx(2 * t, rel=1e-6)
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
    base, lower = tuple(np.linspace(99, 101, 20)), tuple(np.linspace(96, 98, 20))
    [latency] = run_family([Check({}, "latency", "minimize", base, lower, 0.02)])
    assert latency.verdict == "improved" and not latency.fails
    [throughput] = run_family([Check({}, "ips", "maximize", base, lower, 0.02)])
    assert throughput.verdict == "regressed" and throughput.fails
    [small] = run_family([Check({}, "ips", "maximize", base, lower, 0.10)])
    assert small.verdict == "unchanged"  # 3% slower, confidently within ±10%
    [short] = run_family([Check({}, "ips", "maximize", (1.0,), lower, 0.02)])
    assert short.verdict == "inconclusive"


def test_a_change_the_family_does_not_show_is_inconclusive_not_unchanged() -> None:
    # 10 runs a side at 2% noise, no true change: nothing significant, and the ratio's CI reaches
    # beyond ±2% — not evidence of no change (compare says the same of a lone trial)
    rng = np.random.default_rng(5)
    tests = [Check({"t": i}, "ips", "maximize", tuple(rng.normal(100, 2, 10)), tuple(rng.normal(100, 2, 10)), 0.02)
             for i in range(5)]
    outcomes = run_family(tests, "holm")
    wide = [o for o in outcomes if not (0.98 <= o.comparison.ratio_ci[0] and o.comparison.ratio_ci[1] <= 1.02)]
    assert wide and all(o.verdict == "inconclusive" for o in wide)
    assert all(o.verdict == o.comparison.verdict == "unchanged" for o in outcomes if o not in wide)


TWO = (100.0, 100.2)  # two runs: the fewest that get a verdict
LOWER = tuple(np.linspace(89.0, 91.0, 20))


def test_an_outcome_carries_compare_s_comparison_and_the_two_sided_decision_p() -> None:
    tests = [Check({"t": 0}, "ips", "maximize", TWO, LOWER, 0.02),
             Check({"t": 1}, "ips", "maximize", (1.0, 2.0, 3.0), (1.0, 2.0, 3.0), 0.02)]  # no direction at all
    outcomes = run_family(tests, "holm", alpha=0.04)
    for o, t in zip(outcomes, tests):
        assert o.p_value == directional_p(t.base, t.candidate)[0]
        assert o.comparison.to_dict() == compare(t.base, t.candidate, goal="maximize", threshold=0.02, alpha=0.04).to_dict()
    assert directional_p(TWO, LOWER)[1] == -1 and outcomes[0].verdict == "regressed"  # 2 base values suffice
    assert directional_p((1.0, 2.0, 3.0), (1.0, 2.0, 3.0)) == (1.0, 0)  # a p, never above 1
    [short] = run_family([Check({}, "ips", "maximize", LOWER, (110.0, 110.2), 0.02)])
    assert short.verdict == "improved"  # 2 candidate values suffice, and higher throughput is better


def test_significant_means_an_adjusted_p_strictly_below_alpha() -> None:
    test = Check({}, "ips", "maximize", TWO, LOWER, 0.02)
    [o] = run_family([test])
    assert 0 < o.adjusted_p < 0.05 and o.verdict == "regressed" and o.fails
    [at] = run_family([test], alpha=o.adjusted_p)
    assert at.verdict == "inconclusive" and not at.fails and not gate_fails([test], alpha=o.adjusted_p)


def test_a_ratio_ci_on_the_edge_of_the_threshold_is_unchanged() -> None:
    # constant runs: the CI is the ratio itself, exactly 0.75 or 1.25 (binary fractions), on the ±25% band
    for candidate in (75.0, 125.0):
        [o] = run_family([Check({}, "ips", "maximize", (100.0,) * 10, (candidate,) * 10, 0.25)])
        assert o.comparison.ratio_ci == (candidate / 100, candidate / 100) and o.verdict == "unchanged"


def test_the_gate_holds_each_test_to_its_own_threshold_with_holm_by_default() -> None:
    base = tuple(np.linspace(99.9, 100.1, 20))
    lost_1pct = Check({}, "ips", "maximize", base, tuple(v * 0.99 for v in base), 0.005)  # CI within ±2%, not ±0.5%
    [o] = run_family([lost_1pct])
    assert o.verdict == "regressed" and o.fails and gate_fails([lost_1pct])
    assert not gate_fails([dataclasses.replace(lost_1pct, threshold=0.02)])
    with pytest.raises(ValueError, match="correction must be one of"):
        gate_fails([lost_1pct], "bonferroni")  # type: ignore[arg-type]


def _runs(experiment: str, trials: dict[int, list[float]]) -> list:
    from kubebench.store.records import RunRecord

    return [RunRecord(run_id=f"{experiment}-{t}-{r}", experiment_id=experiment, trial_id=f"t{t}", repeat=r, warmup=False,
                      status="succeeded", params={"t": t}, metrics={"ips": v})
            for t, values in trials.items() for r, v in enumerate(values)]


def test_compare_over_many_trials_keeps_only_the_changes_the_family_shows() -> None:
    from kubebench.analyse.experiments import compare_experiments

    rng = np.random.default_rng(11)
    base = {t: list(rng.normal(100, 2, 10)) for t in range(8)} | {8: list(np.linspace(97, 103, 10))}
    base[9] = base[8]
    candidate = {t: list(rng.normal(100, 2, 10)) for t in range(8)}
    candidate[8] = [v - 2.5 for v in base[8]]  # a modest drop: significant alone (p≈0.016), not over 10 trials
    candidate[9] = [v - 15 for v in base[9]]  # a large drop: significant however many trials
    b, c = _runs("b", base), _runs("c", candidate)
    alone = {r.params["t"]: r for r in compare_experiments(b, c, "ips", "maximize", correction=None)}
    holm = {r.params["t"]: r for r in compare_experiments(b, c, "ips", "maximize")}
    assert alone[8].comparison.verdict == "regressed" and alone[8].correction == ""
    assert holm[8].comparison.verdict == "inconclusive" and holm[8].adjusted_p >= 0.05
    assert holm[8].comparison.reason.startswith("significant alone (p=") and "over the 10 trials" in holm[8].comparison.reason
    assert holm[9].comparison.verdict == "regressed" and holm[9].adjusted_p < 0.05
    assert holm[9].to_dict()["correction"] == "holm" and holm[9].to_dict()["adjusted_p"] == holm[9].adjusted_p
    # one trial alone: judged as compare() judges it, whatever the correction
    lone = compare_experiments(_runs("b", {8: base[8]}), _runs("c", {8: candidate[8]}), "ips", "maximize")
    assert lone[0].comparison.verdict == "regressed"


def test_compare_s_family_wise_false_alarms_over_20_equal_trials_stay_under_alpha() -> None:
    from kubebench.analyse.experiments import compare_experiments

    # as compare() promises of one trial, per direction: a false "regressed" anywhere in the family at
    # most alpha of the time, a false "improved" too (200 families: 2.5% and 3.0%; uncorrected 44% and 52%)
    rng = np.random.default_rng(2026)
    alarms = {(correction, verdict): 0 for correction in ("holm", None) for verdict in ("regressed", "improved")}
    families = 60
    for _ in range(families):
        b = _runs("b", {t: list(rng.normal(100, 2, 10)) for t in range(20)})
        c = _runs("c", {t: list(rng.normal(100, 2, 10)) for t in range(20)})
        for correction in ("holm", None):
            verdicts = {r.comparison.verdict for r in compare_experiments(b, c, "ips", "maximize", correction=correction)}
            for verdict in ("regressed", "improved"):
                alarms[correction, verdict] += verdict in verdicts
    assert alarms["holm", "regressed"] / families <= 0.05 and alarms["holm", "improved"] / families <= 0.05
    assert alarms[None, "regressed"] / families > 0.2  # uncorrected, 20 trials cry wolf in many families
