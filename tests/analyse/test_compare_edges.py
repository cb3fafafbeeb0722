"""Edges of compare (sizes, boundaries, reasons), of experiments compared trial by trial and scaled, and of the
family's p-values (analyse/compare.py, experiments.py, family.py), in-process."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest
from scipy import stats
from support.runs import runs

from kubebench.analyse.compare import _mann_whitney, _welch_one_sided, compare
from kubebench.analyse.experiments import compare_experiments, params_key, scaling
from kubebench.analyse.family import adjust, rule_p_of
from kubebench.errors import SpecError
from kubebench.numerics.stats import bootstrap_median_ratio

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.7, 99.3, 100.1]
LEVEL = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]


# --- compare: how many values a side needs, and which Mann–Whitney p it reports -----------------------------


@pytest.mark.parametrize("base, candidate", [([10.0, 11.0, 12.0], [13.0, 14.0]), ([13.0, 14.0], [10.0, 11.0, 12.0])])
def test_two_values_on_a_side_are_enough_for_a_p_value(base: list[float], candidate: list[float]) -> None:
    c = compare(base, candidate, goal="maximize")
    assert c.p_value == pytest.approx(stats.mannwhitneyu(candidate, base).pvalue)
    assert not math.isnan(c.p_value)


@pytest.mark.parametrize("candidate, base", [
    ([1.0, 2.0, 2.0, 4.0], [3.0, 5.0, 6.0, 7.0]),  # one tied pair: the normal approximation with the tie term
    ([float(v) for v in range(1, 16, 2)], [float(v) for v in range(2, 17, 2)]),  # 8 and 8, no ties: exact
    ([float(v) for v in range(1, 18, 2)], [float(v) for v in range(2, 19, 2)]),  # 9 and 9: normal approximation
])
def test_the_p_value_is_scipy_s_mann_whitney_at_the_edges_of_its_methods(candidate: list[float],
                                                                          base: list[float]) -> None:
    expected = stats.mannwhitneyu(candidate, base).pvalue  # method "auto"
    assert compare(base, candidate, goal="maximize").p_value == pytest.approx(expected, rel=1e-9)


def test_mann_whitney_of_too_few_or_all_equal_values_has_no_direction() -> None:
    p, direction = _mann_whitney(np.array([5.0]), np.array([1.0, 2.0]))
    assert math.isnan(p) and direction == 0
    assert _mann_whitney(np.array([3.0, 3.0, 3.0]), np.array([3.0, 3.0])) == (1.0, 0)


def test_welch_of_equal_constant_samples_is_no_evidence() -> None:
    assert _welch_one_sided(np.array([5.0, 5.0, 5.0]), np.array([5.0, 5.0])) == (1.0, 0)
    assert _welch_one_sided(np.array([6.0, 6.0, 6.0]), np.array([5.0, 5.0])) == (0.0, 1)


# --- compare: the ratio, its CI, and the fields carried -----------------------------------------------------


@pytest.mark.parametrize("base", [[-3.0, -2.0, -1.0], [-1.0, 0.0, 1.0]])
def test_no_ratio_when_the_base_median_is_not_positive(base: list[float]) -> None:
    c = compare(base, [1.0, 2.0, 3.0], goal="maximize")
    assert math.isnan(c.ratio) and math.isnan(c.change)
    assert c.verdict == "inconclusive"
    assert c.reason.endswith(", and no CI of the ratio (a median is not positive)")


def test_a_base_median_below_one_still_gives_a_ratio() -> None:
    c = compare([0.4, 0.5, 0.6], [0.8, 1.0, 1.2], goal="maximize")
    assert c.ratio == pytest.approx(2.0)


def test_the_seed_chooses_the_bootstrap_resamples() -> None:
    rng = np.random.default_rng(1)
    base, candidate = list(rng.normal(100, 5, 30)), list(rng.normal(97, 5, 30))
    seeded = compare(base, candidate, goal="maximize", seed=7)
    assert seeded.ratio_ci == bootstrap_median_ratio(candidate, base, seed=7)
    assert seeded.ratio_ci != compare(base, candidate, goal="maximize").ratio_ci


def test_the_comparison_carries_its_alpha() -> None:
    assert compare(BASE, BASE, goal="maximize").alpha == 0.05
    c = compare(BASE, BASE, goal="maximize", alpha=0.01)
    assert c.alpha == 0.01 and c.to_dict()["alpha"] == 0.01


def test_integer_values_beyond_64_bits_are_compared_as_floats() -> None:
    base = [10**20 + 10**16 * i for i in range(5)]
    c = compare(base, [2 * v for v in base], goal="maximize")
    assert c.ratio == pytest.approx(2.0) and c.verdict == "improved"
    assert rule_p_of(base, [2 * v for v in base])[1] == 1


# --- compare: the verdict's boundaries and reasons ----------------------------------------------------------


@pytest.mark.parametrize("candidate", [[1.0] * 10, [3.0] * 10])
def test_a_ci_exactly_on_the_edge_of_the_threshold_is_unchanged(candidate: list[float]) -> None:
    c = compare([2.0] * 10, candidate, goal="maximize", threshold=0.5)
    assert c.ratio_ci in ((0.5, 0.5), (1.5, 1.5))
    assert c.verdict == "unchanged"


@pytest.mark.parametrize("threshold, band", [(0.025, "±2.5%"), (0.75, "±75%"), (0.02, "±2%")])
def test_the_reason_shows_the_threshold_with_a_decimal_only_when_it_needs_one(threshold: float, band: str) -> None:
    c = compare(BASE, [v * 1.01 for v in BASE], goal="maximize", threshold=threshold)
    assert c.reason.endswith(f" {band}")


def test_a_welch_p_equal_to_alpha_is_not_significant() -> None:
    b = np.array(BASE)
    c = b * 0.97
    c[0] = 103.0  # one high run: Welch's p (0.002) is above Mann–Whitney's (0.0014)
    t_p, _ = _welch_one_sided(c, b)
    assert _mann_whitney(c, b)[0] / 2 < t_p
    assert compare(list(b), list(c), goal="maximize", alpha=float(t_p)).verdict == "inconclusive"
    assert compare(list(b), list(c), goal="maximize", alpha=float(t_p) * 1.01).verdict == "regressed"


def test_a_significant_reason_gives_both_one_sided_p_values() -> None:
    candidate = [v * 0.9 for v in BASE]
    c = compare(BASE, candidate, goal="maximize")
    t_p = stats.ttest_ind(candidate, BASE, equal_var=False, alternative="less").pvalue
    u_p = stats.mannwhitneyu(candidate, BASE, alternative="less").pvalue
    assert c.verdict == "regressed"
    assert c.reason == f"significant (Welch p={t_p:.2g}, Mann–Whitney p={u_p:.2g}, one-sided)"


def test_three_and_four_runs_can_reach_significance_so_the_reason_does_not_ask_for_more() -> None:
    c = compare([10.0, 11.0, 12.0], [10.5, 12.5, 9.0, 11.0], goal="maximize")
    assert c.verdict == "inconclusive"
    assert c.reason.startswith("no significant change; the change's 95% CI")


# --- family: the rule's p and Holm's cap --------------------------------------------------------------------


def test_welch_and_mann_whitney_pointing_opposite_ways_give_no_direction() -> None:
    # the mean is pulled up by one run, the ranks say lower
    assert rule_p_of([10.0, 11.0, 12.0, 13.0, 14.0], [5.0, 6.0, 7.0, 8.0, 100.0]) == (1.0, 0)
    assert rule_p_of([10.0, 11.0, 12.0], [9.0, 11.0, 13.0]) == (1.0, 0)  # equal means


@pytest.mark.parametrize("base, candidate", [([1.0, 2.0], [3.0, 4.0, 5.0]), ([3.0, 4.0, 5.0], [1.0, 2.0])])
def test_two_values_a_side_give_the_rule_s_p(base: list[float], candidate: list[float]) -> None:
    p, direction = rule_p_of(base, candidate)
    assert 0 < p < 1 and direction == (1 if candidate[0] > base[0] else -1)


def test_too_few_values_give_no_p_and_no_direction() -> None:
    p, direction = rule_p_of([1.0], [3.0, 4.0, 5.0])
    assert math.isnan(p) and direction == 0


def test_holm_never_adjusts_a_p_above_one() -> None:
    assert adjust([0.6, 0.7], "holm") == [1.0, 1.0]


# --- experiments: trials compared and scaled ----------------------------------------------------------------


CAND = runs("c", {"t8": ({"bs": 8}, [0.8 * v for v in LEVEL]), "t16": ({"bs": 16}, [2 * v for v in LEVEL])},
            failed={"t8": 1})
BASE_RUNS = runs("b", {"t8": ({"bs": 8}, LEVEL), "t16": ({"bs": 16}, [2 * v for v in LEVEL]),
                       "t32": ({"bs": 32}, [3 * v for v in LEVEL])}, failed={"t16": 2, "t32": 1})


def test_a_trial_missing_from_the_candidate_has_no_failed_runs_and_says_it_is_missing() -> None:
    rows = {row.params["bs"]: row for row in compare_experiments(BASE_RUNS, CAND, "ips", "maximize")}
    assert rows[32].missing and rows[32].failed == (1, 0)
    assert rows[32].comparison.reason == "the trial is missing from the candidate"
    assert rows[8].comparison.reason != "the trial is missing from the candidate" and not rows[8].missing
    assert [row.metric for row in rows.values()] == ["ips"] * 3


def test_each_trial_is_compared_with_the_threshold_and_alpha_given() -> None:
    rows = compare_experiments(BASE_RUNS, CAND, "ips", "maximize", threshold=0.3, alpha=0.01, correction=None)
    assert {(row.comparison.threshold, row.comparison.alpha) for row in rows} == {(0.3, 0.01)}
    by_bs = {row.params["bs"]: row.comparison for row in rows}
    assert by_bs[8].verdict == "unchanged"  # a 20% drop, within ±30%


def test_an_adjusted_p_equal_to_alpha_is_not_significant() -> None:
    p8 = rule_p_of(LEVEL, [0.8 * v for v in LEVEL])[0]
    p16 = rule_p_of([2 * v for v in LEVEL], [2 * v for v in LEVEL])[0]
    alpha = adjust([p8, p16], "holm")[0]
    assert p8 < alpha
    rows = {row.params["bs"]: row for row in compare_experiments(BASE_RUNS, CAND, "ips", "maximize", alpha=alpha)}
    assert rows[8].adjusted_p == alpha
    assert rows[8].comparison.verdict == "inconclusive"
    assert rows[8].comparison.reason.startswith("significant alone")


def test_no_matching_trials_is_an_error_that_says_so() -> None:
    with pytest.raises(SpecError) as error:
        compare_experiments(runs("b", {"t": ({"bs": 8}, LEVEL), "u": ({"bs": 16}, LEVEL)}),
                            runs("c", {"t": ({"bs": 4}, LEVEL), "u": ({"bs": 2}, LEVEL)}), "ips", "maximize")
    assert str(error.value) == "the two experiments have no trials with equal parameters to compare"


def test_the_params_key_ignores_order_and_writes_any_value_as_text() -> None:
    assert params_key({"a": 1, "b": 2}) == params_key({"b": 2, "a": 1}) == '{"a": 1, "b": 2}'
    assert params_key({"day": datetime.date(2026, 1, 2)}) == '{"day": "2026-01-02"}'


def test_a_scaling_study_has_one_curve_per_combination_of_the_other_parameters() -> None:
    study = runs("s", {f"t{g}{lr}": ({"gpus": g, "lr": lr}, [100.0 * g, 101.0 * g]) for g in (1, 2) for lr in (1, 2)})
    curves = scaling(study, "ips")
    assert [rest for rest, _ in curves] == [{"lr": 1}, {"lr": 2}]
    assert [[p.workers for p in points] for _, points in curves] == [[1, 2], [1, 2]]


@pytest.mark.parametrize("params, listed", [({}, "none"), ({"bs": 8, "lr": 1}, "bs, lr")])
def test_a_worker_parameter_not_swept_names_the_parameters_there_are(params: dict, listed: str) -> None:
    with pytest.raises(SpecError) as error:
        scaling(runs("s", {"t": (params, [1.0])}), "ips", workers_param="gpus")
    assert str(error.value) == f"parameter 'gpus' is not swept in this experiment; parameters: {listed}"
