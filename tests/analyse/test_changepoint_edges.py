"""Edges of kubebench.analyse.changepoint: accepted cuts, windows, what is passed on, the penalty, the cost."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kubebench.analyse.changepoint import Floor, WeightedL2, _penalty, binary_segmentation, candidates_of, detect
from kubebench.analyse.compare import compare


def _levels(levels: list[float], runs: int = 5, cv: float = 0.02, seed: int = 1) -> list[list[float]]:
    """A seeded series: one point of ``runs`` values per level, with noise of ``cv`` (seed 1: its flat
    stretches of 10 points show no change by chance, as ~3% of seeds' do)."""
    rng = np.random.default_rng(seed)
    return [(level * (1 + cv * rng.standard_normal(runs))).tolist() for level in levels]


def _steady(levels: list[float]) -> list[list[float]]:
    """Every point the same three runs (−2%, 0, +2%) around its level: no noise between points."""
    return [[level * (1 + 0.02 * d) for d in (-1.0, 0.0, 1.0)] for level in levels]


# --- detect: accepted changes ---

def test_each_accepted_change_compares_only_the_points_up_to_its_neighbours() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10 + [1210.0] * 10)
    changes = detect(points, goal="maximize", accepted={10, 20})
    assert [(c.index, c.accepted) for c in changes] == [(10, True), (20, True)]
    for change in changes:  # points [0, 10) against [10, 20), then [10, 20) against [20, 30)
        assert (change.comparison.base.n, change.comparison.candidate.n) == (50, 50)
        assert 0.08 < change.comparison.change < 0.12


def test_an_accepted_change_near_the_start_compares_from_the_first_point() -> None:
    points = _levels([1000.0] * 3 + [1100.0] * 7)
    [change] = [c for c in detect(points, goal="maximize", accepted={3}) if c.accepted]
    assert (change.comparison.base.n, change.comparison.candidate.n) == (15, 35)


def test_an_accepted_change_at_the_second_point_is_reported() -> None:
    points = _steady([100.0] * 10)
    [change] = detect(points, goal="maximize", accepted={1})
    assert (change.index, change.accepted) == (1, True)
    assert (change.comparison.base.n, change.comparison.candidate.n) == (3, 27)


def test_accepted_indices_outside_the_series_cut_nothing() -> None:
    points = _steady([100.0] * 10)
    assert detect(points, goal="maximize", accepted={0, 10, 11, -1}) == []


def test_an_accepted_change_without_a_note_has_an_empty_note() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10)
    assert [c.note for c in detect(points, goal="maximize", accepted={10})] == [""]
    assert [c.note for c in detect(points, goal="maximize", accepted={10}, notes={5: "other"})] == [""]


def test_an_accepted_change_is_compared_with_the_given_threshold_and_alpha() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10)
    [change] = detect(points, goal="maximize", accepted={10}, threshold=0.05, alpha=0.01)
    assert (change.comparison.threshold, change.comparison.alpha) == (0.05, 0.01)
    [change] = detect(points, goal="maximize", accepted={10})
    assert (change.comparison.threshold, change.comparison.alpha) == (0.02, 0.05)  # kubebench compare's


def test_changes_before_an_accepted_one_are_kept() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10 + [1210.0] * 10)
    changes = detect(points, goal="maximize", accepted={20})
    assert [(c.index, c.accepted) for c in changes] == [(10, False), (20, True)]


# --- detect: confirmation of the candidates ---

def test_a_detected_change_is_compared_with_the_given_threshold_and_alpha() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10)
    [change] = detect(points, goal="maximize", threshold=0.05, alpha=0.01)
    assert (change.index, change.comparison.threshold, change.comparison.alpha) == (10, 0.05, 0.01)
    [change] = detect(points, goal="maximize")
    assert (change.comparison.threshold, change.comparison.alpha) == (0.02, 0.05)


def test_the_penalty_is_passed_to_the_segmentation() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10)
    assert [c.index for c in detect(points, goal="maximize")] == [10]
    assert detect(points, goal="maximize", penalty=1e6) == []


def test_a_candidate_the_comparison_does_not_confirm_is_dropped() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10)
    # a 10% step, but within a 50% threshold: the comparison says unchanged, so no change
    assert detect(points, goal="maximize", threshold=0.5) == []


def test_each_detected_change_compares_only_the_points_up_to_its_neighbours() -> None:
    points = _levels([1000.0] * 10 + [1100.0] * 10 + [1000.0] * 10)
    changes = detect(points, goal="maximize")
    assert [c.index for c in changes] == [10, 20]
    for change in changes:
        assert (change.comparison.base.n, change.comparison.candidate.n) == (50, 50)
    assert 0.08 < changes[0].comparison.change < 0.12  # not diluted by the points after 20


def test_of_two_unconfirmed_candidates_the_one_with_the_higher_p_value_is_dropped_first() -> None:
    # a level of 100, one ambiguous experiment, then a level of 104
    points = [[99.0, 100.0, 101.0]] * 8 + [[100.5, 103.0]] + [[103.0, 104.0, 105.0]] * 7
    assert candidates_of(points, penalty=0.5) == [8, 9]
    at_8 = compare(sum(points[:8], []), sum(points[8:9], []), goal="maximize")
    at_9 = compare(sum(points[8:9], []), sum(points[9:], []), goal="maximize")
    assert at_8.verdict == at_9.verdict == "inconclusive" and at_8.p_value > at_9.p_value
    # 8 goes first; 9, compared again over the merged segments, is confirmed
    [change] = detect(points, goal="maximize", penalty=0.5)
    assert change.index == 9 and change.comparison.verdict == "improved"


