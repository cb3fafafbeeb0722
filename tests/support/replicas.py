"""What a distributed run's replicas say at the end: one ``rank R of N: params_sha256=… own_rate=…``
line each (``kubebench.workloads.measure``), read back from the run's logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.workloads.measure import REPLICA_LINE


def replica_lines(logs: list[str]) -> list[tuple[str, str, str, str]]:
    """(rank, world size, digest, own rate) of every closing line in ``logs``."""
    return [line for log in logs for line in REPLICA_LINE.findall(log)]


def assert_replicas_in_sync(logs: list[str], world_size: int, global_rate: float, abs_tol: float = 0.0) -> None:
    """Every rank's closing line is there once, all with the same trained weights (the processes formed
    one job), and the global rate is the sum of the ranks' own rates (``abs_tol``: when the global
    rate was read from a rounded line)."""
    lines = replica_lines(logs)
    assert sorted(int(rank) for rank, *_ in lines) == list(range(world_size)), lines
    assert {size for _, size, _, _ in lines} == {str(world_size)}
    assert len({digest for _, _, digest, _ in lines}) == 1, lines
    assert global_rate == pytest.approx(sum(float(rate) for *_, rate in lines), rel=1e-9, abs=abs_tol)


def output_logs(output: Path) -> list[str]:
    """The replica logs of a run's ``output/`` folder."""
    return [log.read_text() for log in sorted(output.glob("*.log"))]
