"""Tests of kubebench.analyse.studies: scaling efficiency and platform overhead."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kubebench.analyse.studies import overhead, scaling_efficiency
from kubebench.errors import SpecError


def test_scaling_efficiency_from_one_worker() -> None:
    data = {4: [340.0, 360.0, 350.0], 1: [100.0, 98.0, 102.0], 2: [190.0, 180.0, 185.0]}
    points = scaling_efficiency(data)
    assert [p.workers for p in points] == [1, 2, 4]
    one, two, four = points
    assert (one.speedup, one.efficiency, one.efficiency_ci) == (1.0, 1.0, (1.0, 1.0))
    assert two.speedup == pytest.approx(1.85)
    assert two.efficiency == pytest.approx(0.925)
    assert four.speedup == pytest.approx(3.5)
    assert four.efficiency == pytest.approx(0.875)
    assert four.throughput.median == 350.0 and four.throughput.n == 3
    assert all(p.baseline_workers == 1 for p in points)


def test_efficiency_ci_brackets_the_estimate_and_is_reproducible() -> None:
    rng = np.random.default_rng(1)
    data = {1: rng.normal(100, 2, 10), 8: rng.normal(720, 14, 10)}
    point = scaling_efficiency(data)[1]
    low, high = point.efficiency_ci
    assert low < point.efficiency < high
    assert 0.85 < low and high < 0.95  # true efficiency 0.9; 2% noise on 10 runs per side
    assert scaling_efficiency(data) == scaling_efficiency(data)


def test_smallest_worker_count_is_the_baseline_when_not_one() -> None:
    points = scaling_efficiency({2: [200.0, 200.0], 8: [720.0, 720.0]})
    assert points[0].efficiency == 1.0
    assert points[1].speedup == pytest.approx(3.6)
    # Ideal from 2 to 8 workers is 4x.
    assert points[1].efficiency == pytest.approx(0.9)
    assert points[1].baseline_workers == 2


def test_points_with_too_few_values_have_no_ci() -> None:
    points = scaling_efficiency({1: [100.0, 101.0], 2: [190.0]})
    assert points[1].efficiency == pytest.approx(190.0 / 2 / 100.5)
    assert all(math.isnan(v) for v in points[1].efficiency_ci)


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "none"),
        ({0: [1.0], 1: [2.0]}, "at least 1"),
        ({1.5: [1.0]}, "whole numbers"),
        ({1: [], 2: [3.0]}, "positive throughput"),
        ({1: [0.0], 2: [3.0]}, "positive throughput"),
    ],
)
def test_scaling_without_a_usable_baseline_is_a_spec_error(data: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        scaling_efficiency(data)


def test_overhead_for_throughput() -> None:
    result = overhead([100.0, 100.0, 100.0], [96.0, 96.0, 96.0], goal="maximize")
    assert result.overhead == pytest.approx(100 / 96 - 1)
    assert result.ci == pytest.approx((100 / 96 - 1, 100 / 96 - 1))
    assert result.describe() == "overhead +4.2% ± 0.0%"


def test_overhead_for_time() -> None:
    result = overhead([10.0, 10.2, 9.8], [10.5, 10.7, 10.3], goal="minimize")
    assert result.overhead == pytest.approx(0.05)
    assert result.describe().startswith("overhead +5.0% ± ")


def test_overhead_ci_and_description() -> None:
    rng = np.random.default_rng(4)
    bare, platform = rng.normal(100, 2, 10), rng.normal(96, 2, 10)
    result = overhead(bare, platform, goal="maximize")
    low, high = result.ci
    assert low < result.overhead < high
    half = (high - low) / 2 * 100
    assert result.describe() == f"overhead {result.overhead * 100:+.1f}% ± {half:.1f}%"
    assert result == overhead(bare, platform, goal="maximize")


def test_faster_platform_has_negative_overhead() -> None:
    result = overhead([10.0, 10.0], [9.0, 9.0], goal="minimize")
    assert result.overhead == pytest.approx(-0.1)
    assert result.describe() == "overhead -10.0% ± 0.0%"


def test_overhead_with_too_few_values() -> None:
    too_few = overhead([100.0], [90.0, 91.0], goal="maximize")
    assert too_few.describe().endswith("(too few runs for a CI)")
    assert overhead([], [90.0], goal="maximize").describe() == "overhead n/a (no values)"


def test_overhead_rejects_unknown_goal() -> None:
    with pytest.raises(ValueError, match="goal"):
        overhead([1.0], [1.0], goal="up")  # type: ignore[arg-type]


def test_the_workers_parameter_is_found_by_name() -> None:
    from kubebench.analyse.experiments import scaling, workers_parameter
    from kubebench.store.records import RunRecord

    def runs(params_of: dict[str, dict]) -> list[RunRecord]:
        return [RunRecord(run_id=f"{t}{r}", experiment_id="e", trial_id=t, repeat=r, warmup=False, status="succeeded",
                          params=p, metrics={"ips": 100.0 * p.get("num_gpus", 1)}) for t, p in params_of.items()
                for r in range(2)]

    gpus = runs({"a": {"num_gpus": 1, "batch": 8}, "b": {"num_gpus": 2, "batch": 8}})
    assert workers_parameter(gpus, "ips") == "num_gpus"
    ((rest, points),) = scaling(gpus, "ips")
    assert rest == {"batch": 8} and [p.efficiency for p in points] == [1.0, 1.0]
    for bad in ("two", 1.5):  # neither a ValueError traceback nor 1.5 workers counted as 1
        with pytest.raises(SpecError, match=f"parameter 'workers' must hold whole numbers of workers, got {bad!r}"):
            scaling(runs({"a": {"workers": 1}, "b": {"workers": bad}}), "ips")
    assert [p.workers for _, ps in scaling(runs({"a": {"workers": "1"}, "b": {"workers": 2.0}}), "ips") for p in ps] == [1, 2]
    with pytest.raises(SpecError, match="no swept parameter holds a number of workers .*swept: batch"):
        workers_parameter(runs({"a": {"batch": 8}, "b": {"batch": 16}}), "ips")
    with pytest.raises(SpecError, match=r"several swept parameters .*\(workers, nodes\)"):
        workers_parameter(runs({"a": {"workers": 1, "nodes": 1}, "b": {"workers": 2, "nodes": 2}}), "ips")


# Exact values on small inputs (mutation testing, issue #20).

_BARE, _PLATFORM = [100.0, 102.0, 98.0, 101.0, 99.0], [95.0, 97.0, 93.0, 96.0, 94.0]


def test_overhead_keeps_its_inputs_and_passes_the_ci_options_to_the_bootstrap() -> None:
    from kubebench.numerics.stats import bootstrap_median_ratio

    result = overhead(_BARE, _PLATFORM, goal="maximize")
    assert (result.goal, result.bare.median, result.platform.median) == ("maximize", 100.0, 95.0)
    # the defaults: a 95% CI from 2000 resamples seeded with 0, as every report so far
    low, high = bootstrap_median_ratio(_BARE, _PLATFORM, confidence=0.95, resamples=2000, seed=0)
    assert result.ci == (low - 1, high - 1)
    custom = overhead(_BARE, _PLATFORM, goal="maximize", confidence=0.8, resamples=20, seed=7)
    low, high = bootstrap_median_ratio(_BARE, _PLATFORM, confidence=0.8, resamples=20, seed=7)
    assert custom.ci == (low - 1, high - 1) != result.ci


def test_overhead_of_times_under_a_second() -> None:
    result = overhead([0.5, 0.5], [0.55, 0.55], goal="minimize")
    assert result.overhead == pytest.approx(0.1)
    assert result.describe() == "overhead +10.0% ± 0.0%"


@pytest.mark.parametrize("platform", [[0.0, 0.0], [-1.0, -1.0]])
def test_overhead_against_a_median_that_is_not_positive_is_undefined(platform: list[float]) -> None:
    result = overhead([100.0, 100.0], platform, goal="maximize")
    assert math.isnan(result.overhead)
    assert result.describe() == "overhead n/a (no values)"


def test_overhead_description_gives_half_the_ci_width() -> None:
    result = overhead([100.0] * 4, [60.0, 80.0, 100.0, 120.0], goal="minimize")
    assert result.ci == pytest.approx((-0.4, 0.2))
    assert result.describe() == "overhead -10.0% ± 30.0%"


def test_a_ci_with_either_bound_missing_is_not_shown() -> None:
    # a bound is NaN when resampled ratios overflow (inf − inf in the interpolation), the other finite
    from kubebench.analyse.studies import Overhead
    from kubebench.numerics.stats import summarize

    for ci in ((0.02, math.nan), (math.nan, 0.06)):
        result = Overhead("maximize", summarize([100.0]), summarize([96.0]), 0.04, ci)
        assert result.describe() == "overhead +4.0% (too few runs for a CI)"


def test_efficiency_ci_uses_the_given_confidence_resamples_and_seed() -> None:
    from kubebench.numerics.stats import bootstrap_median_ratio

    base, two, four = [100.0, 98.0, 103.0, 101.0], [190.0, 185.0, 196.0], [350.0, 362.0, 341.0, 355.0]
    data = {1: base, 2: two, 4: four}
    # the defaults: a 95% CI from 2000 resamples; one generator seeded with 0 runs through the points
    rng = np.random.default_rng(0)
    expected = [bootstrap_median_ratio(v, base, confidence=0.95, resamples=2000, seed=rng) for v in (two, four)]
    points = scaling_efficiency(data)
    assert points[1].efficiency_ci == (expected[0][0] / 2, expected[0][1] / 2)
    assert points[2].efficiency_ci == (expected[1][0] / 4, expected[1][1] / 4)
    rng = np.random.default_rng(7)
    low, high = bootstrap_median_ratio(two, base, confidence=0.8, resamples=20, seed=rng)
    custom = scaling_efficiency(data, confidence=0.8, resamples=20, seed=7)
    assert custom[1].efficiency_ci == (low / 2, high / 2) != points[1].efficiency_ci


def test_throughputs_below_one_per_second_scale_like_any_other() -> None:
    points = scaling_efficiency({1: [0.5, 0.5], 2: [0.9, 0.9]})
    assert points[1].efficiency == pytest.approx(0.9)


def test_any_kind_of_number_is_accepted_like_summarize_accepts_it() -> None:
    from decimal import Decimal

    floats = {1: [100.0, 98.0, 102.0], 2: [190.0, 180.0, 185.0]}
    decimals = {n: [Decimal(str(v)) for v in values] for n, values in floats.items()}
    assert scaling_efficiency(decimals) == scaling_efficiency(floats)
    # the error shows the baseline's values as plain numbers, not as Python's reprs
    with pytest.raises(SpecError) as error:
        scaling_efficiency({1: [Decimal(0), Decimal(0)], 2: [3.0]})
    assert str(error.value) == "scaling efficiency needs a positive throughput at the baseline of 1 worker(s), got [0.0, 0.0]"


def test_scaling_without_any_worker_count_says_so() -> None:
    with pytest.raises(SpecError) as error:
        scaling_efficiency({})
    assert str(error.value) == "scaling efficiency needs throughput for at least one worker count, got none"
