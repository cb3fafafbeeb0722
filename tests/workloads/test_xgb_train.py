"""The XGBoost workload: its synthetic data, its figures and model quality on one worker (so that a
faster but worse configuration shows), and a TrainJob on the xgboost-distributed runtime training as
one job on the local backend."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.replicas import assert_replicas_in_sync, output_logs, replica_lines
from support.skips import require_module
from typer.testing import CliRunner

from kubebench import METRIC_LINE_PREFIX
from kubebench.cli import app
from kubebench.workloads import xgb_train


def test_the_rows_follow_one_truth_and_each_worker_draws_its_own() -> None:
    x0, y0 = xgb_train.synthetic(2000, 10, 4, seed=5, truth_seed=5)
    again, _ = xgb_train.synthetic(2000, 10, 4, seed=5, truth_seed=5)
    x1, y1 = xgb_train.synthetic(2000, 10, 4, seed=6, truth_seed=5)
    assert np.array_equal(x0, again) and not np.array_equal(x0, x1)
    assert x0.dtype == np.float32 and x0.shape == (2000, 10) and set(np.unique(y0)) == {0.0, 1.0}
    assert 0.3 < y0.mean() < 0.7 and abs(y0.mean() - y1.mean()) < 0.06  # one distribution for every worker


def test_a_bad_argument_is_refused() -> None:
    with pytest.raises(SystemExit) as info:
        xgb_train.parse_args(["--features", "4", "--informative", "8"])
    assert info.value.code == 2


def metrics_of(out: str) -> dict[str, float]:
    (line,) = [x for x in out.splitlines() if x.startswith(METRIC_LINE_PREFIX)]
    return {k: float(v) for k, v in (f.split("=") for f in line.split()[1:])}


def one_worker(capsys, *args: str) -> tuple[dict[str, float], str]:
    xgb_train.main(["--rows", "4000", "--valid-rows", "2000", "--rounds", "12", "--threads", "1", *args])
    out = capsys.readouterr().out
    return metrics_of(out), out


def test_one_worker_reports_its_rates_its_rounds_and_the_models_quality(capsys, tmp_path: Path, monkeypatch) -> None:
    require_module("xgboost", "xgboost")
    monkeypatch.setenv("KUBEBENCH_EXP_OUTPUT_PATH", str(tmp_path / "output"))
    m, out = one_worker(capsys)
    steps = json.loads((tmp_path / "output" / "step_times.json").read_text())
    measured = steps["step_seconds"][2:]  # after the 2 warm-up rounds
    assert len(steps["step_seconds"]) == 14 and steps["items_per_step"] == 4000 and m["rounds"] == 14
    assert m["rows_per_sec"] == pytest.approx(4000 * 12 / sum(measured)) == m["rows_per_sec_per_worker"]
    assert m["rounds_per_sec"] == pytest.approx(12 / sum(measured))
    assert 0.75 < m["valid_auc"] < 1 and m["valid_logloss"] < 0.6 and 0 < m["valid_error"] < 0.3
    ((rank, world, digest, rate),) = replica_lines([out])
    assert (rank, world, float(rate)) == ("0", "1", m["rows_per_sec"]) and len(digest) == 64
    # the run's phases come from its marks; its own time of the rounds does not take the phase's name
    marks = [line.split()[1] for line in out.splitlines() if line.startswith("KUBEBENCH_MARK ")]
    assert marks == ["imports_done", "rendezvous_done", "first_step", "last_step"]
    assert "train_seconds" not in m and m["boosting_seconds"] == pytest.approx(sum(steps["step_seconds"]))


def test_a_model_that_cannot_learn_the_interactions_scores_worse(capsys) -> None:
    require_module("xgboost", "xgboost")
    deep, _ = one_worker(capsys)
    stumps, _ = one_worker(capsys, "--max-depth", "1", "--max-bin", "4")
    assert stumps["valid_auc"] < deep["valid_auc"] - 0.02 and stumps["valid_logloss"] > deep["valid_logloss"]


@pytest.mark.slow
def test_a_trainjob_on_the_xgboost_runtime_trains_as_one_job_on_the_local_backend(home: Path, write) -> None:
    require_module("xgboost", "xgboost")
    spec = write("spec.yaml", """
        name: xgb-trainjob
        job:
          kind: TrainJob
          runtime: xgboost-distributed
          workers: 2
          command: [python, -m, kubebench.workloads.xgb_train, --rows, "5000", --valid-rows, "1000", --rounds, "5",
                    --threads, "1"]
        metrics: [{name: rows_per_sec, primary: true}]
        timeout: 2m
        """)
    result = CliRunner().invoke(app, ["run", str(spec), "--id", "xt"])
    assert result.exit_code == 0, result.output
    (record,) = json.loads(CliRunner().invoke(app, ["results", "xt", "-f", "json"]).stdout)
    logs = output_logs(home / "experiments" / "xt" / record["run_id"] / "output")
    assert len(logs) == 2 and "launcher=TrainJob (xgboost-distributed)" in logs[0]
    assert_replicas_in_sync(logs, 2, record["metrics"]["rows_per_sec"])
    assert record["metrics"]["rows"] == 10_000  # each worker trained on its own rows
    phases = {"imports_seconds", "rendezvous_seconds", "init_seconds", "train_seconds"}  # from the marks (#31)
    assert phases <= set(record["metrics"]) and record["metrics"]["train_seconds"] < record["metrics"]["end_to_end_seconds"]
