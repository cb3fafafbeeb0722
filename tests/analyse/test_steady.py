"""Tests of kubebench.analyse.steady: MSER-5 warm-up detection and drift."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kubebench.analyse.steady import detect_steady_state


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
