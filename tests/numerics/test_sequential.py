"""Tests of kubebench.numerics.sequential: the boundaries, the decision rule, and its error rates on
seeded simulations (the figures of docs/statistics.md, "Sequential decisions", on fewer trials)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kubebench.numerics.sequential import Design, boundaries, decide, fractions, interval, looks
from kubebench.testing.sequential import fixed, sequential

DESIGN = Design(3, 20)


def test_one_look_is_the_fixed_sample_test() -> None:
    assert boundaries((1.0,), 0.10) == (pytest.approx(NormalDist().inv_cdf(0.95)),)


def test_boundaries_spend_the_error_rate_over_the_looks() -> None:
    """Monte Carlo over Brownian paths observed at the looks of a 3…20-run candidate against 10 base
    runs: the share that ever crosses is the level, and the share crossing by each look follows
    the spending function level × t."""
    info = fractions(looks(3, 20), 10)
    c = np.array(boundaries(info, 0.10))
    rng = np.random.default_rng(5)
    steps = np.diff(np.concatenate([[0.0], info]))
    paths = np.cumsum(rng.standard_normal((60_000, len(info))) * np.sqrt(steps), axis=1)
    crossed = np.abs(paths / np.sqrt(info)) >= c
    assert crossed.any(axis=1).mean() == pytest.approx(0.10, abs=0.006)
    assert crossed[:, :5].any(axis=1).mean() == pytest.approx(0.10 * info[4], abs=0.006)
    assert all(b > NormalDist().inv_cdf(0.95) for b in c)  # every look pays for looking again


def test_information_is_capped_by_the_base() -> None:
    assert fractions((5, 10), math.inf) == (0.5, 1.0)
    small_base = fractions((5, 10, 1000), 3)
    assert small_base[1] > 0.75  # against 3 base runs, 10 candidate runs already tell most of what 1000 would


def test_looks_are_every_run_or_spread_evenly() -> None:
    assert looks(3, 6) == (3, 4, 5, 6)
    many = looks(2, 1000)
    assert len(many) == 40 and many[0] == 2 and many[-1] == 1000


def test_a_clear_regression_is_decided_at_the_first_look_and_the_goal_gives_its_direction() -> None:
    base = [100.0, 100.2, 99.8, 100.1, 99.9]
    slower = [90.0, 90.1, 89.9]
    d = decide(base, slower, DESIGN, "maximize")
    assert (d.verdict, d.runs, d.base_runs, d.sequential) == ("regressed", 3, 5, True)
    assert d.ci[1] < 1 and d.change == pytest.approx(-0.1, abs=0.002)
    assert decide(base, slower, DESIGN, "minimize").verdict == "improved"
    assert decide(base, [100.0, 100.1, 99.9], DESIGN, "maximize").verdict == "unchanged"


def test_before_the_first_look_it_waits_and_at_max_it_is_inconclusive() -> None:
    base = [100.0, 104.0, 96.0, 102.0, 98.0]
    assert not decide(base, [100.0, 103.0], DESIGN, "maximize").decided  # first look at 3 runs
    noisy = [100.0, 106.0, 94.0]
    assert decide(base, noisy, DESIGN, "maximize").verdict is None
    at_max = decide(base, noisy, Design(3, 3), "maximize")
    assert at_max.verdict == "inconclusive" and "after 3 runs" in at_max.reason
    assert decide(base, noisy, DESIGN, "maximize", last=True).verdict == "inconclusive"  # its other runs failed


def test_a_base_without_two_values_cannot_be_decided_against() -> None:
    d = decide([100.0], [90.0, 91.0, 92.0], DESIGN, "maximize")
    assert d.verdict == "inconclusive" and d.reason == "the base has 1 value (a decision needs 2)"


def test_constant_values_are_decided_by_their_difference() -> None:
    assert decide([5.0] * 3, [5.0] * 3, DESIGN, "maximize").verdict == "unchanged"
    assert decide([5.0] * 3, [4.0] * 3, DESIGN, "maximize").verdict == "regressed"


def test_values_at_or_below_zero_are_compared_on_differences() -> None:
    d = decide([-1.0, -1.01, -0.99, -1.0], [-1.2, -1.21, -1.19], DESIGN, "maximize")
    assert d.verdict == "regressed" and d.ratio == pytest.approx(0.8, abs=0.01)


@settings(max_examples=60, deadline=None)
@given(st.integers(-300, 300))
def test_decisions_are_scale_free(exponent: int) -> None:
    base = [1.0, 1.02, 0.98, 1.01, 0.99]
    candidate = [0.97, 0.96, 0.975, 0.965]
    reference = decide(base, candidate, DESIGN, "maximize")
    scale = 10.0**exponent
    scaled = decide([v * scale for v in base], [v * scale for v in candidate], DESIGN, "maximize")
    assert scaled.verdict == reference.verdict == "regressed"
    assert scaled.ratio == pytest.approx(reference.ratio, rel=1e-9)
    assert scaled.ci == pytest.approx(reference.ci, rel=1e-9)


def test_the_one_sample_interval_is_repeated_and_waits_for_its_looks() -> None:
    design = Design(2, 6)
    assert interval([1.0], design, 0.95) == (pytest.approx(math.nan, nan_ok=True),) * 2
    low, high = interval([1.0, 1.1, 0.9, 1.05], design, 0.95)
    fixed_half = 3.182 * np.std([1.0, 1.1, 0.9, 1.05], ddof=1) / 2  # the plain 95% t-interval's
    assert low < 1.0125 - fixed_half and high > 1.0125 + fixed_half


def test_seeded_decisions_meet_the_targets_with_fewer_runs_than_a_fixed_ten() -> None:
    """CV 2%, a base of 10 runs, 500 seeded trials per case (docs/statistics.md has 4000): false
    `regressed` ≤ 5% on equal distributions, a 3% regression found ≥ 90% of the time, and the
    mean runs ≤ 60% of a fixed 10-run comparison's."""
    equal, worse = sequential(0.0, DESIGN, 500, 28), sequential(-0.03, DESIGN, 500, 28)
    assert sorted(equal.verdicts.items()) == [("improved", 19), ("inconclusive", 3), ("regressed", 17),
                                              ("unchanged", 461)]
    assert sorted(worse.verdicts.items()) == [("inconclusive", 2), ("regressed", 451), ("unchanged", 47)]
    assert (equal.runs, worse.runs) == (2938, 2509)
    assert equal.rate("regressed") <= 0.05 and worse.rate("regressed") >= 0.90
    assert (equal.mean_runs + worse.mean_runs) / 2 <= 0.6 * 10
    once = Design(10, 10)

    def read_once(base, candidate) -> str:
        return decide(base, candidate, once, "maximize").verdict or "inconclusive"

    fixed_equal, fixed_worse = fixed(0.0, 10, 500, 28, read_once), fixed(-0.03, 10, 500, 28, read_once)
    assert (fixed_equal.rate("regressed"), fixed_worse.rate("regressed")) == (0.072, 0.934)
    assert fixed_equal.mean_runs == fixed_worse.mean_runs == 10
