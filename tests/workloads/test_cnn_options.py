"""The CNN workload's options (models, layout, AMP, inference mode, data on disk) and its MPI mode:
real processes, tiny sizes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.timing import scaled

import kubebench
from kubebench.workloads.data import make_dataset
from kubebench.workloads.measure import REPLICA_LINE

TIMEOUT_S = scaled(120)
DIST_VARS = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_hwloc_base_binding_policy": "none"}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return {**env, **extra}


def run_cnn(*args: str, **env: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "kubebench.workloads.cnn", *args]
    return subprocess.run(cmd, env=_env(**env), capture_output=True, text=True, timeout=TIMEOUT_S)


def metrics_of(stdout: str) -> dict[str, float]:
    (line,) = re.findall(r"^KUBEBENCH_METRIC (.*)$", stdout, re.MULTILINE)
    return {k: float(v) for k, v in (pair.split("=", 1) for pair in line.split())}


def banner(stdout: str) -> dict[str, str]:
    """The tf_cnn_benchmarks-style ``Key: value`` lines."""
    return dict(re.findall(r"^([A-Z][A-Za-z ]+):\s+(.*)$", stdout, re.MULTILINE))


@pytest.mark.slow
def test_resnet_forward_only_channels_last_bf16(tmp_path: Path) -> None:
    proc = run_cnn("--model", "resnet18", "--forward-only", "--channels-last", "--amp", "bf16",
                   "--batch-size", "2", "--steps", "2", "--warmup-steps", "1", "--threads", "1",
                   KUBEBENCH_EXP_OUTPUT_PATH=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    info = banner(proc.stdout)
    assert info["Model"] == "resnet18" and info["Mode"] == "forward-only"
    assert info["Data format"] == "NHWC" and info["Precision"] == "bf16"
    metrics = metrics_of(proc.stdout)
    assert metrics["images_per_sec"] > 0 and metrics["peak_memory_bytes"] > 0
    total = float(re.search(r"^total images/sec: ([0-9.]+)$", proc.stdout, re.MULTILINE).group(1))
    assert total == pytest.approx(metrics["images_per_sec"], abs=0.006)
    assert len(json.loads((tmp_path / "step_times.json").read_text())["step_seconds"]) == 3


@pytest.mark.slow
def test_trains_on_a_dataset_under_the_data_root(tmp_path: Path) -> None:
    make_dataset(tmp_path / "tiny", samples=32, val_samples=8, image_size=8, channels=3, classes=4)
    proc = run_cnn("--data", "tiny", "--num-classes", "4", "--batch-size", "4", "--steps", "3",
                   "--warmup-steps", "1", "--threads", "1", KUBEBENCH_DATA_ROOT=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert banner(proc.stdout)["Dataset"] == "tiny"
    assert metrics_of(proc.stdout)["images_per_sec"] > 0


@pytest.mark.slow
def test_missing_dataset_fails_with_one_line(tmp_path: Path) -> None:
    proc = run_cnn("--data", "nope", "--steps", "1", KUBEBENCH_DATA_ROOT=str(tmp_path))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"cnn: dataset {tmp_path / 'nope'}: missing train_images.npy, train_labels.npy "
                                   f"(make one with: python -m kubebench.workloads.data {tmp_path / 'nope'})")


def mpi_ready() -> str:
    """Why the MPI test cannot run here, or '' when it can."""
    if not shutil.which("mpirun"):
        return "Open MPI's mpirun is not installed (Debian: openmpi-bin; `make test` installs it)"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install 'kubebench[mpi]')"
    return ""


@pytest.mark.slow
def test_two_mpi_ranks_average_gradients_and_report_once(tmp_path: Path) -> None:
    reason = mpi_ready()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    cmd = ["mpirun", "--oversubscribe", "-np", "2", sys.executable, "-m", "kubebench.workloads.cnn",
           "--batch-size", "4", "--steps", "3", "--warmup-steps", "1"]
    proc = subprocess.run(cmd, env=_env(KUBEBENCH_EXP_OUTPUT_PATH=str(tmp_path), **ROOT_OK),
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "world_size=2" in proc.stdout and banner(proc.stdout)["Sync"] == "mpi"
    metrics = metrics_of(proc.stdout)  # exactly one metric line: only rank 0 reports
    record = json.loads((tmp_path / "step_times.json").read_text())
    assert record["world_size"] == 2 and record["items_per_step"] == 8
    ranks = {int(rank): (digest, float(rate)) for rank, _, digest, rate in REPLICA_LINE.findall(proc.stdout)}
    assert sorted(ranks) == [0, 1]
    # Gradients averaged and applied: both ranks, fed different data, end with the same weights.
    assert ranks[0][0] == ranks[1][0]
    # The global rate is the sum of the ranks' own rates.
    assert ranks[0][1] == pytest.approx(4 * 3 / sum(record["step_seconds"][1:]), rel=1e-9)
    assert metrics["images_per_sec"] == pytest.approx(ranks[0][1] + ranks[1][1], rel=1e-9)
