"""Edges of kubebench.analyse.quality's warnings: the exact limits, the whole texts, the label list."""

from __future__ import annotations

from kubebench.analyse import quality
from kubebench.numerics.stats import summarize

CV_ADVICE = "likely a noisy neighbour, throttling or a run that hit a cold cache: check its runs and add repeats"
ZERO_ADVICE = ("n too small: the 95% CI reaches below zero for a metric that cannot be negative; "
               "add repeats for a usable interval")


def test_a_metric_whose_smallest_value_is_zero_still_counts_as_non_negative() -> None:
    # 0 and 100: a metric that can be zero (no images in a failed step) but never below it
    zero_and_high = summarize([0.0, 100.0])
    assert zero_and_high.min == 0 and zero_and_high.ci_low < 0
    assert quality.ci_crosses_zero(zero_and_high)
    assert quality.ci_crosses_zero(summarize([0.5, 100.0]))  # below 1 is still non-negative


def test_a_ci_that_ends_exactly_at_zero_does_not_reach_below_it() -> None:
    all_zero = summarize([0.0, 0.0])
    assert all_zero.ci_low == 0.0
    assert not quality.ci_crosses_zero(all_zero)


def test_a_cv_of_exactly_the_minimum_is_not_an_outlier() -> None:
    assert quality.cv_outliers({"a": 0.10, "b": 0.01, "c": 0.01}) == []
    assert len(quality.cv_outliers({"a": 0.11, "b": 0.01, "c": 0.01})) == 1


def test_a_cv_of_exactly_the_factor_times_the_others_is_not_an_outlier() -> None:
    # 0.75 = 3 × 0.25 exactly in binary floating point
    assert quality.cv_outliers({"a": 0.75, "b": 0.25, "c": 0.25}) == []
    assert len(quality.cv_outliers({"a": 0.76, "b": 0.25, "c": 0.25})) == 1


def test_the_cv_outlier_warning_text_in_full() -> None:
    assert quality.cv_outliers({"workers=1": 0.5, "workers=2": 0.02, "workers=4": 0.04}) == [
        f"workers=1: its runs disagree (CV 50%, the other trials 3%); {CV_ADVICE}"
    ]


def test_a_trial_without_a_finite_cv_is_left_out_of_the_others_median() -> None:
    # with the nan among the others, their median would be nan and hide the outlier
    (warning,) = quality.cv_outliers({"a": 0.5, "b": 0.01, "c": float("nan")})
    assert warning.startswith("a: its runs disagree (CV 50%, the other trials 1%)")
    (warning,) = quality.cv_outliers({"a": 0.5, "b": 0.01, "c": None})
    assert warning.startswith("a: its runs disagree (CV 50%, the other trials 1%)")


def test_the_zero_crossing_warning_text_in_full() -> None:
    assert quality.zero_crossing_warning(["a"]) == [f"a: {ZERO_ADVICE}"]
    assert quality.zero_crossing_warning([]) == []


def test_up_to_three_labels_are_all_named() -> None:
    assert quality.zero_crossing_warning(["a", "b", "c"]) == [f"a; b; c: {ZERO_ADVICE}"]


def test_beyond_three_labels_the_rest_are_counted() -> None:
    assert quality.zero_crossing_warning(["a", "b", "c", "d"]) == [f"a; b; c and 1 more: {ZERO_ADVICE}"]
    assert quality.zero_crossing_warning(["a", "b", "c", "d", "e", "f"]) == [f"a; b; c and 3 more: {ZERO_ADVICE}"]
