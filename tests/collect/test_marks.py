"""The mark protocol: ``kubebench.mark`` prints what ``collect.marks`` reads back from each replica's log."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import kubebench
from kubebench.collect.marks import parse_marks, workload_marks


def test_a_mark_printed_is_a_mark_read(capsys: pytest.CaptureFixture[str]) -> None:
    kubebench.mark("rendezvous_done", t=1767225600.1234567)
    kubebench.mark("custom.stage-1")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "KUBEBENCH_MARK rendezvous_done t=1767225600.123457"
    found = parse_marks(lines)
    assert found["rendezvous_done"] == pytest.approx(1767225600.123457, abs=1e-6)
    assert "custom.stage-1" in found


def test_bad_marks_are_refused_at_the_source() -> None:
    with pytest.raises(ValueError, match="invalid mark name"):
        kubebench.mark("two words")
    with pytest.raises(ValueError, match="not a finite number"):
        kubebench.mark("x", t=math.inf)


def test_the_last_mark_of_a_name_wins_and_noise_is_ignored() -> None:
    lines = ["KUBEBENCH_MARK first_step t=10.5", "[rank1] KUBEBENCH_MARK first_step t=11.25 (again)",
             "KUBEBENCH_MARK no_time", "KUBEBENCH_MARK bad t=abc", "KUBEBENCH_METRIC v=1"]
    assert parse_marks(lines) == {"first_step": 11.25}


def test_each_replica_log_gives_its_own_marks(tmp_path: Path) -> None:
    (tmp_path / "master-0.log").write_text("hello\nKUBEBENCH_MARK imports_done t=5.000001\n")
    (tmp_path / "worker-1.log").write_text("KUBEBENCH_MARK imports_done t=6\nKUBEBENCH_MARK last_step t=9.5\n")
    (tmp_path / "notes.txt").write_text("KUBEBENCH_MARK imports_done t=1\n")
    found = {(m.replica, m.name): m for m in workload_marks(tmp_path)}
    assert set(found) == {("master-0", "imports_done"), ("worker-1", "imports_done"), ("worker-1", "last_step")}
    assert found[("worker-1", "last_step")].t == 9.5 and found[("worker-1", "last_step")].source == "workload"
    assert workload_marks(tmp_path / "missing") == []


# Two ranks of one replica writing to one unbuffered log at once (review of a flaky 2 × 2 run: rank 1's
# closing line landed between rank 0's metric line and its newline, and was lost to both readers).
RANK = """
import sys, kubebench
from kubebench.workloads.measure import report_replica
for i in range(1500):
    kubebench.report(images_per_sec=100.0 + i, step_time_p50=0.25, step_time_p99=0.5)
    kubebench.mark("first_step", t=1767225600.5)
    report_replica(int(sys.argv[1]), 2, "0" * 64, 12.5)
    print("images/sec:", 12.5, "rank", sys.argv[1], flush=True)  # a workload's own line, in parts
"""


def test_ranks_sharing_an_unbuffered_log_never_split_each_others_lines(tmp_path: Path) -> None:
    import os
    import re
    import subprocess
    import sys

    log = tmp_path / "master-0.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:  # one open file shared by both processes, as a replica's log is
        ranks = [subprocess.Popen([sys.executable, "-c", RANK, str(rank)], stdout=out, env=env) for rank in (0, 1)]
        assert [rank.wait(timeout=120) for rank in ranks] == [0, 0]
    whole = re.compile(r"KUBEBENCH_METRIC images_per_sec=\d+\.0 step_time_p50=0\.25 step_time_p99=0\.5"
                       r"|KUBEBENCH_MARK first_step t=1767225600\.500000"
                       r"|rank [01] of 2: params_sha256=0{64} own_rate=12\.5"
                       r"|images/sec: 12\.5 rank [01]")
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * 4 * 1500
    assert [line for line in lines if not whole.fullmatch(line)] == []
