"""The decision every verdict comes from (analyse/decision.py): reachable at few runs, read off its CI,
robust to one outlier run in ten, the same at any scale; and bench/gate_power.py's figures on fewer pairs."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kubebench.analyse.compare import compare
from kubebench.analyse.decision import decide

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gate_power import outlier_kept, verdict_rates  # noqa: E402  (the bench's simulation, shared)

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.7, 99.3, 100.1]


def test_a_decision_carries_its_verdict_ci_p_and_runs() -> None:
    d = decide([v * 0.9 for v in BASE[:3]], BASE[:3], goal="maximize", threshold=0.02, alpha=0.05)
    assert d.verdict == "regressed" and d.direction == -1 and d.p < 0.05
    assert d.confidence == pytest.approx(0.9) and d.ci[0] < d.ratio < d.ci[1] < 1
    assert d.ratio == pytest.approx(0.9) and d.n == (3, 3) and d.trimmed == (0, 0)
    assert math.isnan(d.detectable)  # said only of an inconclusive verdict
    time = decide([v * 1.1 for v in BASE], BASE, goal="minimize")
    assert time.verdict == "regressed" and time.trimmed == (1, 1)
    with pytest.raises(ValueError, match="goal"):
        decide(BASE, BASE, goal="fastest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="alpha"):
        decide(BASE, BASE, alpha=0.5)


@settings(max_examples=300, deadline=None)
@given(base=st.lists(st.floats(50.0, 150.0), min_size=2, max_size=12),
       candidate=st.lists(st.floats(50.0, 150.0), min_size=2, max_size=12),
       threshold=st.sampled_from([0.0, 0.02, 0.1]), alpha=st.sampled_from([0.01, 0.05, 0.2]))
def test_the_verdict_is_read_off_the_ci(base: list[float], candidate: list[float], threshold: float, alpha: float) -> None:
    d = decide(candidate, base, threshold=threshold, alpha=alpha)
    low, high = d.ci
    assert low <= d.ratio <= high
    if 1 - threshold <= low and high <= 1 + threshold:
        assert d.verdict == "unchanged"
    elif d.verdict == "regressed":
        assert high < 1 and d.p < alpha
    elif d.verdict == "improved":
        assert low > 1 and d.p < alpha
    else:
        assert d.verdict == "inconclusive" and low <= 1 <= high and not d.p < alpha


def test_the_ux_review_s_regression_on_3_runs_a_side_fails_the_gate() -> None:
    # UX review 2026-12-02 #1: ratio 0.904 [0.898–0.905] on 3 runs a side was inconclusive, and the gate passed
    base = [866_200.0, 868_900.0, 864_100.0]
    d = decide([v * 0.904 for v in base], base)
    assert d.verdict == "regressed" and d.ci[1] < 0.91


# --- one outlier run in ten ---------------------------------------------------------------------------------


def test_an_outlier_run_does_not_flip_what_nine_runs_show() -> None:
    nine = [v * 0.95 for v in BASE[:9]]
    assert decide(nine, BASE).verdict == "regressed"
    for outlier in (30.0, 60.0, 150.0, 500.0):  # one run far out either way (a noisy neighbour, a cache hit)
        assert decide([*nine, outlier], BASE).verdict == "regressed"
        assert decide(BASE, [*nine, outlier]).verdict == "improved"
    level = BASE[:9]
    assert decide(level, BASE).verdict == "unchanged"
    for outlier in (30.0, 500.0):
        assert decide([*level, outlier], BASE).verdict == "unchanged"


def test_seeded_pairs_that_nine_runs_decide_keep_their_verdict_with_a_tenth_outlier() -> None:
    # bench/gate_power.py's third table on 100 seeded pairs: the rule before #28 (Welch's test had to agree)
    # kept 0–50% of them
    for shift, factor in ((-0.03, 0.5), (-0.03, 3.0), (0.03, 3.0)):
        supported, kept = outlier_kept(shift, factor, 100)
        assert supported >= 60 and kept == supported


# --- scale-free: Welch's test on raw values gave p = nan near 1e-100 -----------------------------------------

RELATIVE = [1.0, 1.013, 0.994, 1.021, 0.988, 1.004]


@settings(max_examples=200, deadline=None)
@given(exponent=st.floats(-300.0, 300.0), loss=st.sampled_from([0.0, 0.01, 0.05]))
def test_a_comparison_is_the_same_at_every_scale_from_1e_300_to_1e300(exponent: float, loss: float) -> None:
    scale = 10.0**exponent
    base, candidate = RELATIVE, [v * (1 - loss) for v in RELATIVE[::-1]]
    at_one = compare(base, candidate, goal="maximize")
    scaled = compare([v * scale for v in base], [v * scale for v in candidate], goal="maximize")
    assert scaled.verdict == at_one.verdict and not math.isnan(scaled.p_value)
    assert scaled.p_value == pytest.approx(at_one.p_value, rel=1e-6)
    assert scaled.ratio_ci == pytest.approx(at_one.ratio_ci, rel=1e-9)


# --- bench/gate_power.py's figures, on fewer pairs -----------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 5])
def test_false_alarms_stay_under_alpha_from_2_runs_a_side(n: int) -> None:
    # bench (4000 pairs): 2 runs 3.3%, 3 runs 4.3%, 5 runs 4.3% false regressed at CV 2%
    assert verdict_rates(n, 0.02, 0.0, 400, seed=2000 + n)["regressed"] <= 0.05


def test_three_runs_a_side_find_a_10_percent_loss_and_mostly_a_5_percent_one() -> None:
    assert verdict_rates(3, 0.02, 0.10, 200, seed=4003)["regressed"] >= 0.95
    assert verdict_rates(3, 0.02, 0.05, 200, seed=4003)["regressed"] >= 0.70
