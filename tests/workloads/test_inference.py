"""LoadGen-style scenarios of the inference workload, on a simulated clock and model (exact numbers),
plus one real run of every scenario.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.timing import scaled

import kubebench
from kubebench.workloads.inference import (
    Clock,
    parse_args,
    poisson_arrivals,
    run_offline,
    run_server,
    run_single_stream,
)


class FakeSystem:
    """A clock that only moves when the model works or the server sleeps; a pass over n samples
    takes ``fixed + per_sample * n`` seconds.
    """

    def __init__(self, fixed: float, per_sample: float = 0.0) -> None:
        self.t = 0.0
        self.fixed, self.per_sample = fixed, per_sample
        self.batches: list[int] = []
        self.clock = Clock(now=lambda: self.t, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        self.t += seconds

    def infer(self, n: int) -> None:
        self.batches.append(n)
        self.t += self.fixed + self.per_sample * n


def test_single_stream_meets_both_the_query_count_and_the_duration() -> None:
    system = FakeSystem(0.01)
    assert run_single_stream(system.infer, 5, 0.0, system.clock) == pytest.approx([0.01] * 5)
    assert len(run_single_stream(system.infer, 5, 1.0, system.clock)) == 100
    assert set(system.batches) == {1}


def test_offline_processes_full_batches() -> None:
    system = FakeSystem(0.1, 0.01)  # a batch of 10: 0.2 s
    samples, seconds, batches = run_offline(system.infer, 10, 45, 0.0, system.clock)
    assert samples == 50 and seconds == pytest.approx(1.0) and batches == pytest.approx([0.2] * 5)


def test_server_below_capacity_answers_each_query_in_its_service_time() -> None:
    system = FakeSystem(0.001)
    arrivals = np.arange(1, 101) * 0.01  # 100 QPS, evenly spaced; capacity 1000 QPS
    latencies, seconds = run_server(system.infer, arrivals, 8, system.clock)
    assert latencies == pytest.approx([0.001] * 100)
    assert seconds == pytest.approx(1.001)
    assert set(system.batches) == {1}


def test_server_batches_what_has_queued() -> None:
    system = FakeSystem(0.01)  # 10 ms a pass whatever the batch
    arrivals = np.full(9, 0.0) + np.arange(9) * 0.001  # a burst of 9 queries within 9 ms
    latencies, _ = run_server(system.infer, arrivals, 4, system.clock)
    assert system.batches == [1, 4, 4]  # the first alone, then what arrived meanwhile, 4 at most
    assert max(latencies) == pytest.approx(0.03 - 0.005)  # query 5 waits for two passes after its own


def test_server_over_capacity_builds_a_queue() -> None:
    system = FakeSystem(0.02)  # 50 QPS with batches of 1
    arrivals = np.arange(1, 201) * 0.01  # 100 QPS
    latencies, _ = run_server(system.infer, arrivals, 1, system.clock)
    assert latencies[-1] > 1.5  # queueing delay grows with every query
    assert latencies == sorted(latencies)


def test_poisson_arrivals_have_the_target_rate() -> None:
    gaps = np.diff(poisson_arrivals(200.0, 20_000, seed=1))
    assert 1 / gaps.mean() == pytest.approx(200, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)  # exponential: CV = 1


def test_scenario_lists_and_bad_values_are_checked(capsys: pytest.CaptureFixture) -> None:
    assert parse_args(["--scenario", "all"]).scenario == ["single-stream", "offline", "server"]
    assert parse_args(["--scenario", "server,offline"]).scenario == ["server", "offline"]
    for bad in (["--scenario", "multistream"], ["--target-qps", "0"], ["--max-batch", "0"]):
        with pytest.raises(SystemExit) as info:
            parse_args(bad)
        assert info.value.code == 2
    assert "unknown scenario multistream" in capsys.readouterr().err


@pytest.mark.slow
def test_every_scenario_reports_its_metrics(tmp_path: Path) -> None:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src, "KUBEBENCH_EXP_OUTPUT_PATH": str(tmp_path)}
    cmd = [sys.executable, "-m", "kubebench.workloads.inference", "--scenario", "all", "--min-queries", "20",
           "--warmup-queries", "2", "--target-qps", "50", "--latency-bound", f"{scaled(5):g}", "--threads", "1"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=scaled(120))
    assert proc.returncode == 0, proc.stderr
    metrics = {}
    for line in re.findall(r"^KUBEBENCH_METRIC (.*)$", proc.stdout, re.MULTILINE):
        metrics.update({k: float(v) for k, v in (p.split("=", 1) for p in line.split())})
    assert 0 < metrics["latency_p50"] <= metrics["latency_p90"] <= metrics["latency_p99"]
    # Whether batching pays (offline vs single stream) is a timing question for bench/, not a test.
    assert metrics["samples_per_sec"] > 0 and metrics["single_stream_qps"] > 0
    assert metrics["server_valid"] == 1.0 and metrics["server_target_qps"] == 50
    assert 0 < metrics["server_achieved_qps"] <= 1.2 * metrics["server_scheduled_qps"]
    assert (tmp_path / "step_times.json").exists()
