"""Edges of compare (sizes, boundaries, reasons), of experiments compared trial by trial and scaled, and of the
family's p-values (analyse/compare.py, experiments.py, family.py), in-process."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest
from scipy import stats
from support.runs import runs

from kubebench.analyse.compare import compare, rule_p
from kubebench.analyse.experiments import compare_experiments, params_key, scaling
from kubebench.analyse.family import adjust, rule_p_of
from kubebench.errors import SpecError

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.7, 99.3, 100.1]
LEVEL = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]


# --- compare: how many values a side needs, and which p it reports ----------------------------------------


def _scipy_p(candidate: list[float], base: list[float]) -> float:
    """SciPy's one-sided Yuen test (10% trimmed) on log values in the observed direction: Welch's, or the
    pooled one when its standard error is the larger (the candidate's runs tighter than the base's; equal
    to ours where neither side is trimmed)."""
    c, b = np.log(candidate), np.log(base)
    welch, pooled = (stats.ttest_ind(c, b, equal_var=e, trim=0.1, alternative="less") for e in (False, True))
    less = (welch if abs(welch.statistic) <= abs(pooled.statistic) else pooled).pvalue
    return float(min(less, 1 - less))


@pytest.mark.parametrize("base, candidate", [([10.0, 11.0, 12.0], [13.0, 14.0]), ([13.0, 14.0], [10.0, 11.0, 12.0])])
def test_two_values_on_a_side_are_enough_for_a_p_value(base: list[float], candidate: list[float]) -> None:
    c = compare(base, candidate, goal="maximize")
    assert c.p_value == pytest.approx(_scipy_p(candidate, base), rel=1e-9)
    assert not math.isnan(c.p_value)


@pytest.mark.parametrize("candidate, base", [
    ([1.0, 2.0, 2.0, 4.0], [3.0, 5.0, 6.0, 7.0]),  # ties: nothing special
    ([float(v) for v in range(1, 19, 2)], [float(v) for v in range(2, 20, 2)]),  # 9 and 9: nothing trimmed
    ([float(v) for v in range(1, 21, 2)], [100.0 + v for v in range(20)]),  # 10 and 20: 1 and 2 trimmed
])
def test_the_p_value_is_scipy_s_trimmed_welch_on_logs_at_the_edges_of_trimming(candidate: list[float],
                                                                                base: list[float]) -> None:
    assert compare(base, candidate, goal="maximize").p_value == pytest.approx(_scipy_p(candidate, base), rel=1e-9)


def test_too_few_or_all_equal_values_have_no_direction() -> None:
    assert rule_p([5.0], [1.0, 2.0]) == (pytest.approx(math.nan, nan_ok=True), 0)
    assert rule_p([3.0, 3.0, 3.0], [3.0, 3.0]) == (1.0, 0)


def test_constant_samples_are_no_evidence_when_equal_and_certain_when_not() -> None:
    assert rule_p([5.0, 5.0, 5.0], [5.0, 5.0]) == (1.0, 0)
    assert rule_p([6.0, 6.0, 6.0], [5.0, 5.0]) == (0.0, 1)


# --- compare: the ratio, its CI, and the fields carried -----------------------------------------------------


@pytest.mark.parametrize("base", [[-3.0, -2.0, -1.0], [-1.0, 0.0, 1.0]])
def test_no_ratio_when_a_value_is_not_positive_but_still_a_direction(base: list[float]) -> None:
    c = compare(base, [1.0, 2.0, 3.0], goal="maximize")
    assert math.isnan(c.ratio) and math.isnan(c.change) and all(math.isnan(v) for v in c.ratio_ci)
    # tested on the values themselves: higher is better, and a ratio-less change never fails a --fail-on rule
    assert c.verdict == "improved" and c.reason.endswith("no ratio: a value is not positive)")
    flat = compare(base, base, goal="maximize")
    assert flat.verdict == "inconclusive" and flat.reason.endswith("and no CI of the ratio (a value is not positive)")


def test_a_base_median_below_one_still_gives_a_ratio() -> None:
    c = compare([0.4, 0.5, 0.6], [0.8, 1.0, 1.2], goal="maximize")
    assert c.ratio == pytest.approx(2.0)


def test_the_comparison_carries_its_alpha_and_the_level_of_its_ci() -> None:
    assert compare(BASE, BASE, goal="maximize").alpha == 0.05
    c = compare(BASE, BASE, goal="maximize", alpha=0.01)
    assert c.alpha == 0.01 and c.to_dict()["alpha"] == 0.01
    assert c.confidence == pytest.approx(0.98) and c.to_dict()["confidence"] == pytest.approx(0.98)


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


def test_a_p_equal_to_alpha_is_not_significant() -> None:
    b = np.array(BASE[:8])
    c = b * 0.985
    c[0] = 103.0  # one high run
    p = compare(list(b), list(c), goal="maximize").p_value
    assert 0.001 < p < 0.2
    # the threshold is tiny so that the CI is never wholly inside it
    assert compare(list(b), list(c), goal="maximize", alpha=p, threshold=1e-6).verdict == "inconclusive"
    assert compare(list(b), list(c), goal="maximize", alpha=p * 1.01, threshold=1e-6).verdict == "regressed"


def test_a_significant_reason_gives_the_one_sided_p_and_the_ci() -> None:
    candidate = [v * 0.9 for v in BASE]
    c = compare(BASE, candidate, goal="maximize")
    assert c.verdict == "regressed"
    low, high = c.ratio_ci
    assert c.reason == (f"significant (one-sided p={_scipy_p(candidate, BASE):.2g}; the change's 90% CI "
                        f"({low - 1:+.1%} … {high - 1:+.1%}) excludes 0)")


def test_a_change_these_runs_could_not_show_says_how_many_would() -> None:
    c = compare([10.0, 11.0, 12.0], [10.5, 12.5, 9.0, 11.0], goal="maximize")
    assert c.verdict == "inconclusive"
    assert c.reason.startswith("no significant change; the change's 90% CI")
    assert "3 base and 4 candidate runs at this noise detect changes above" in c.reason


# --- family: the rule's p and Holm's cap --------------------------------------------------------------------


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
