"""End-to-end tests of the PyTorch CNN workload: real processes, real training, real gloo DDP."""

from __future__ import annotations

import json
import os
import re
import socket
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from support.timing import scaled

import kubebench
from kubebench.workloads.measure import REPLICA_LINE

TIMEOUT_S = scaled(120)
METRIC = re.compile(r"^KUBEBENCH_METRIC (.*)$", re.MULTILINE)
DIST_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


def _env(**extra: str) -> dict[str, str]:
    """The test's environment without inherited distributed settings, with kubebench importable."""
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    # Works whether kubebench is pip-installed or only on this interpreter's path.
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kubebench.workloads.cnn", *args]


def _metrics(stdout: str) -> list[dict[str, float]]:
    """Every KUBEBENCH_METRIC line of a log, as name → value."""
    return [
        {name: float(value) for name, value in (pair.split("=", 1) for pair in line.split())}
        for line in METRIC.findall(stdout)
    ]


def replicas(stdout: str) -> dict[int, tuple[str, float]]:
    """Each rank's closing line in a log: rank → (parameter digest, own rate)."""
    return {int(rank): (digest, float(rate)) for rank, _, digest, rate in REPLICA_LINE.findall(stdout)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_single_process_reports_metrics_and_step_times(tmp_path: Path) -> None:
    out = tmp_path / "output"  # not created beforehand: the workload must create it
    proc = subprocess.run(
        _cmd("--steps", "4", "--warmup-steps", "1", "--batch-size", "4"),
        env=_env(KUBEBENCH_EXP_OUTPUT_PATH=str(out)),
        capture_output=True, text=True, timeout=TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stderr
    (metrics,) = _metrics(proc.stdout)
    assert set(metrics) == {"images_per_sec", "step_time_p50", "step_time_p90", "step_time_p99", "peak_memory_bytes"}
    assert metrics["images_per_sec"] > 0
    assert 0 < metrics["step_time_p50"] <= metrics["step_time_p90"] <= metrics["step_time_p99"]
    assert metrics["peak_memory_bytes"] > 50e6  # at least the interpreter plus torch, resident
    human = re.search(r"^images/sec: ([0-9.]+)$", proc.stdout, re.MULTILINE)
    assert human and float(human.group(1)) == pytest.approx(metrics["images_per_sec"], abs=0.051)

    record = json.loads((out / "step_times.json").read_text())
    assert record["warmup_steps"] == 1 and record["batch_size"] == 4 and record["world_size"] == 1
    steps = record["step_seconds"]
    assert len(steps) == 5 and all(t > 0 for t in steps)
    measured = steps[1:]
    assert metrics["step_time_p50"] == pytest.approx(statistics.median(measured))
    assert metrics["images_per_sec"] == pytest.approx(4 * 4 / sum(measured))
    assert replicas(proc.stdout) == {0: (replicas(proc.stdout)[0][0], metrics["images_per_sec"])}
    assert "KUBEBENCH_METRIC rank" not in proc.stdout  # the replica line is a log line, not a metric


@pytest.mark.slow
def test_two_process_ddp_over_gloo_reports_once_from_rank_0(tmp_path: Path) -> None:
    port = str(_free_port())
    procs = [
        subprocess.Popen(
            _cmd("--steps", "3", "--warmup-steps", "1", "--batch-size", "4"),
            env=_env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE="2", RANK=str(rank),
                     LOCAL_RANK=str(rank), KUBEBENCH_EXP_OUTPUT_PATH=str(tmp_path / f"out{rank}")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for rank in (0, 1)
    ]
    try:
        outputs = [p.communicate(timeout=TIMEOUT_S) for p in procs]
    finally:
        for p in procs:
            p.kill()  # no-op once exited; frees a peer stuck waiting on a dead rank
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err

    (rank0,) = _metrics(outputs[0][0])
    assert rank0["images_per_sec"] > 0
    assert "images/sec:" in outputs[0][0]
    assert _metrics(outputs[1][0]) == [] and "images/sec:" not in outputs[1][0]

    record = json.loads((tmp_path / "out0" / "step_times.json").read_text())
    assert record["world_size"] == 2 and len(record["step_seconds"]) == 4
    assert not (tmp_path / "out1").exists()  # only rank 0 writes outputs

    # Synchronised: after training on different data, both replicas hold the same weights, bit for bit.
    (digest0, own0), (digest1, own1) = replicas(outputs[0][0])[0], replicas(outputs[1][0])[1]
    assert digest0 == digest1
    # The global rate is the sum of the replicas' own rates (rank 0's own from its step times).
    assert own0 == pytest.approx(4 * 3 / sum(record["step_seconds"][1:]), rel=1e-9)
    assert rank0["images_per_sec"] == pytest.approx(own0 + own1, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("args", [("--batch-size", "0"), ("--steps", "-1"), ("--lr", "nan")])
def test_bad_argument_exits_with_one_clear_message(args: tuple[str, str]) -> None:
    proc = subprocess.run(_cmd(*args), env=_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"argument {args[0]}:" in proc.stderr
    assert proc.stdout == ""
