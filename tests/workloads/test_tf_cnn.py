"""The TensorFlow CNN workload. Its TF_CONFIG reading needs no TensorFlow; running it does (the
``tensorflow`` extra), and is skipped with the reason when TensorFlow is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.timing import scaled

import kubebench
from kubebench.workloads.measure import REPLICA_LINE
from kubebench.workloads.tf_cnn import cluster_position

NO_TF = "TensorFlow is not installed: pip install 'kubebench[tensorflow]' (or run `make test-tensorflow`)"


def tf_config(monkeypatch: pytest.MonkeyPatch, cluster: dict, task_type: str, index: int) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}}))


def test_no_tf_config_is_a_single_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert cluster_position() == (0, 1, 1)


def test_workers_on_one_host_share_it(monkeypatch: pytest.MonkeyPatch) -> None:
    tf_config(monkeypatch, {"worker": ["127.0.0.1:1000", "127.0.0.1:1001", "10.0.0.2:1000"]}, "worker", 1)
    assert cluster_position() == (1, 3, 2)


def test_the_chief_is_rank_0(monkeypatch: pytest.MonkeyPatch) -> None:
    tf_config(monkeypatch, {"chief": ["a:1"], "worker": ["b:1", "c:1"]}, "worker", 0)
    assert cluster_position() == (1, 3, 1)


@pytest.mark.tensorflow
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason=NO_TF)
def test_single_worker_reports_like_the_pytorch_workload(tmp_path: Path) -> None:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update(PYTHONPATH=src, KUBEBENCH_EXP_OUTPUT_PATH=str(tmp_path))
    cmd = [sys.executable, "-m", "kubebench.workloads.tf_cnn", "--batch-size", "4", "--steps", "3",
           "--warmup-steps", "1", "--forward-only"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=scaled(180))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = re.findall(r"^KUBEBENCH_METRIC (.*)$", proc.stdout, re.MULTILINE)
    metrics = {k: float(v) for k, v in (p.split("=", 1) for p in line.split())}
    assert set(metrics) == {"images_per_sec", "step_time_p50", "step_time_p90", "step_time_p99", "peak_memory_bytes"}
    assert metrics["images_per_sec"] > 0
    assert re.search(r"^TensorFlow:\s+2\.\d+", proc.stdout, re.MULTILINE)
    assert re.search(r"^Mode:\s+forward-only$", proc.stdout, re.MULTILINE)
    record = json.loads((tmp_path / "step_times.json").read_text())
    assert record["world_size"] == 1 and len(record["step_seconds"]) == 4
    ((rank, size, _, own_rate),) = REPLICA_LINE.findall(proc.stdout)
    assert (rank, size) == ("0", "1") and float(own_rate) == pytest.approx(metrics["images_per_sec"], rel=1e-9)
