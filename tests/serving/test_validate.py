"""The load generator's self-validation, on schedules and records made without a clock."""

from __future__ import annotations

import numpy as np
import pytest

from kubebench.serving.arrivals import Arrivals
from kubebench.serving.records import RequestRecord
from kubebench.serving.validate import check, ks_pvalue, ks_statistic


def sent_at(times: list[float], scheduled: list[float] | None = None, duration: float = 0.05) -> list[RequestRecord]:
    scheduled = scheduled or times
    return [RequestRecord(0, i, s, t, (t + 0.01,), t + duration, 10, 1, "chunks") for i, (s, t) in
            enumerate(zip(scheduled, times))]


def test_same_seed_same_schedule_and_the_mean_rate_holds() -> None:
    arrivals = Arrivals(20.0, "gamma", 0.5)
    a, b = arrivals.offsets(7, count=5000), arrivals.offsets(7, count=5000)
    assert np.array_equal(a, b) and a[0] == 0.0
    assert 4999 / a[-1] == pytest.approx(20.0, rel=0.06)
    by_duration = Arrivals(5.0).offsets(1, duration=100.0)
    assert len(by_duration) == 500 and by_duration[0] == 0.0 and by_duration[-1] < 100.0  # exactly the rate
    assert len(Arrivals(3.0, "gamma", 0.3).offsets(2, duration=10.0)) == 30
    assert np.allclose(np.diff(Arrivals(4.0, "constant").offsets(0, count=9)), 0.25)


@pytest.mark.parametrize("distribution, shape", [("poisson", 1.0), ("gamma", 0.5), ("gamma", 3.0)])
def test_a_client_on_schedule_is_valid(distribution: str, shape: float) -> None:
    arrivals = Arrivals(10.0, distribution, shape)
    times = list(arrivals.offsets(3, count=2000))
    result = check(sent_at(times), (0.0, times[-1]), [0.001] * 100, arrivals=arrivals, concurrency=None, max_lag=0.02)
    assert result.valid, result.reasons
    assert result.metrics["arrival_ks_pvalue"] > 0.001 and result.metrics["client_valid"] == 1.0
    assert result.metrics["request_rate_achieved"] == pytest.approx(result.metrics["request_rate_scheduled"])


def test_a_client_that_sent_late_is_invalid_with_the_reason() -> None:
    arrivals = Arrivals(50.0)
    scheduled = list(arrivals.offsets(1, count=1000))
    late = [s + 0.002 * i for i, s in enumerate(scheduled)]  # falls further behind with every request
    result = check(sent_at(late, scheduled), (0.0, scheduled[-1]), [], arrivals=arrivals, concurrency=None,
                   max_lag=0.02)
    assert not result.valid and result.metrics["client_valid"] == 0.0
    assert any("sent late" in r for r in result.reasons)
    assert any("requests/s of the" in r for r in result.reasons)


def test_arrivals_off_their_law_are_detected() -> None:
    arrivals = Arrivals(10.0)  # told Poisson, sent evenly spaced
    even = [i * 0.1 for i in range(2000)]
    result = check(sent_at(even), (0.0, even[-1]), [], arrivals=arrivals, concurrency=None, max_lag=0.02)
    assert any("do not follow the configured poisson law" in r for r in result.reasons)


def test_a_late_event_loop_is_invalid() -> None:
    times = list(Arrivals(10.0).offsets(0, count=200))
    result = check(sent_at(times), (0.0, times[-1]), [0.05] * 100, arrivals=Arrivals(10.0), concurrency=None,
                   max_lag=0.02)
    assert any("event loop was late" in r for r in result.reasons)


def test_closed_loop_concurrency_is_measured() -> None:
    # 4 users back to back, 1 s per request, for 10 s: 4 in flight
    records = [RequestRecord(0, u * 10 + k, float(k), float(k), (k + 0.1,), k + 1.0, 10, 1, "chunks")
               for u in range(4) for k in range(10)]
    ok = check(records, (0.0, 10.0), [], arrivals=None, concurrency=4, max_lag=0.02)
    assert ok.valid and ok.metrics["concurrency_achieved"] == pytest.approx(4.0, rel=0.02)
    short = check(records, (0.0, 10.0), [], arrivals=None, concurrency=8, max_lag=0.02)
    assert any("kept 4 requests in flight of the 8" in r for r in short.reasons)


def test_ks_matches_its_definition_on_a_known_sample() -> None:
    arrivals = Arrivals(1.0)
    samples = [0.5, 1.0, 2.0]  # exponential CDF: 0.393, 0.632, 0.865
    expected = max(1 / 3 - 0.0, 0.393469 - 0.0, 0.632121 - 1 / 3, 2 / 3 - 0.393469, 0.864665 - 2 / 3, 1 - 0.864665,
                   1 / 3 - 0.393469)
    assert ks_statistic(samples, arrivals) == pytest.approx(0.393469, abs=1e-5) == pytest.approx(expected, abs=1e-5)
    assert ks_pvalue(0.0, 100) == 1.0 and ks_pvalue(0.5, 100) < 1e-10