def test_a_candidate_without_a_p_value_is_dropped_before_one_with_a_p_value() -> None:
    # a level of 1000, an experiment of two scattered runs, then a last experiment of one run
    points = [[990.0, 1000.0, 1010.0, 995.0, 1005.0]] * 10 + [[1300.0, 1900.0], [2000.0]]
    assert candidates_of(points) == [10, 11]
    at_10 = compare(sum(points[:10], []), points[10], goal="maximize")
    at_11 = compare(points[10], points[11], goal="maximize")
    assert at_10.verdict == "inconclusive" and math.isfinite(at_10.p_value)
    assert at_11.verdict == "inconclusive" and math.isnan(at_11.p_value)  # one value after it
    # 11 goes first; 10, compared again with the three runs after it, is confirmed
    [change] = detect(points, goal="maximize")
    assert change.index == 10 and change.comparison.verdict == "improved"
    assert change.comparison.candidate.n == 3


def test_the_floor_is_passed_to_the_segmentation() -> None:
    # 8 experiments, a 4% step, tight runs and a little wobble: clear on its own; with an A/A floor of
    # 10 experiments whose medians lay up to 12% apart, within the noise
    rng = np.random.default_rng(3)
    points = [(lvl * (1 + 0.005 * rng.standard_normal()) * (1 + 0.002 * rng.standard_normal(5))).tolist()
              for lvl in [1000.0] * 4 + [1040.0] * 4]
    assert [c.index for c in detect(points, goal="maximize")] == [4]
    assert detect(points, goal="maximize", floor=Floor(0.12, 10, 50)) == []
    assert [c.index for c in detect(points, goal="maximize", floor=Floor(0.005, 10, 50))] == [4]


# --- candidates_of ---

def test_two_points_can_be_split() -> None:
    assert candidates_of([[1.0, 1.01, 0.99], [2.0, 2.02, 1.98]]) == [1]


def test_too_few_single_run_points_to_know_the_noise_are_not_split() -> None:
    # one run per point and fewer than 4 points: no estimate of the noise, so no candidates
    assert candidates_of([[1.0], [2.0], [5.0]]) == []


def test_a_step_is_relative_whatever_the_unit() -> None:
    # runs of ±2% at 0.1, then +3%, then 0.9: on the log scale the 3% step is as clear as the big one
    points = _steady([0.1] * 10 + [0.103] * 10 + [0.9] * 10)
    assert candidates_of(points) == [10, 20]
    assert candidates_of([[v * 10 for v in p] for p in points]) == [10, 20]  # same in other units (all > 1)


def test_a_series_with_zeros_is_split_on_the_linear_scale() -> None:
    points = [[0.0, 1.0, 2.0]] * 8 + [[10.0, 11.0, 12.0]] * 8
    assert candidates_of(points) == [8]


# --- the penalty ---

def test_the_penalty_widens_as_students_t_does_when_the_noise_is_estimated_from_few_points() -> None:
    assert _penalty(11.0, math.inf) == 11.0 and _penalty(11.0, 2e6) == 11.0
    # P(Z > √11) = 4.56e-4; t with 5 degrees of freedom reaches that tail at 7.009, with 40 at 3.583 (SciPy)
    assert _penalty(11.0, 5) == pytest.approx(7.00937**2, rel=1e-5)
    assert _penalty(11.0, 40) == pytest.approx(3.58321**2, rel=1e-5)
    assert _penalty(1e6, 5) >= 1e6  # a penalty beyond any tail stays what it was, at least


# --- binary segmentation and the cost ---

def test_a_split_whose_fall_equals_the_penalty_is_not_made() -> None:
    cost = WeightedL2([0.0, 0.0, 2.0, 2.0], [1.0] * 4)
    assert cost.best_split(0, 4) == (4.0, 2)
    assert binary_segmentation(cost, 4, 4.0) == []
    assert binary_segmentation(cost, 4, 3.99) == [2]


def test_a_single_point_cannot_be_cut() -> None:
    cost = WeightedL2([1.0, 2.0, 12.0], [2.0, 1.0, 3.0])
    assert cost.best_split(1, 2) == (0.0, -1)
    assert cost.best_pair(0, 2) == (0.0, [-1])  # two cuts need three points


def test_the_best_pair_of_cuts_leaves_the_rest_around_one_level() -> None:
    # a bump at [2, 4) in six points: the rest is one level, and the bump's cost is 0
    cost = WeightedL2([0.0, 0.0, 5.0, 5.0, 0.0, 0.0], [1.0] * 6)
    fall, cuts = cost.best_pair(0, 6)
    assert cuts == [2, 4] and fall == pytest.approx(cost.error(0, 6))
    assert cost.best_pair(2, 6)[1] in ([3, 4], [2, 4], [3, 5])  # within a segment: cuts relative to it


def test_a_one_point_segment_does_not_stop_the_splitting_of_the_others() -> None:
    cost = WeightedL2([0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0], [100.0] * 7)
    assert binary_segmentation(cost, 7, 1.0) == [1, 4]


def test_the_cost_of_large_values_with_a_small_spread_is_exact() -> None:
    cost = WeightedL2([1e9 + 1, 1e9 - 1, 1e9 + 2, 1e9 - 2], [1.0] * 4)
    assert cost.error(0, 4) == pytest.approx(10.0)
    assert cost.error(0, 2) == pytest.approx(2.0)


def test_a_point_of_no_weight_adds_nothing_to_the_cost() -> None:
    cost = WeightedL2([1.0, 3.0, 50.0], [1.0, 1.0, 0.0])
    assert cost.error(0, 3) == pytest.approx(cost.error(0, 2)) == pytest.approx(2.0)
    assert cost.error(2, 3) == 0.0 and cost.sum_of_costs([1, 3]) == pytest.approx(0.0)
