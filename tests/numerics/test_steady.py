"""Tests of kubebench.numerics.steady: MSER-5 warm-up detection and drift."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from kubebench.numerics.steady import detect_steady_state


def _warm_then_steady(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    warmup = rng.normal(1.5, 0.05, 20)  # 20 slow steps (compilation, caches)
    steady = rng.normal(1.0, 0.02, 200)
    return np.concatenate([warmup, steady])


@pytest.mark.parametrize("seed", range(5))
def test_warmup_boundary_is_found_within_5_steps(seed: int) -> None:
    result = detect_steady_state(_warm_then_steady(seed))
    assert abs(result.warmup_steps - 20) <= 5
    assert result.n_steady == 220 - result.warmup_steps
    assert result.steady_mean == pytest.approx(1.0, abs=0.01)
    assert result.steady_median == pytest.approx(1.0, abs=0.01)
    assert not result.drifting


def test_gradual_warmup_is_found() -> None:
    rng = np.random.default_rng(11)
    ramp = np.linspace(2.0, 1.0, 20) + rng.normal(0, 0.02, 20)
    result = detect_steady_state(np.concatenate([ramp, rng.normal(1.0, 0.02, 200)]))
    assert abs(result.warmup_steps - 20) <= 5


@pytest.mark.parametrize("seed", range(3))
def test_linear_slowdown_is_drifting(seed: int) -> None:
    # Thermal throttling: step time grows 10% over the run. Plain MSER would call the first
    # half warm-up and see only ~5% left; the detrended MSER keeps the run and sees ~10%.
    rng = np.random.default_rng(seed)
    series = np.linspace(1.0, 1.1, 200) * rng.normal(1.0, 0.02, 200)
    result = detect_steady_state(series)
    assert result.drifting
    assert result.drift == pytest.approx(0.10, abs=0.03)
    assert result.warmup_steps <= 20


def test_falling_throughput_drifts_negative() -> None:
    rng = np.random.default_rng(5)
    series = np.linspace(500.0, 440.0, 150) + rng.normal(0, 5, 150)
    result = detect_steady_state(series)
    assert result.drifting
    assert result.drift == pytest.approx(-0.12, abs=0.03)


@pytest.mark.parametrize("seed", range(5))
def test_flat_noisy_series_is_steady_from_the_start(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    result = detect_steady_state(rng.normal(1.0, 0.02, 200))
    assert result.warmup_steps <= 10
    assert not result.drifting
    assert abs(result.drift) < 0.02


def test_small_significant_drift_is_not_drifting() -> None:
    # A 2% slope over a long quiet run is real but below the 5% size floor.
    rng = np.random.default_rng(9)
    series = np.linspace(1.0, 1.02, 500) + rng.normal(0, 0.002, 500)
    result = detect_steady_state(series)
    assert result.drift == pytest.approx(0.02, abs=0.005)
    assert not result.drifting


def test_warmup_is_at_most_half_the_series() -> None:
    series = np.concatenate([np.full(150, 3.0), np.full(50, 1.0)])
    assert detect_steady_state(series).warmup_steps <= 100


SHORT = [[], [1.0], [1.0, 2.0], [3.0, 1.0, 1.1, 0.9, 1.0, 1.05, 0.95, 1.0, 1.0], [5.0] + [1.0] * 23]


@pytest.mark.parametrize("series", SHORT)
def test_short_series_are_handled(series: list[float]) -> None:
    result = detect_steady_state(series)
    assert result.warmup_steps == 0
    assert result.n_steady == len(series)
    if series:
        assert result.steady_mean == pytest.approx(np.mean(series))
    else:
        assert math.isnan(result.steady_mean)
    if len(series) < 3:
        assert math.isnan(result.drift) and not result.drifting


def test_constant_series_has_no_drift() -> None:
    result = detect_steady_state([2.0] * 50)
    assert (result.warmup_steps, result.drift, result.drifting) == (0, 0.0, False)


def test_non_finite_steps_are_ignored() -> None:
    series = list(_warm_then_steady(0))
    series[100] = float("nan")
    result = detect_steady_state(series)
    assert result.n_steady == 219 - result.warmup_steps
    assert math.isfinite(result.steady_mean)


# Exact boundaries on small hand-made series (mutation testing, issue #20).

#: Batch means after a first batch of 5 steps: noise kept near the end, so that cutting the first
#: batch is the best MSER-5 truncation and only the tie rule decides whether to cut it.
_STEADY_BATCHES = [1.0, 0.99, 1.01, 1.0, 0.98, 1.02, 1.0]


@pytest.mark.parametrize("slow, warmup", [(0.054, 5), (0.05, 0)])
def test_a_slow_first_batch_is_cut_only_beyond_two_standard_errors(slow: float, warmup: int) -> None:
    # 8 batches, best cut after the first: the tie tolerance is 1 + 2·sqrt(2 / (8 − 1 − 2)) = 2.265 × the
    # best MSER. A first batch 5.4% slow scores 2.33 × the best (cut), 5.0% slow scores 2.13 × (a tie: kept).
    series = np.repeat([1.0 + slow, *_STEADY_BATCHES], 5)
    assert detect_steady_state(series).warmup_steps == warmup


def test_a_perfectly_steady_run_is_cut_exactly_after_its_warm_up() -> None:
    result = detect_steady_state([3.0] * 10 + [1.0] * 40)  # MSER is exactly 0 from step 10 on
    assert (result.warmup_steps, result.n_steady, result.steady_mean, result.drift) == (10, 40, 1.0, 0.0)


def test_25_steps_are_enough_to_cut_a_5_step_warm_up() -> None:
    # the shortest series that can be cut: 5 batches, one cut, 4 batches left for the line
    assert detect_steady_state([3.0] * 5 + [1.0] * 20).warmup_steps == 5


def test_a_warm_up_of_40_percent_is_cut_whole() -> None:
    rng = np.random.default_rng(1)
    series = np.concatenate([np.full(40, 3.0), 1.0 + 0.02 * rng.standard_normal(60)])
    assert detect_steady_state(series).warmup_steps == 40


def test_a_warm_up_beyond_half_the_series_is_not_cut_past_the_half() -> None:
    rng = np.random.default_rng(1)
    series = np.concatenate([np.full(55, 3.0), 1.0 + 0.02 * rng.standard_normal(45)])
    assert detect_steady_state(series).warmup_steps <= 50


@pytest.mark.parametrize("seed", range(2))
def test_the_cut_does_not_depend_on_the_level(seed: int) -> None:
    # step times in ns around 1e9 with a small jitter: the sums of squares must not cancel
    series = _warm_then_steady(seed)
    assert detect_steady_state(series + 1e9).warmup_steps == detect_steady_state(series).warmup_steps == 20


def test_drift_of_exactly_5_percent_is_not_drifting() -> None:
    series = 20.0 + np.arange(17) / 16  # a line from 20 to 21: +5% exactly, and significant
    result = detect_steady_state(series)
    assert result.drift == 0.05 and not result.drifting


def test_drift_is_measured_from_3_steps_on() -> None:
    assert detect_steady_state([1.0, 2.0, 3.0]).drift == pytest.approx(2.0)  # the line from 1 to 3
    assert math.isnan(detect_steady_state([0.0, 1.0, 2.0]).drift)  # relative to a start at 0: undefined
    assert detect_steady_state([0.0] * 10).drift == 0.0  # constant, even at 0: no drift


def test_an_empty_series_has_no_median_and_does_not_drift() -> None:
    result = detect_steady_state([])
    assert math.isnan(result.steady_median) and result.drifting is False


def test_missing_steps_given_as_none_are_dropped() -> None:
    # per-step values read from JSON hold null for a step that was not measured
    series = [None if i == 3 else v for i, v in enumerate(_warm_then_steady(0).tolist())]
    result = detect_steady_state(series)  # type: ignore[arg-type]
    assert result.n_steady == 219 - result.warmup_steps


def test_no_numpy_warning_is_printed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = detect_steady_state(_warm_then_steady(0))
    assert result.warmup_steps == 20


def test_a_constant_series_has_no_drift_and_an_insignificant_slope() -> None:
    from kubebench.numerics.steady import linear_drift

    assert linear_drift(np.full(5, 2.0)) == (0.0, 1.0)
    assert linear_drift(np.zeros(5)) == (0.0, 1.0)


@pytest.mark.parametrize("seed", range(3))
def test_a_short_warm_up_before_a_steep_drift_is_cut(seed: int) -> None:
    # steps 5..49 drift from 1.0 to 1.2; the first 5 steps sit above the line's way back (~0.98):
    # the line fitted to each tail must be the least-squares one for the warm-up to stand out
    rng = np.random.default_rng(seed)
    series = np.concatenate([np.full(5, 1.03), np.linspace(1.0, 1.2, 45) + rng.normal(0, 0.001, 45)])
    result = detect_steady_state(series)
    assert result.warmup_steps == 5 and result.drifting
