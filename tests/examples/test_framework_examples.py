"""examples/jax-train (a JAXJob) and examples/xgb-train (an XGBoostJob) through `kubebench run` on the
local backend with their parameter files: every 2-worker run formed one job (the same parameters or
model on both ranks) whose global rate is the sum of the ranks'; then `kubebench scaling` over each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.replicas import assert_replicas_in_sync, output_logs, replica_lines
from support.skips import require_module
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.efficiency.flops import flops_per_token
from kubebench.workloads.llm_options import PRESETS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner(env={"COLUMNS": "250"})
pytestmark = pytest.mark.slow


def run_example(name: str) -> list[dict]:
    folder = EXAMPLES / name
    result = runner.invoke(app, ["run", str(folder / "benchmark.yaml"), "--params", str(folder / "params.yaml"),
                                 "--repeats", "1", "--id", name])
    records = json.loads(runner.invoke(app, ["results", name, "-f", "json"]).stdout)
    assert result.exit_code == 0, result.output + "\n".join(r["reason"] for r in records)
    return records


def scaling_rows(name: str, metric: str, knob: str) -> dict[tuple[str, str], list[str]]:
    shown = runner.invoke(app, ["scaling", name, "--metric", metric])
    assert shown.exit_code == 0, shown.output
    return {(r[0], r[1]): r for r in (line.split() for line in shown.output.splitlines()) if r[:1] and r[0] in knob}


def test_the_jax_example_trains_dp_and_fsdp_and_scales(home: Path) -> None:
    require_module("jax", "jax")
    records = run_example("jax-train")
    by_trial = {(r["params"]["workers"], r["params"]["parallel"]): r for r in records}
    assert set(by_trial) == {(1, "dp"), (2, "dp"), (2, "fsdp")}
    digests = {}
    for (workers, parallel), record in by_trial.items():
        m, info = record["metrics"], record["info"]
        assert m["model_flops_per_token"] == flops_per_token(PRESETS["tiny"]) and m["params"] == 137_536
        assert 0 < m["mfu"] < 1 and info["peak_source"].startswith("measured") and info["framework"].startswith("jax")
        assert m["loss_final"] < m["loss_first"] and m["steady_items_per_sec"] > 0
        assert info["parallel"] == (parallel if workers == 2 else "none")
        logs = output_logs(home / "experiments" / "jax-train" / record["run_id"] / "output")
        assert len(logs) == workers  # worker-0, worker-1: a JAXJob's replicas
        assert_replicas_in_sync(logs, workers, m["tokens_per_sec"])
        digests[workers, parallel] = replica_lines(logs)[0][2]
    # dp and fsdp compute the same steps on the same batches: one model, however it is laid out
    assert digests[2, "dp"] == digests[2, "fsdp"] != digests[1, "dp"]
    rows = scaling_rows("jax-train", "tokens_per_sec", ("dp", "fsdp"))
    assert {("dp", "1"), ("dp", "2"), ("fsdp", "2")} <= set(rows)
    assert rows["dp", "2"][2] == "1" and rows["dp", "2"][-2].endswith("%")  # 1 thread per replica; an efficiency


def test_the_xgboost_example_boosts_with_hist_and_approx_and_scales(home: Path) -> None:
    require_module("xgboost", "xgboost")
    records = run_example("xgb-train")
    by_trial = {(r["params"]["workers"], r["params"]["tree_method"]): r for r in records}
    assert set(by_trial) == {(w, t) for w in (1, 2) for t in ("hist", "approx")}
    for (workers, _), record in by_trial.items():
        m = record["metrics"]
        assert m["rows"] == 20_000 * workers and m["rounds"] == 22  # 2 warm-up rounds and 20 measured
        assert 0.75 < m["valid_auc"] < 1 and 0 < m["valid_error"] < 0.5 and m["rounds_per_sec"] > 0
        assert m["rows_per_sec"] == pytest.approx(m["rows_per_sec_per_worker"] * workers)
        logs = output_logs(home / "experiments" / "xgb-train" / record["run_id"] / "output")
        assert len(logs) == workers  # master-0 (and worker-0): an XGBoostJob's replicas
        assert_replicas_in_sync(logs, workers, m["rows_per_sec"])
    rows = scaling_rows("xgb-train", "rows_per_sec", ("hist", "approx"))
    assert {(t, w) for t in ("hist", "approx") for w in ("1", "2")} <= set(rows)
