"""Descriptive statistics of one metric over the repeats of a trial, plus a shared bootstrap.

Confidence intervals of the mean use Student's t distribution, not a bootstrap: benchmark trials
usually have 3 to 10 repeats, and a percentile bootstrap of so few values is too narrow (it cannot
see beyond the range of the sample), while the t interval widens correctly as n shrinks.

Values that are not finite (nan, inf) are not measurements: :func:`summarize` drops them and counts
them as failed, like runs that produced no value at all.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

NAN = float("nan")


@dataclass(frozen=True)
class Summary:
    """One metric over the repeats of a trial; statistics that need more values are nan."""

    n: int
    failed: int
    mean: float
    median: float
    stdev: float
    cv: float
    min: float
    max: float
    ci_low: float
    ci_high: float
    ci_half_width_rel: float
    olympic_mean: float
    confidence: float = 0.95

    def to_dict(self) -> dict[str, float | int | None]:
        """Plain dict for JSON; nan becomes ``None`` because JSON has no nan."""
        return {k: _json_number(v) for k, v in dataclasses.asdict(self).items()}


def summarize(values: Sequence[float], *, failed: int = 0, confidence: float = 0.95) -> Summary:
    """Summarize the successful values of one metric; ``failed`` counts runs without a value.

    Never raises on empty or short input: statistics that need more values are nan
    (stdev and the CI need 2 values; the olympic mean falls back to the mean below 3).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    raw = np.asarray(values, dtype=float).ravel()
    x = raw[np.isfinite(raw)]
    failed += int(raw.size - x.size)
    n = int(x.size)
    if n == 0:
        return Summary(0, failed, *([NAN] * 10), confidence=confidence)
    x.sort()  # one sort gives median, min, max and the olympic mean
    mean = float(x.sum()) / n
    stdev = math.sqrt(float(np.sum((x - mean) ** 2)) / (n - 1)) if n >= 2 else NAN
    ci_low, ci_high = t_interval(mean, stdev, n, confidence)
    return Summary(
        n=n,
        failed=failed,
        mean=mean,
        median=float(0.5 * (x[(n - 1) // 2] + x[n // 2])),
        stdev=stdev,
        cv=_relative(stdev, mean),
        min=float(x[0]),
        max=float(x[-1]),
        ci_low=ci_low,
        ci_high=ci_high,
        ci_half_width_rel=_relative((ci_high - ci_low) / 2, mean),
        olympic_mean=float(x[1:-1].mean()) if n >= 3 else mean,
        confidence=confidence,
    )


def t_interval(mean: float, stdev: float, n: int, confidence: float) -> tuple[float, float]:
    """Student-t confidence interval of a mean; (nan, nan) below 2 values."""
    if n < 2 or math.isnan(stdev):
        return NAN, NAN
    # special.stdtrit is the t quantile without scipy.stats' per-call overhead.
    half = float(special.stdtrit(n - 1, (1 + confidence) / 2)) * stdev / math.sqrt(n)
    return mean - half, mean + half


def olympic_mean(values: Sequence[float]) -> float:
    """MLPerf's olympic mean: drop the single lowest and highest value, average the rest.

    Below 3 values nothing can be dropped, so it is the plain mean (nan when empty).
    """
    x = np.sort(np.asarray(values, dtype=float))
    if x.size == 0:
        return NAN
    if x.size < 3:
        return float(np.mean(x))
    return float(np.mean(x[1:-1]))


def bootstrap_median_ratio(
    numerator: Sequence[float],
    denominator: Sequence[float],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int | np.random.Generator = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of ``median(numerator) / median(denominator)``.

    Both samples are resampled independently (they come from separate runs). Returns (nan, nan)
    when either side has fewer than 2 values, or when a resampled denominator median is not
    positive (a ratio of metrics is only meaningful for positive values).
    """
    num = np.asarray(numerator, dtype=float)
    den = np.asarray(denominator, dtype=float)
    if num.size < 2 or den.size < 2:
        return NAN, NAN
    rng = np.random.default_rng(seed)
    num_medians = _resampled_medians(num, resamples, rng)
    den_medians = _resampled_medians(den, resamples, rng)
    if np.any(den_medians <= 0):
        return NAN, NAN
    tail = (1 - confidence) / 2
    return _quantiles(num_medians / den_medians, tail, 1 - tail)


def _resampled_medians(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``resamples`` bootstrap samples of x, vectorized as one (resamples, n) array."""
    # Resampling positions in the sorted values and sorting those small integers is the same as
    # sorting resampled values, and several times faster than np.median along an axis.
    ordered = np.sort(x)
    dtype = np.int16 if x.size < 2**15 else np.int64
    positions = rng.integers(0, x.size, size=(resamples, x.size), dtype=dtype)
    positions.sort(axis=1)
    middle_low, middle_high = positions[:, (x.size - 1) // 2], positions[:, x.size // 2]
    return 0.5 * (ordered[middle_low] + ordered[middle_high])


def _quantiles(x: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """np.quantile's default (linear) quantiles at low and high, from one sort of x.

    np.quantile costs ~0.2 ms of argument handling per call; this keeps a comparison ~1 ms.
    """
    s = np.sort(x)
    out = []
    for q in (low, high):
        pos = q * (s.size - 1)
        i = min(int(pos), s.size - 2)
        out.append(float(s[i] + (pos - i) * (s[i + 1] - s[i])))
    return out[0], out[1]


def _relative(part: float, whole: float) -> float:
    """part / |whole|, nan when undefined (nan input or zero whole)."""
    if math.isnan(part) or math.isnan(whole) or whole == 0:
        return NAN
    return part / abs(whole)


def _json_number(value: object) -> object:
    """nan/inf → None so that json.dumps writes valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
