"""Serving metrics from per-request records (pure): latency percentiles, throughput, goodput, errors.

Names (seconds, requests/s, tokens/s): ``ttft_*``, ``tpot_*``, ``itl_*``, ``e2e_*`` each with ``_p50``,
``_p90``, ``_p99`` and ``_mean``; ``request_throughput``, ``input_tokens_per_s``,
``output_tokens_per_s``, ``output_tokens_per_s_per_user``, ``goodput``, ``error_rate`` and
``error_rate_<kind>``. Latencies are over the measured requests (sent inside the window);
throughputs count what completed inside the window, divided by its length, so that they are the
steady state, not the ramp-up or the drain. Percentiles of several replicas are those of all their
records together (exact), never an average of the replicas' percentiles.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from .records import RecordsFile, RequestRecord
from .slo import meets

PERCENTILES = (50, 90, 99)
LATENCIES = ("ttft", "tpot", "itl", "e2e")


def percentile(values: Sequence[float], q: float) -> float:
    """Linearly interpolated q-th percentile (0..100), as NumPy's default; nan when empty."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_samples(records: Sequence[RequestRecord]) -> dict[str, list[float]]:
    """Every measured, successful request's TTFT, TPOT and E2E, and every inter-token gap."""
    ok = [r for r in records if r.measured and r.ok]
    return {
        "ttft": [r.ttft for r in ok if r.ttft is not None],
        "tpot": [r.tpot for r in ok if r.tpot is not None],
        "itl": [gap for r in ok for gap in r.itls()],
        "e2e": [r.e2e for r in ok],
    }


def latency_metrics(records: Sequence[RequestRecord]) -> dict[str, float]:
    """``<latency>_p50/_p90/_p99/_mean`` of each latency that has samples."""
    out: dict[str, float] = {}
    for name, values in latency_samples(records).items():
        if not values:
            continue
        for q in PERCENTILES:
            out[f"{name}_p{q}"] = percentile(values, q)
        out[f"{name}_mean"] = math.fsum(values) / len(values)
    return out


def throughput_metrics(records: Sequence[RequestRecord], window: tuple[float, float],
                       slo: dict[str, float] | None = None) -> dict[str, float]:
    """Requests and tokens per second completed inside ``window``, and goodput under ``slo``."""
    start, end = window
    length = end - start
    if length <= 0:
        return {}
    done = [r for r in records if r.ok and start <= r.end <= end]
    out_tokens: float = sum(1 for r in records if r.ok for t in r.token_times if start <= t <= end)
    if any(r.tokens_from == "usage" for r in done):  # the server counted: scale chunk times to its count
        out_tokens = sum(_tokens_in(r, start, end) for r in records if r.ok)
    metrics = {
        "request_throughput": len(done) / length,
        "input_tokens_per_s": sum(r.input_tokens for r in done) / length,
        "output_tokens_per_s": out_tokens / length,
        "window_s": length,
    }
    if slo:
        good = [r for r in done if meets({"ttft": r.ttft, "tpot": r.tpot, "e2e": r.e2e}, slo)]
        metrics["goodput"] = len(good) / length
        metrics["goodput_ratio"] = len(good) / len(done) if done else 0.0
    return metrics


def _tokens_in(record: RequestRecord, start: float, end: float) -> float:
    """Tokens of ``record`` produced inside the window, when chunks may carry several tokens."""
    times = record.token_times
    if not times:
        return 0.0
    inside = sum(1 for t in times if start <= t <= end)
    return record.output_tokens * inside / len(times)


def error_metrics(records: Sequence[RequestRecord]) -> dict[str, float]:
    """``error_rate`` (failed / measured requests) and ``error_rate_<kind>`` for each kind seen."""
    measured = [r for r in records if r.measured]
    if not measured:
        return {}
    kinds = Counter(r.status for r in measured if not r.ok)
    out = {"error_rate": sum(kinds.values()) / len(measured), "requests_measured": float(len(measured)),
           "requests_failed": float(sum(kinds.values()))}
    out.update({f"error_rate_{kind}": count / len(measured) for kind, count in sorted(kinds.items())})
    return out


def interactivity(records: Sequence[RequestRecord]) -> dict[str, float]:
    """Output tokens per second that one user sees (median over requests of 1 / TPOT)."""
    speeds = [1.0 / r.tpot for r in records if r.measured and r.ok and r.tpot]
    return {"output_tokens_per_s_per_user": percentile(speeds, 50)} if speeds else {}


def serving_metrics(data: RecordsFile, slo: dict[str, float] | None = None) -> dict[str, float]:
    """Every serving metric of a run (one replica's records, or several merged)."""
    records = data.records
    metrics = latency_metrics(records)
    metrics.update(throughput_metrics(records, data.window, slo))
    metrics.update(error_metrics(records))
    metrics.update(interactivity(records))
    return metrics


def tokens_source(records: Sequence[RequestRecord]) -> str:
    """``usage``, ``chunks`` or ``mixed``: where the output token counts came from."""
    sources = {r.tokens_from for r in records if r.ok}
    return sources.pop() if len(sources) == 1 else ("mixed" if sources else "none")


def energy_metrics(joules: float, records: Sequence[RequestRecord], window: tuple[float, float]) -> dict[str, float]:
    """Energy per output token and per request, from a total-energy counter read at the window's
    ends (``joules``: the difference), over what completed inside the window."""
    start, end = window
    done = [r for r in records if r.ok and start <= r.end <= end]
    tokens = sum(_tokens_in(r, start, end) for r in records if r.ok)
    out = {"energy_joules": joules}
    if tokens > 0:
        out["energy_per_output_token_j"] = joules / tokens
    if done:
        out["energy_per_request_j"] = joules / len(done)
    return out
