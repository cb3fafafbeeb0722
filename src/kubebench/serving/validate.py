"""Did the load generator do what it was told? Achieved vs configured rate and concurrency, a
Kolmogorov–Smirnov test of the inter-arrival times, and the client's own lag (send time vs schedule,
event-loop delay). A run whose client could not keep up is marked invalid with the reason, so that
its numbers are not read as the server's latency.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .arrivals import Arrivals
from .metrics import percentile
from .records import RequestRecord

#: A run is invalid when its achieved rate is this far below the configured one (relative).
RATE_TOLERANCE = 0.05
#: Requests below which the achieved rate is not judged (the jitter of a few sends moves it by more).
MIN_REQUESTS = 20
#: … or when the arrivals fit the configured distribution this badly: a KS statistic above this
#: *and* a p-value below ``KS_ALPHA`` (significant and large: thousands of samples make tiny,
#: harmless jitter significant).
KS_MAX_STATISTIC = 0.05
KS_ALPHA = 0.001


@dataclass(frozen=True)
class Check:
    """The self-validation of one run: numbers, and the reasons it is invalid (none when valid)."""

    metrics: dict[str, float]
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def valid(self) -> bool:
        """No reason to doubt the client."""
        return not self.reasons


def lag_metrics(records: Sequence[RequestRecord], loop_delays: Sequence[float]) -> dict[str, float]:
    """``client_lag_p50/p99/max``: send time minus scheduled time; ``loop_delay_p99/max``: how late the
    event loop woke up (seconds)."""
    lags = [r.sent - r.scheduled for r in records if r.measured]
    out: dict[str, float] = {}
    if lags:
        out |= {"client_lag_p50": percentile(lags, 50), "client_lag_p99": percentile(lags, 99),
                "client_lag_max": max(lags)}
    if loop_delays:
        out |= {"loop_delay_p99": percentile(list(loop_delays), 99), "loop_delay_max": max(loop_delays)}
    return out


def send_rate(records: Sequence[RequestRecord], field: str = "sent",
              window: tuple[float, float] | None = None) -> float:
    """Requests per second: sent inside ``window`` over its length (a run by duration), else between
    the first and the last measured send. ``field``: ``sent``, or ``scheduled`` for the schedule's own."""
    if window is not None and window[1] > window[0]:
        return sum(1 for r in records if window[0] <= getattr(r, field) < window[1]) / (window[1] - window[0])
    times = sorted(getattr(r, field) for r in records if r.measured)
    if len(times) < 2 or times[-1] <= times[0]:
        return math.nan
    return (len(times) - 1) / (times[-1] - times[0])


def mean_concurrency(records: Sequence[RequestRecord], window: tuple[float, float]) -> float:
    """Requests in flight on average inside the window (time-weighted)."""
    start, end = window
    if end <= start:
        return math.nan
    busy = sum(max(0.0, min(r.end, end) - max(r.sent, start)) for r in records)
    return busy / (end - start)


def arrival_fit(records: Sequence[RequestRecord], arrivals: Arrivals) -> dict[str, float]:
    """KS statistic and p-value of the measured inter-arrival times against the configured law; for
    a constant rate, the coefficient of variation of the gaps instead (a KS test needs a spread)."""
    sent = sorted(r.sent for r in records if r.measured)
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    if len(gaps) < 20:
        return {}
    if arrivals.distribution == "constant":
        mean = math.fsum(gaps) / len(gaps)
        spread = math.sqrt(math.fsum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1))
        return {"arrival_gap_cv": spread / mean if mean > 0 else math.nan}
    statistic = ks_statistic(gaps, arrivals)
    return {"arrival_ks_stat": statistic, "arrival_ks_pvalue": ks_pvalue(statistic, len(gaps))}


def ks_statistic(samples: Sequence[float], arrivals: Arrivals) -> float:
    """The one-sample Kolmogorov–Smirnov statistic of ``samples`` against the inter-arrival law.

    Ours, not ``scipy.stats.kstest``: importing scipy.stats takes seconds on a busy machine, in every
    load generator; the gamma CDF comes from the lighter ``scipy.special`` only when it is not Poisson.
    """
    import numpy as np

    x = np.sort(np.asarray(samples, dtype=float))
    n = len(x)
    scale = 1.0 / (arrivals.rate * arrivals.shape)
    if arrivals.shape == 1.0:
        cdf = -np.expm1(-x / scale)
    else:
        from scipy.special import gammainc

        cdf = gammainc(arrivals.shape, x / scale)
    above = np.arange(1, n + 1) / n - cdf
    below = cdf - np.arange(0, n) / n
    return float(max(above.max(), below.max()))


def ks_pvalue(statistic: float, n: int) -> float:
    """Asymptotic p-value of a KS statistic with Stephens' small-sample correction (good from n ≈ 20)."""
    lam = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * statistic
    if lam < 0.2:
        return 1.0
    total = sum((-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return min(1.0, max(0.0, 2 * total))


def check(records: Sequence[RequestRecord], window: tuple[float, float], loop_delays: Sequence[float], *,
          arrivals: Arrivals | None, concurrency: int | None, max_lag: float,
          send_window: tuple[float, float] | None = None) -> Check:
    """Measure the client against its configuration; ``max_lag`` bounds its p99 lag and loop delay;
    ``send_window``: the seconds a run by duration sent in (its rate is counted over them)."""
    metrics = lag_metrics(records, loop_delays)
    reasons: list[str] = []
    if arrivals is not None:
        rate, planned = send_rate(records, "sent", send_window), send_rate(records, "scheduled", send_window)
        metrics |= {"request_rate_target": arrivals.rate, "request_rate_scheduled": planned,
                    "request_rate_achieved": rate}
        metrics |= arrival_fit(records, arrivals)
        enough = sum(1 for r in records if r.measured) >= MIN_REQUESTS  # a few sends' jitter is no rate
        if enough and rate < planned * (1 - RATE_TOLERANCE):
            reasons.append(f"sent {rate:.3g} requests/s of the {planned:.3g} scheduled")
        if metrics.get("arrival_ks_pvalue", 1.0) < KS_ALPHA and metrics.get("arrival_ks_stat", 0.0) > KS_MAX_STATISTIC:
            reasons.append(f"inter-arrival times do not follow the configured {arrivals.distribution} law "
                           f"(KS statistic {metrics['arrival_ks_stat']:.3f})")
    if concurrency is not None:
        last_send = max((r.sent for r in records if r.measured), default=window[1])
        achieved = mean_concurrency(records, (window[0], min(window[1], last_send)))
        metrics |= {"concurrency_target": float(concurrency), "concurrency_achieved": achieved}
        if achieved < concurrency * (1 - RATE_TOLERANCE):
            reasons.append(f"kept {achieved:.3g} requests in flight of the {concurrency} configured")
    if metrics.get("client_lag_p99", 0.0) > max_lag:
        reasons.append(f"the client sent late: p99 lag {metrics['client_lag_p99'] * 1e3:.1f} ms > "
                       f"{max_lag * 1e3:g} ms")
    if metrics.get("loop_delay_p99", 0.0) > max_lag:
        reasons.append(f"the client's event loop was late: p99 delay {metrics['loop_delay_p99'] * 1e3:.1f} ms > "
                       f"{max_lag * 1e3:g} ms (token times would count the client's delay)")
    metrics["client_valid"] = 0.0 if reasons else 1.0
    return Check(metrics, tuple(reasons))
