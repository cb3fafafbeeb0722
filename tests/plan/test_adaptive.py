"""Adaptive repeats: convergence rule and rounds."""

from __future__ import annotations

from kubebench.numerics.sequential import Design, interval
from kubebench.numerics.stats import summarize
from kubebench.plan.adaptive import converged, next_round
from kubebench.plan.plan import Trial, make_run
from kubebench.spec.model import AdaptiveRepeats

POLICY = AdaptiveRepeats(min=3, max=6, target_ci=0.02)


def test_converged_needs_min_values_and_a_tight_ci() -> None:
    assert not converged([100.0, 100.1], POLICY)  # fewer than min
    assert converged([100.0, 100.1, 99.9], POLICY)  # half-width ≈ 0.25%
    assert not converged([90.0, 110.0, 100.0], POLICY)  # half-width ≈ 25%
    assert not converged([], POLICY)


def test_next_round_keeps_only_unconverged_trials_under_max() -> None:
    tight, loose, full = Trial("t1", 0, {"a": 1}), Trial("t2", 1, {"a": 2}), Trial("t3", 2, {"a": 3})
    values = {"t1": [100.0, 100.1, 99.9], "t2": [90.0, 110.0, 100.0], "t3": [90.0, 110.0, 100.0] * 2}
    done = {"t1": 3, "t2": 3, "t3": 6}
    runs = next_round([tight, loose, full], values, done, 3, POLICY)
    assert runs == [make_run(loose, 3)]
    assert next_round([loose], values, done, 6, POLICY) == []


def test_run_ids_of_adaptive_rounds_are_stable() -> None:
    trial = Trial("t", 0, {})
    assert make_run(trial, 4).id == make_run(trial, 4).id != make_run(trial, 5).id


def test_a_trial_without_runs_or_values_yet_gets_the_next_round() -> None:
    fresh = Trial("new", 0, {"a": 9})
    assert next_round([fresh], {}, {}, 0, POLICY) == [make_run(fresh, 0)]


def test_a_ci_exactly_at_the_target_has_converged() -> None:
    values = [100.0, 101.0, 99.0]
    low, high = interval(values, Design(3, 6), 0.95)  # the repeated CI: "below target_ci" includes the target itself
    target = (high - low) / 2 / 100.0
    assert converged(values, AdaptiveRepeats(min=3, max=6, target_ci=target))
    assert not converged(values, AdaptiveRepeats(min=3, max=6, target_ci=target * 0.999))
