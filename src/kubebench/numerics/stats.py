"""Descriptive statistics of one metric over the repeats of a trial, plus a shared bootstrap.

Confidence intervals of the mean use Student's t distribution, not a bootstrap: benchmark trials
usually have 3 to 10 repeats, and a percentile bootstrap of so few values is too narrow (it cannot
see beyond the range of the sample), while the t interval widens correctly as n shrinks.

Values that are not finite (nan, inf) are not measurements: :func:`summarize` drops them and counts
them as failed, like runs that produced no value at all.

:func:`summarize` and :func:`t_interval` are pure Python (stdlib :mod:`math` only): importing NumPy
and SciPy costs about 0.6 s, which ``kubebench results`` would pay before printing anything.
NumPy is imported only inside the bootstrap functions, which need it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

NAN = float("nan")
_T = TypeVar("_T")


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


def summarize(values: Iterable[float], *, failed: int = 0, confidence: float = 0.95) -> Summary:
    """Summarize the successful values of one metric; ``failed`` counts runs without a value.

    ``values`` is any iterable of numbers (list, tuple, generator, NumPy array). Never raises on
    empty or short input: statistics that need more values are nan (stdev and the CI need 2
    values; the olympic mean falls back to the mean below 3).
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    raw = _floats(values)
    x = [v for v in raw if math.isfinite(v)]
    failed += len(raw) - len(x)
    n = len(x)
    if n == 0:
        return Summary(0, failed, *((NAN,) * 10), confidence=confidence)
    x.sort()  # one sort gives median, min, max and the olympic mean
    mean = _mean(x)
    stdev = _stdev(x, mean) if n >= 2 else NAN
    ci_low, ci_high = t_interval(mean, stdev, n, confidence)
    return Summary(
        n=n,
        failed=failed,
        mean=mean,
        median=_midpoint(x[(n - 1) // 2], x[n // 2]),
        stdev=stdev,
        cv=_relative(stdev, mean),
        min=x[0],
        max=x[-1],
        ci_low=ci_low,
        ci_high=ci_high,
        ci_half_width_rel=_relative(ci_high / 2 - ci_low / 2, mean),
        olympic_mean=_mean(x[1:-1]) if n >= 3 else mean,
        confidence=confidence,
    )


#: Above this magnitude, squares (and sums of a few values) may overflow: values are scaled first.
_HUGE = 2.0**500


def _mean(x: list[float]) -> float:
    """The mean of sorted finite values, finite too (near the largest floats their sum overflows, so
    they are summed scaled by a power of two instead), and never outside [min, max] (a division
    after rounding may fall just outside: the mean of five equal values is that value)."""
    mean = _fsum(x) / len(x)
    if not math.isfinite(mean) and all(map(math.isfinite, x)):
        scale = _power_of_two_near(max(abs(x[0]), abs(x[-1])))
        mean = math.fsum(v / scale for v in x) / len(x) * scale
    return min(max(mean, x[0]), x[-1]) if math.isfinite(mean) else mean


def _stdev(x: list[float], mean: float) -> float:
    """The sample standard deviation; inf only when it is larger than the largest float."""
    largest = max(map(abs, x))
    if largest < _HUGE:
        return math.sqrt(_fsum([(v - mean) * (v - mean) for v in x]) / (len(x) - 1))
    scale = _power_of_two_near(largest)
    center = mean / scale
    deviations = [(v / scale - center) ** 2 for v in x]
    return math.sqrt(math.fsum(deviations) / (len(x) - 1)) * scale  # may round up to inf, rightly


def _midpoint(a: float, b: float) -> float:
    """(a + b) / 2 without overflow, and exact for equal values."""
    middle = 0.5 * (a + b)
    return middle if math.isfinite(middle) or not (math.isfinite(a) and math.isfinite(b)) else 0.5 * a + 0.5 * b


def _power_of_two_near(value: float) -> float:
    """A power of two p with value / p in [1, 2): dividing by it is exact and cannot overflow."""
    return math.ldexp(1.0, math.frexp(value)[1] - 1) if value > 0 else 1.0


def t_interval(mean: float, stdev: float, n: int, confidence: float) -> tuple[float, float]:
    """Student-t confidence interval of a mean; (nan, nan) below 2 values."""
    if n < 2 or math.isnan(stdev):
        return NAN, NAN
    half = t_quantile(n - 1, (1 + confidence) / 2) * stdev / math.sqrt(n)
    return mean - half, mean + half


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` > 0 degrees of freedom, any real (Welch's are fractional).

    Ours rather than ``scipy.special.stdtr``: importing ``scipy.special`` costs ~0.4 s, a third of what
    ``kubebench history`` may take. P(T > t) = I_x(ν/2, 1/2) / 2 with x = ν / (ν + t²) for t ≥ 0, the
    regularized incomplete beta function from its continued fraction; within 1e-9 of SciPy, relative
    (tested, tails down to 1e-300 included), for ν up to 1e7: beyond, its continued fraction in x
    loses digits of 1 − x (4e-9 at ν = 1e8, 1e-6 at 1e10), where the normal tail is as good.
    """
    if math.isnan(t) or not df > 0:
        return NAN
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    # both x and 1 - x computed as ratios: near t = 0 or for huge ν, 1 - x would round away
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t), t * t / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def _incomplete_beta(a: float, b: float, x: float, y: float) -> float:
    """The regularized incomplete beta function I_x(a, b), a, b > 0, 0 ≤ x ≤ 1, given y = 1 − x too."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    # log x and log y from the smaller of the two: x = 1 - y rounded loses the digits of a small y,
    # and a huge a (ν / 2) would multiply that loss
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    log_front = a * log_x + b * log_y - _log_beta(a, b)
    if x < (a + 1) / (a + b + 2):  # the continued fraction converges fast on this side
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def _log_beta(a: float, b: float) -> float:
    """log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b), a, b > 0, accurate for a large argument too:
    there lgamma(a + b) - lgamma(a) cancels (lgamma(5e11) is 1.3e13: its rounding alone is 2e-3), so it
    is taken from Stirling's series, whose large terms cancel exactly on paper instead."""
    small, big = sorted((a, b))
    if big < 20.0:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

    def correction(z: float) -> float:  # lgamma(z) - ((z - 1/2) log z - z + log(2π) / 2): from z = 20
        # on, the first term left out, 1 / (1188 z⁹), is below 2e-15
        w = 1.0 / (z * z)
        return (1 / 12 - w * (1 / 360 - w * (1 / 1260 - w / 1680))) / z

    # lgamma(big + small) - lgamma(big), Stirling's terms gathered
    rise = (big - 0.5) * math.log1p(small / big) + small * math.log(big + small) - small
    return math.lgamma(small) - rise - correction(big + small) + correction(big)


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (its terms d_2m and d_2m+1), by the modified Lentz method."""
    tiny = 1e-300

    def guard(v: float) -> float:
        return v if abs(v) > tiny else tiny

    c, d = 1.0, 1.0 / guard(1.0 - (a + b) * x / (a + 1))
    fraction = d
    for m in range(1, 1000):
        for term in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                     -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 / guard(1.0 + term * d)
            c = guard(1.0 + term / c)
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-16:
            break
    return fraction


def t_quantile(df: int, p: float) -> float:
    """The p-quantile of Student's t distribution with ``df`` (an integer >= 1) degrees of freedom.

    Ours rather than ``scipy.special.stdtrit``: importing SciPy (and NumPy) costs about 0.6 s, which
    every ``kubebench results`` would pay for one number per trial. For integer ν, P(|T| <= t) is a
    finite sum in θ = atan(t/√ν) (Abramowitz & Stegun 26.7.3 for odd ν, 26.7.4 for even ν), solved
    for θ by Newton's method inside a bracket. Within 1e-10 of SciPy for 1e-6 <= p <= 1 - 1e-6, the
    range of confidence levels; further out the precision falls as 1e-16 / min(p, 1 - p).
    """
    try:
        nu = int(df)
    except (TypeError, ValueError, OverflowError):  # None, nan, inf, text
        nu = 0
    if isinstance(df, bool) or nu != df or nu < 1:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {df!r}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be a probability strictly between 0 and 1, got {p!r}")
    if p == 0.5:
        return 0.0
    return math.copysign(_two_sided_quantile(nu, abs(2.0 * p - 1.0)), p - 0.5)


@functools.lru_cache(maxsize=256)  # the trials of an experiment share their degrees of freedom
def _two_sided_quantile(nu: int, a: float) -> float:
    """The t > 0 with P(|T| <= t) = a, for ν = nu degrees of freedom."""
    if nu == 1:  # Cauchy: P(|T| <= t) = 2θ/π
        return math.tan(a * math.pi / 2)
    odd, m = nu % 2 == 1, nu // 2
    # P(|T| <= t) = sin θ · S (even ν) or (2/π)(θ + sin θ cos θ · S) (odd ν), S = Σ_{k<m} c_k cos^2k θ
    coefficients = [1.0]
    for k in range(1, m):
        coefficients.append(coefficients[-1] * ((2 * k) / (2 * k + 1) if odd else (2 * k - 1) / (2 * k)))
    coefficients.reverse()  # for Horner's rule
    # its derivative: 2C·cos^(ν-1) θ, C = Γ((ν+1)/2) / (√π Γ(ν/2)) the constant of the t density
    two_c = 2.0 * math.exp(math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2)) / math.sqrt(math.pi)

    def excess(theta: float) -> float:
        s, c = math.sin(theta), math.cos(theta)
        total, y = 0.0, s * s
        if y < 0.5:  # cos²θ near 1 rounds, and its powers would multiply the error: × (1 - sin²θ)
            for coefficient in coefficients:
                total = total - total * y + coefficient
        else:
            for coefficient in coefficients:
                total = total * (c * c) + coefficient
        return ((theta + s * c * total) / (math.pi / 2) if odd else s * total) - a

    # The sum is increasing and concave in θ: from the normal quantile (below the t quantile),
    # Newton's steps rise to the root without passing it; the bracket guards the ends.
    low, high = 0.0, math.pi / 2
    theta = math.atan(NormalDist().inv_cdf((1 + a) / 2) / math.sqrt(nu))
    for _ in range(100):
        f = excess(theta)
        if f == 0.0:
            break
        low, high = (low, theta) if f > 0 else (theta, high)
        step = f / (two_c * math.cos(theta) ** (nu - 1))
        following = theta - step if low < theta - step < high else (low + high) / 2
        if abs(following - theta) <= 4e-16 * theta:  # two ulps: converged
            break
        theta = following
    return math.sqrt(nu) * math.tan(theta)


def olympic_mean(values: Iterable[float]) -> float:
    """MLPerf's olympic mean: drop the single lowest and highest value, average the rest.

    Below 3 values nothing can be dropped, so it is the plain mean (nan when empty).
    """
    raw = _floats(values)
    # Sort like NumPy: nan after everything else (Python's sort is undefined with nan).
    x = sorted(v for v in raw if not math.isnan(v))
    x += [NAN] * (len(raw) - len(x))
    if not x:
        return NAN
    if len(x) < 3:
        return _mean(x)
    return _mean(x[1:-1])


def _floats(values: Iterable[float]) -> list[float]:
    """The values as a flat list of floats, like ``np.asarray(values, dtype=float).ravel()``."""
    if hasattr(values, "ravel") and hasattr(values, "tolist"):  # a NumPy array, of any shape
        values = values.ravel().tolist()
    elif isinstance(values, (int, float)):
        values = (values,)
    return [float(v) for v in values]


def _fsum(values: list[float]) -> float:
    """Correctly rounded sum; inf or nan (like NumPy) where math.fsum would raise."""
    try:
        return math.fsum(values)
    except (OverflowError, ValueError):  # an intermediate overflow, or inf + -inf
        return sum(values)


def bootstrap_median_ratio(
    numerator: Sequence[float] | np.ndarray,
    denominator: Sequence[float] | np.ndarray,
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
    import numpy as np

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
    with np.errstate(over="ignore"):  # a ratio above the largest float is inf, rightly
        return _quantiles(num_medians / den_medians, tail, 1 - tail)


def scaled_together(*samples: np.ndarray) -> tuple[np.ndarray, ...]:
    """The samples divided by one power of two (exact) when their values are so large that sums or
    squares of them would overflow; statistics that do not depend on scale (t, ratios, ranks)
    are then computed on the scaled values."""
    import numpy as np

    largest = max((float(np.max(np.abs(s))) for s in samples if s.size), default=0.0)
    if not largest < _HUGE or not math.isfinite(largest):
        scale = _power_of_two_near(largest) if math.isfinite(largest) else 1.0
        return tuple(s / scale for s in samples)
    return samples


def _resampled_medians(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of ``resamples`` bootstrap samples of x, vectorized as one (resamples, n) array."""
    import numpy as np

    # Resampling positions in the sorted values and sorting those small integers is the same as
    # sorting resampled values, and several times faster than np.median along an axis.
    ordered = np.sort(x)
    dtype = np.int16 if x.size < 2**15 else np.int64
    positions = rng.integers(0, x.size, size=(resamples, x.size), dtype=dtype)
    positions.sort(axis=1)
    middle_low, middle_high = positions[:, (x.size - 1) // 2], positions[:, x.size // 2]
    low, high = ordered[middle_low], ordered[middle_high]
    with np.errstate(over="ignore"):
        medians: np.ndarray = 0.5 * (low + high)
    overflowed = ~np.isfinite(medians)
    if overflowed.any():  # values near the largest floats: halve first (exact for them)
        medians[overflowed] = 0.5 * low[overflowed] + 0.5 * high[overflowed]
    return medians


def _quantiles(x: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """np.quantile's default (linear) quantiles at low and high, from one sort of x.

    np.quantile costs ~0.2 ms of argument handling per call; this keeps a comparison ~1 ms.
    Unlike np.quantile, infinite values (ratios that overflowed) give an infinite quantile, not nan.
    """
    import numpy as np

    s = np.sort(x)
    out = []
    for q in (low, high):
        pos = q * (s.size - 1)
        i = min(int(pos), s.size - 2)
        out.append(_between(float(s[i]), float(s[i + 1]), pos - i))
    return out[0], out[1]


def _between(a: float, b: float, fraction: float) -> float:
    """a + fraction * (b - a) for sorted a <= b and fraction in [0, 1], with its limits where that
    arithmetic gives nan or inf: an end itself at fraction 0 or 1 or when a == b (inf == inf too),
    the infinite end when only one is (every point strictly between is that infinity)."""
    if fraction == 0 or a == b:
        return a
    if fraction == 1:
        return b
    if math.isinf(a) != math.isinf(b):
        return a if math.isinf(a) else b
    step = b - a
    if math.isinf(step) and not math.isinf(a):  # finite ends farther apart than the largest float
        return (1 - fraction) * a + fraction * b
    return a + fraction * step


def _relative(part: float, whole: float) -> float:
    """part / |whole|, nan when undefined (nan input or zero whole)."""
    if math.isnan(part) or math.isnan(whole) or whole == 0:
        return NAN
    return part / abs(whole)


def _json_number(value: _T) -> _T | None:
    """nan/inf → None so that json.dumps writes valid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
