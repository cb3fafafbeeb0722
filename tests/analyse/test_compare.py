"""Tests of kubebench.analyse.compare: verdicts, their error rates, fail-on rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from kubebench.analyse.compare import (
    _mann_whitney,
    _welch_one_sided,
    compare,
    fail_on,
    parse_fail_on,
)
from kubebench.errors import SpecError

BASE = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.7, 99.3, 100.1]


def _scaled(values: list[float], factor: float) -> list[float]:
    return [v * factor for v in values]


def test_higher_throughput_is_an_improvement_when_maximizing() -> None:
    c = compare(BASE, _scaled(BASE, 1.10), goal="maximize")
    assert c.verdict == "improved"
    assert c.ratio == pytest.approx(1.10)
    assert c.change == pytest.approx(0.10)
    assert c.ratio_ci[0] <= c.ratio <= c.ratio_ci[1]
    assert c.p_value < 0.05


def test_lower_throughput_is_a_regression_when_maximizing() -> None:
    c = compare(BASE, _scaled(BASE, 0.90), goal="maximize")
    assert c.verdict == "regressed"
    assert c.change == pytest.approx(-0.10)


def test_lower_time_is_an_improvement_when_minimizing() -> None:
    c = compare(BASE, _scaled(BASE, 0.90), goal="minimize")
    assert c.verdict == "improved"
    assert c.change == pytest.approx(0.10)


def test_higher_time_is_a_regression_when_minimizing() -> None:
    c = compare(BASE, _scaled(BASE, 1.10), goal="minimize")
    assert c.verdict == "regressed"
    assert c.change == pytest.approx(-0.10)


def test_identical_samples_are_unchanged() -> None:
    c = compare(BASE, BASE, goal="maximize")
    assert c.verdict == "unchanged"
    assert c.ratio == 1.0 and c.change == 0.0
    assert c.p_value == pytest.approx(1.0)


def test_significant_change_inside_the_threshold_is_unchanged() -> None:
    # 0.5% faster with almost no noise: significant, but the CI sits within ±2%.
    base = [100.0 + 0.01 * i for i in range(10)]
    c = compare(base, _scaled(base, 1.005), goal="maximize")
    assert c.p_value < 0.05
    assert 0.98 <= c.ratio_ci[0] and c.ratio_ci[1] <= 1.02
    assert c.verdict == "unchanged"
    strict = compare(base, _scaled(base, 1.005), goal="maximize", threshold=0.001)
    assert strict.verdict == "improved"


def test_one_outlier_alone_does_not_make_a_verdict() -> None:
    # One run at half speed: Welch's t would call it, the rank test does not (ranks barely move).
    candidate = BASE[:-1] + [50.0]
    c = compare(BASE, candidate, goal="maximize")
    assert c.verdict == "unchanged"


@pytest.mark.parametrize("base, candidate", [([1.0], [1.0, 2.0]), ([1.0, 2.0], []), ([], [])])
def test_too_few_values_is_inconclusive(base: list[float], candidate: list[float]) -> None:
    c = compare(base, candidate, goal="maximize")
    assert c.verdict == "inconclusive"
    assert math.isnan(c.p_value)
    assert all(math.isnan(v) for v in c.ratio_ci)


def test_same_inputs_give_the_same_comparison() -> None:
    rng = np.random.default_rng(0)
    base, candidate = rng.normal(100, 3, 8), rng.normal(97, 3, 8)
    assert compare(base, candidate, goal="maximize") == compare(base, candidate, goal="maximize")


def test_constant_samples_that_differ_are_a_change() -> None:
    c = compare([10.0] * 10, [12.0] * 10, goal="minimize")
    assert c.verdict == "regressed"
    assert c.ratio == pytest.approx(1.2)


def test_unknown_goal_is_rejected() -> None:
    with pytest.raises(ValueError, match="goal"):
        compare(BASE, BASE, goal="fastest")  # type: ignore[arg-type]


def test_to_dict_is_valid_json() -> None:
    data = compare([1.0], [2.0, 3.0], goal="maximize").to_dict()
    back = json.loads(json.dumps(data, allow_nan=False))
    assert back["verdict"] == "inconclusive"
    assert back["p_value"] is None and back["ratio_ci"] == [None, None]
    assert back["candidate"]["median"] == 2.5


# Helpers replace scipy calls for speed; they must agree with scipy.


@pytest.mark.parametrize("seed", range(5))
def test_welch_matches_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    c, b = rng.normal(10, 1, 7), rng.normal(10.5, 2, 12)
    p, direction = _welch_one_sided(c, b)
    alternative = "less" if direction < 0 else "greater"
    expected = sps.ttest_ind(c, b, equal_var=False, alternative=alternative).pvalue
    assert p == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    "c, b",
    [
        (np.arange(10.0), np.arange(3.0, 14.0)),  # large enough for the normal approximation
        ([1.0, 2.0, 2.0, 3.0, 5.0], [2.0, 3.0, 3.0, 4.0]),  # ties
        ([1.0, 2.5, 3.0], [4.0, 5.0, 6.0, 7.0]),  # small without ties: exact test
        ([5.0] * 10, [5.0] * 10),  # everything tied
    ],
)
def test_mann_whitney_matches_scipy(c: list[float], b: list[float]) -> None:
    p, _ = _mann_whitney(np.asarray(c), np.asarray(b))
    assert p == pytest.approx(sps.mannwhitneyu(c, b).pvalue, rel=1e-9)


# Error rates of the verdict, by seeded simulation: 2% CV, 10 repeats per side.

PAIRS = 400


def _regressed_rate(shift: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    regressed = 0
    for _ in range(PAIRS):
        base = rng.normal(100.0, 2.0, 10)
        candidate = rng.normal(100.0 * (1 - shift), 2.0 * (1 - shift), 10)
        regressed += compare(base, candidate, goal="maximize").verdict == "regressed"
    return regressed / PAIRS


def test_false_regression_rate_on_equal_distributions_is_at_most_5_percent() -> None:
    # Expected ~3.9% (40 000 simulated pairs); measured here on 400 pairs.
    assert _regressed_rate(0.0, seed=2024) <= 0.05


def test_a_true_3_percent_regression_is_detected_at_least_90_percent_of_the_time() -> None:
    # Expected ~92% (40 000 simulated pairs); measured here on 400 pairs.
    assert _regressed_rate(0.03, seed=2025) >= 0.90


# fail_on and parse_fail_on


def test_fail_on_needs_a_regression_larger_than_the_limit() -> None:
    regressed = compare(BASE, _scaled(BASE, 0.90), goal="maximize")
    assert fail_on(regressed, 0.03)
    assert not fail_on(regressed, 0.15)
    assert not fail_on(compare(BASE, _scaled(BASE, 1.10), goal="maximize"), 0.0)
    assert not fail_on(compare(BASE, BASE, goal="maximize"), 0.0)


def test_fail_on_for_a_time_metric() -> None:
    slower = compare(BASE, _scaled(BASE, 1.05), goal="minimize")
    assert slower.verdict == "regressed"
    assert fail_on(slower, 0.03)
    assert not fail_on(slower, 0.06)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("images_per_sec:-3%", ("images_per_sec", 0.03)),
        ("latency_ms:+5%", ("latency_ms", 0.05)),
        ("latency_ms:5%", ("latency_ms", 0.05)),
        ("loss:-0.5%", ("loss", 0.005)),
        (" train/step:time:-10 % ", ("train/step:time", 0.10)),
    ],
)
def test_parse_fail_on(text: str, expected: tuple[str, float]) -> None:
    name, limit = parse_fail_on(text)
    assert name == expected[0]
    assert limit == pytest.approx(expected[1])


@pytest.mark.parametrize(
    "text",
    ["images_per_sec", "images_per_sec:-3", ":-3%", "images_per_sec:-x%", "a:--3%", "", "a:-3%%"],
)
def test_parse_fail_on_rejects_bad_rules(text: str) -> None:
    with pytest.raises(SpecError, match="METRIC:-N%"):
        parse_fail_on(text)
