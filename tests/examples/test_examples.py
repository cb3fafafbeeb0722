"""Every example directory, run through `kubebench run` on the local backend with its parameter file
and small sizes (`--set`): one per job kind. (`examples/pytorch-cnn`, the PyTorchJob, is the README's
example and runs in tests/cli/test_pytorch_e2e.py.)
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from support.replicas import assert_replicas_in_sync
from support.timing import scaled
from typer.testing import CliRunner

from kubebench.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner(env={"COLUMNS": "200"})
pytestmark = pytest.mark.slow


def run_example(name: str, *settings: str) -> list[dict]:
    """Run ``examples/<name>`` with its params.yaml and ``--set`` overrides; return its run records."""
    folder = EXAMPLES / name
    args = ["run", str(folder / "benchmark.yaml"), "--params", str(folder / "params.yaml"), "--repeats", "1", "--id", name]
    for setting in settings:
        args += ["--set", setting]
    result = runner.invoke(app, args)
    records = json.loads(runner.invoke(app, ["results", name, "-f", "json"]).stdout)
    assert result.exit_code == 0, result.output + "\n".join(r["reason"] for r in records)
    assert records and all(r["status"] == "succeeded" for r in records)
    return records


def output_of(home: Path, record: dict) -> Path:
    return home / "experiments" / record["experiment_id"] / record["run_id"] / "output"


def test_job_kind_runs_the_original_kubebench_runner_and_post_processor(home: Path) -> None:
    (record,) = run_example("kubebench-v1-compat", "model=small", "num_batches=3", "batch_size=8")
    run_dir = output_of(home, record).parent
    result = json.loads((run_dir / "result" / "result.json").read_text())
    assert all(isinstance(v, str) for v in result.values())  # the original contract: strings
    assert result["model"] == "small" and result["mode"] == "training"
    metrics = record["metrics"]
    assert metrics["total_images/sec"] == float(result["total_images/sec"]) > 0  # a numeric string became a number
    assert metrics["total_images/sec"] == pytest.approx(metrics["images_per_sec"], abs=0.006)
    assert metrics["num_batches"] == 3
    assert record["info"]["model"] == "small" and record["info"]["batch_size"] == "8 global, 8 per device"
    assert "Command to run:" in (run_dir / "output" / "worker0.log").read_text()  # the runner's own log
    assert "kind: Job" in (run_dir / "config" / "manifest.yaml").read_text()


def test_process_kind_measures_every_loadgen_scenario(home: Path) -> None:
    bound = scaled(1.0)  # the server scenario is valid when its p99 latency is under the bound
    (record,) = run_example("inference", "model=small", "image_size=32", "min_queries=30", "target_qps=[100]",
                            f"latency_bound={bound:g}", "threads=1")
    m = record["metrics"]
    assert 0 < m["latency_p50"] <= m["latency_p90"] <= m["latency_p99"] < bound
    assert m["samples_per_sec"] > 0 and m["server_achieved_qps"] > 0
    assert m["server_valid"] == 1.0 and m["server_target_qps"] == 100
    assert (output_of(home, record) / "worker-0.log").exists()


def test_trainjob_kind_scores_time_to_train_from_mlperf_logs(home: Path) -> None:
    (record,) = run_example("mlperf-trainjob", "batch_size=32", "target_accuracy=0.6")  # nodes: 2 (params.yaml)
    m = record["metrics"]
    assert m["run_success"] == 1 and m["eval_accuracy"] >= 0.6
    assert 0 < m["time_to_accuracy"] <= m["time_to_train"] < record["duration_s"]
    assert m["epochs"] >= 1 and m["init_time"] > 0
    logs = sorted(p.name for p in output_of(home, record).glob("*.log"))
    assert logs == ["node-0.log", "node-1.log"]
    assert ":::MLLOG" not in (output_of(home, record) / "node-1.log").read_text()  # only rank 0 logs
    assert (home / "data" / "mlperf-synthetic" / "val_labels.npy").exists()  # made under KUBEBENCH_DATA_ROOT


def test_mpijob_kind_runs_ranks_under_mpirun(home: Path) -> None:
    if not shutil.which("mpirun") or importlib.util.find_spec("mpi4py") is None:
        reason = "needs Open MPI's mpirun (Debian: openmpi-bin) and mpi4py (pip install 'kubebench[mpi]')"
        pytest.fail(reason) if os.environ.get("CI") else pytest.skip(reason)
    (record,) = run_example("mpi-cnn", "model=small", "batch_size=[4]", "steps=3", "warmup_steps=1")
    log = (output_of(home, record) / "launcher-0.log").read_text()
    assert "world_size=2" in log and "Sync:        mpi" in log
    assert log.count("KUBEBENCH_METRIC") == 1  # rank 0 only
    assert record["metrics"]["images_per_sec"] > 0 and record["params"]["workers"] == 2
    assert_replicas_in_sync([log], 2, record["metrics"]["images_per_sec"], abs_tol=0.051)
    assert sorted(p.name for p in output_of(home, record).glob("*.log")) == ["launcher-0.log"]


@pytest.mark.tensorflow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                    reason="TensorFlow is not installed: pip install 'kubebench[tensorflow]' (or `make test-tensorflow`)")
def test_tfjob_kind_trains_with_two_workers(home: Path) -> None:
    (record,) = run_example("tf-cnn", "model=small", "batch_size=[4]", "steps=3", "warmup_steps=1")
    assert record["params"]["workers"] == 2
    output = output_of(home, record)
    assert sorted(p.name for p in output.glob("*.log")) == ["worker-0.log", "worker-1.log"]
    assert "Sync:        MultiWorkerMirroredStrategy" in (output / "worker-0.log").read_text()
    assert record["metrics"]["images_per_sec"] > 0
    logs = [(output / f"worker-{i}.log").read_text() for i in (0, 1)]
    assert_replicas_in_sync(logs, 2, record["metrics"]["images_per_sec"], abs_tol=0.051)
    assert json.loads((output / "step_times.json").read_text())["world_size"] == 2


def test_jpeg_loader_prepares_its_jpegs_once_and_reads_them_with_loader_workers(home: Path) -> None:
    records = run_example("jpeg-loader", "images=40", "loader_workers=[0, 1]", "batch_size=8", "steps=3",
                          "warmup_steps=1")
    assert sorted(r["params"]["loader_workers"] for r in records) == [0, 1]
    assert all(0 < r["metrics"]["data_wait_fraction"] < 1 for r in records)
    jpegs = sorted((home / "data" / "jpegs-40").rglob("*.jpg"))
    assert len(jpegs) == 40 and len({p.parent.name for p in jpegs}) == 10
    shown = runner.invoke(app, ["show", "jpeg-loader"]).stdout
    assert "data: 1 dataset" in shown and "jpegs-40: 40 files" in shown
