"""Tests of kubebench.analyse.quality: warnings about numbers that cannot be trusted, with their cause."""

from __future__ import annotations

from kubebench.analyse import quality
from kubebench.analyse.studies import scaling_efficiency
from kubebench.numerics.stats import summarize


def test_a_ci_reaching_below_zero_for_a_non_negative_metric_means_n_too_small() -> None:
    # Two throughputs far apart: the t-interval of n=2 (t = 12.7) reaches far below zero.
    spread = summarize([487.0, 6401.0])
    assert spread.ci_low < 0 and quality.ci_crosses_zero(spread)
    assert not quality.ci_crosses_zero(summarize([100.0, 101.0, 99.0]))
    assert not quality.ci_crosses_zero(summarize([-5.0, 3.0]))  # a metric that can be negative
    assert not quality.ci_crosses_zero(summarize([5.0]))  # no CI at all
    (warning,) = quality.zero_crossing_warning(["workers=1", "workers=2"])
    assert warning.startswith("workers=1; workers=2: n too small: the 95% CI reaches below zero")


def test_a_trial_whose_runs_disagree_far_more_than_the_others_is_flagged() -> None:
    cvs = {"workers=1": 1.34, "workers=2": 0.03, "workers=4": 0.05}
    (warning,) = quality.cv_outliers(cvs)
    assert warning.startswith("workers=1: its runs disagree (CV 134%, the other trials 4%)")
    assert quality.cv_outliers({"a": 0.05, "b": 0.01, "c": 0.012}) == []  # above 3×, but a quiet 5%
    assert quality.cv_outliers({"a": 0.5}) == []  # nothing to compare with
    assert quality.cv_outliers({"a": 0.5, "b": float("nan")}) == []


def test_superlinear_scaling_is_flagged_with_its_likely_cause() -> None:
    # The review's demo: an erratic 1-worker baseline (6401, 487, 649 images/s) and 2 workers at ~2400.
    points = scaling_efficiency({1: [6401.0, 487.0, 649.0], 2: [2400.0, 2300.0, 2500.0]})
    assert points[1].efficiency > 1.8
    (warning,) = quality.scaling_warnings(points, "batch_size=16")
    assert warning.startswith(f"batch_size=16: efficiency {points[1].efficiency:.0%} at 2 workers is above 100%")
    assert "the 1-worker baseline is erratic (CV" in warning and "threads per replica" in warning
    steady = scaling_efficiency({1: [100.0, 101.0, 99.0], 2: [205.0, 206.0, 204.0]})
    (warning,) = quality.scaling_warnings(steady)
    assert "erratic" not in warning and "like-for-like resources" in warning
    assert quality.scaling_warnings(scaling_efficiency({1: [100.0, 100.0], 2: [190.0, 190.0]})) == []
    assert quality.scaling_warnings(scaling_efficiency({1: [100.0, 100.0], 2: [201.0, 201.0]})) == []  # noise


def test_superlinear_warning_texts_and_their_thresholds() -> None:
    like_for_like = "the replicas may not get like-for-like resources (threads per replica, CPU share)"
    advice = "; fix the threads per replica and check the baseline's runs"
    # No label: the warning starts with the figure itself.
    steady = scaling_efficiency({1: [100.0, 101.0, 99.0], 2: [205.0, 206.0, 204.0]})
    assert quality.scaling_warnings(steady) == [
        f"efficiency {steady[1].efficiency:.0%} at 2 workers is above 100% (superlinear): {like_for_like}{advice}"
    ]
    # Exactly 102% is still within the noise allowed; only above it is superlinear.
    edge = scaling_efficiency({1: [100.0, 100.0], 2: [204.0, 204.0]})
    assert edge[1].efficiency == 1.02 and quality.scaling_warnings(edge) == []
    # A baseline CV of exactly 10% is not yet erratic; above it, the warning names it first.
    at_cv = scaling_efficiency({1: [90.0, 100.0, 110.0], 2: [210.0, 210.0, 210.0]})
    assert at_cv[0].throughput.cv == 0.10
    assert quality.scaling_warnings(at_cv, "x") == [
        f"x: efficiency 105% at 2 workers is above 100% (superlinear): {like_for_like}{advice}"
    ]
    erratic = scaling_efficiency({1: [80.0, 100.0, 120.0], 2: [210.0, 210.0, 210.0]})
    assert quality.scaling_warnings(erratic, "x") == [
        "x: efficiency 105% at 2 workers is above 100% (superlinear): the 1-worker baseline is erratic "
        f"(CV 20%), or {like_for_like}{advice}"
    ]


def test_superlinear_points_are_flagged_even_without_their_baseline_point() -> None:
    # A report may show only some worker counts: the warning still comes, without the baseline's CV.
    points = scaling_efficiency({1: [80.0, 100.0, 120.0], 2: [210.0, 210.0, 210.0], 4: [400.0]})
    (warning,) = quality.scaling_warnings(points[1:])
    assert warning.startswith("efficiency 105% at 2 workers") and "erratic" not in warning
    assert quality.scaling_warnings([]) == []


def test_any_trial_with_a_high_cv_is_unstable_not_only_one_far_above_the_others() -> None:
    """Review 2026-12-02 #20: the README quickstart's CVs of 28% and 21% gave no warning, because
    neither trial's CV is an outlier among the trials'."""
    assert quality.cv_outliers({"n=1": 0.281, "n=2": 0.215}) == []
    first, second = quality.noise_warnings({"n=1": 0.281, "n=2": 0.215, "n=3": 0.02})
    assert first.startswith("n=1: unstable: CV 28% > 10%: its runs disagree")
    assert second.startswith("n=2: unstable: CV 22% > 10%")
    (outlier,) = quality.noise_warnings({"a": 0.5, "b": 0.01, "c": 0.012})
    assert outlier.startswith("a: unstable: CV 50% > 10%, far above the other trials' 1%")
    assert quality.noise_warnings({"a": 0.10, "b": float("nan"), "c": None}) == []  # at the limit: quiet enough
