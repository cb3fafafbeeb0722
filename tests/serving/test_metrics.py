"""Serving metrics from hand-made request records: every number checked against its definition."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kubebench.durations import parse_duration
from kubebench.errors import PostprocessError
from kubebench.serving.metrics import percentile, serving_metrics, tokens_source
from kubebench.serving.records import (
    RecordsFile,
    RequestRecord,
    find_records,
    merge,
    read_records,
    write_records,
)
from kubebench.serving.slo import parse_request_slo


def record(sent: float, ttft: float, tpot: float, n: int, *, replica: int = 0, index: int = 0, status: str = "ok",
           measured: bool = True, source: str = "chunks") -> RequestRecord:
    """A request sent at ``sent`` whose ``n`` tokens come ``ttft`` then every ``tpot`` seconds."""
    times = tuple(sent + ttft + k * tpot for k in range(n)) if status == "ok" else ()
    end = times[-1] if times else sent + 0.01
    return RequestRecord(replica, index, sent, sent, times, end, 10, n if status == "ok" else 0, source, status,
                         measured)


def test_latencies_follow_their_definitions() -> None:
    records = [record(float(i), 0.1 * (i + 1), 0.01, 11, index=i) for i in range(10)]
    m = serving_metrics(RecordsFile(tuple(records), (0.0, 20.0)))
    assert m["ttft_p50"] == pytest.approx(0.55)  # 0.1 … 1.0, interpolated median
    assert m["ttft_mean"] == pytest.approx(0.55)
    assert m["ttft_p90"] == pytest.approx(percentile([0.1 * (i + 1) for i in range(10)], 90))
    assert m["tpot_p50"] == pytest.approx(0.01) and m["tpot_p99"] == pytest.approx(0.01)
    assert m["itl_mean"] == pytest.approx(0.01)
    assert m["e2e_p50"] == pytest.approx(0.55 + 0.1)
    assert m["output_tokens_per_s_per_user"] == pytest.approx(100.0)
    assert m["error_rate"] == 0.0


def test_throughput_counts_what_completed_inside_the_window() -> None:
    # one request per second, 5 tokens each 0.1 s apart starting 0.5 s after sending
    records = [record(float(i), 0.5, 0.1, 5, index=i) for i in range(100)]
    m = serving_metrics(RecordsFile(tuple(records), (10.0, 60.0)))
    assert m["request_throughput"] == pytest.approx(50 / 50.0, rel=0.03)
    assert m["output_tokens_per_s"] == pytest.approx(5.0, rel=0.03)
    assert m["input_tokens_per_s"] == pytest.approx(10.0, rel=0.03)


def test_goodput_counts_requests_meeting_every_bound_of_the_slo() -> None:
    records = [record(float(i), 0.1 if i % 2 else 3.0, 0.05 if i % 4 != 1 else 0.2, 10, index=i) for i in range(40)]
    m = serving_metrics(RecordsFile(tuple(records), (0.0, 50.0)), parse_request_slo("ttft=2s,tpot=100ms"))
    good = sum(1 for i in range(40) if i % 2 and i % 4 != 1)
    assert m["goodput"] == pytest.approx(good / 50.0)
    assert m["goodput_ratio"] == pytest.approx(good / 40)


def test_errors_are_counted_by_kind_over_measured_requests() -> None:
    records = [record(0, 0.1, 0.01, 5, index=0), record(1, 0.1, 0.01, 5, index=1, status="http_503"),
               record(2, 0.1, 0.01, 5, index=2, status="timeout"), record(3, 0.1, 0.01, 5, index=3),
               record(4, 0.1, 0.01, 5, index=4, status="http_503", measured=False)]
    m = serving_metrics(RecordsFile(tuple(records), (0.0, 10.0)))
    assert m["error_rate"] == pytest.approx(0.5)
    assert m["error_rate_http_503"] == pytest.approx(0.25) and m["error_rate_timeout"] == pytest.approx(0.25)
    assert m["ttft_p50"] == pytest.approx(0.1)  # failed requests have no latency


def test_warmup_requests_are_left_out_of_latencies() -> None:
    records = [record(0, 5.0, 0.01, 3, index=0, measured=False), record(1, 0.2, 0.01, 3, index=1)]
    assert serving_metrics(RecordsFile(tuple(records), (1.0, 10.0)))["ttft_p99"] == pytest.approx(0.2)


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_records_round_trip_through_a_file(tmp_path: Path, suffix: str) -> None:
    data = RecordsFile((record(1.0, 0.1, 0.01, 4, source="usage"), record(2.0, 0.2, 0.01, 2, index=1)),
                       (0.5, 3.0), {"rate": 2.0})
    path = write_records(tmp_path / f"requests-0{suffix}", data)
    back = read_records(path)
    assert back.records == data.records and back.window == (0.5, 3.0) and back.meta["rate"] == 2.0
    assert find_records(tmp_path) == [path]


def test_a_file_that_is_not_records_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "requests-0.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(PostprocessError, match="requests-0.jsonl: not a kubebench requests file"):
        read_records(bad)


def test_merged_percentiles_are_those_of_all_records_not_an_average_of_replicas() -> None:
    fast = RecordsFile(tuple(record(float(i), 0.1, 0.01, 3, index=i) for i in range(99)), (0.0, 100.0))
    slow = RecordsFile((record(0.0, 9.0, 0.01, 3, replica=1),), (0.0, 100.0))
    merged = serving_metrics(merge([fast, slow]))
    all_ttfts = [0.1] * 99 + [9.0]
    assert merged["ttft_p99"] == pytest.approx(percentile(all_ttfts, 99))
    averaged = (serving_metrics(fast)["ttft_p99"] + serving_metrics(slow)["ttft_p99"]) / 2
    assert not math.isclose(merged["ttft_p99"], averaged)


def test_merged_window_is_what_every_replica_measured() -> None:
    a = RecordsFile((), (10.0, 70.0))
    b = RecordsFile((), (12.0, 73.0))
    assert merge([a, b]).window == (12.0, 70.0)


def test_token_source_is_reported() -> None:
    assert tokens_source([record(0, 0.1, 0.1, 2, source="usage")]) == "usage"
    assert tokens_source([record(0, 0.1, 0.1, 2), record(0, 0.1, 0.1, 2, source="usage")]) == "mixed"


@pytest.mark.parametrize("text, expected", [("2s", 2.0), ("100ms", 0.1), ("250us", 250e-6), (3, 3.0), ("1.5", 1.5)])
def test_durations(text: object, expected: float) -> None:
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["ttft", "speed=2s", "ttft=fast", "ttft=-1s"])
def test_bad_slo_terms_are_named(text: str) -> None:
    with pytest.raises(ValueError):
        parse_request_slo(text)
