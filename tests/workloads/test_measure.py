"""The workloads' shared reporting: percentiles and the replicas' closing line (no framework needed)."""

from __future__ import annotations

import hashlib

import pytest

from kubebench.workloads.measure import REPLICA_LINE, params_digest, percentile, report_replica, report_replicas


def test_the_digest_covers_every_byte_in_order() -> None:
    chunks = [b"\x00\x00\x80?", b"\x00\x00\x00@"]
    assert params_digest(chunks) == hashlib.sha256(b"".join(chunks)).hexdigest()
    assert params_digest(reversed(chunks)) != params_digest(chunks)
    assert params_digest([b"\x00\x00\x80?", b"\x00\x00\x00\xc0"]) != params_digest(chunks)  # one sign bit


def test_the_replica_line_is_a_log_line_read_back_exactly(capsys: pytest.CaptureFixture[str]) -> None:
    digest = params_digest([b"weights"])
    report_replica(1, 2, digest, 123.456789)
    report_replica(0, 1, digest)
    out = capsys.readouterr().out
    assert REPLICA_LINE.findall(out) == [("1", "2", digest, "123.456789"), ("0", "1", digest, "")]
    assert "KUBEBENCH_METRIC" not in out  # never stored as a metric


def test_without_mpi_each_replica_prints_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    report_replicas(3, 4, None, "ab" * 32, 1.5)
    assert REPLICA_LINE.findall(capsys.readouterr().out) == [("3", "4", "ab" * 32, "1.5")]


@pytest.mark.parametrize(("values", "q", "expected"), [([3.0], 99, 3.0), ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
                                                        ([4.0, 1.0, 3.0, 2.0], 90, 3.7)])
def test_percentile_interpolates_linearly(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)
