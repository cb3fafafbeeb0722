"""examples/llm-train through `kubebench run` on the local backend: DDP and FSDP, 1 and 2 workers, then
`kubebench scaling` and `kubebench efficiency` over what it stored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.efficiency.flops import flops_per_token
from kubebench.workloads.llm_options import PRESETS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm-train"
runner = CliRunner(env={"COLUMNS": "250"})
DIGEST = re.compile(r"^rank (\d) of (\d): params_sha256=([0-9a-f]{64}) ", re.MULTILINE)


@pytest.mark.slow
def test_llm_example_runs_ddp_and_fsdp_and_reports_scaling_mfu_and_cost(home: Path) -> None:
    result = runner.invoke(app, ["run", str(EXAMPLE / "benchmark.yaml"), "--params", str(EXAMPLE / "params.yaml"),
                                 "--repeats", "1", "--id", "llm"])
    records = json.loads(runner.invoke(app, ["results", "llm", "-f", "json"]).stdout)
    assert result.exit_code == 0, result.output + "\n".join(r["reason"] for r in records)
    by_trial = {(r["params"]["workers"], r["params"]["parallel"]): r for r in records}
    assert set(by_trial) == {(1, "ddp"), (2, "ddp"), (2, "fsdp")}
    for (workers, parallel), record in by_trial.items():
        m, info = record["metrics"], record["info"]
        assert m["tokens_per_sec"] > 0 and m["model_flops_per_token"] == flops_per_token(PRESETS["tiny"])
        assert 0 < m["mfu"] and info["peak_source"].startswith("measured")
        assert m["steady_items_per_sec"] > 0  # the collector's MSER window over the tokens per step
        devices = m["tokens_per_sec"] / m["tokens_per_sec_per_device"]
        assert m["steady_mfu"] == pytest.approx(m["steady_items_per_sec"] / devices * m["model_flops_per_token"]
                                                / (m["peak_tflops_per_device"] * 1e12))
        assert info["parallel"] == (parallel if workers == 2 else "none")
        # 1 core per worker requested at $0.048 per core-hour
        assert m["cost_usd"] == pytest.approx(workers * 0.048 * record["duration_s"] / 3600, rel=0.2)
        assert m["usd_per_million_tokens"] == pytest.approx(workers * 0.048 / 3600 / m["tokens_per_sec"] * 1e6)
        assert "energy_joules" in m or info["energy_unavailable"]  # a figure, or why there is none
        output = home / "experiments" / "llm" / record["run_id"] / "output"
        digests = {d.group(3) for log in output.glob("*.log") for d in DIGEST.finditer(log.read_text())}
        assert len(digests) == 1  # the replicas ended with the same parameters
    scaling = runner.invoke(app, ["scaling", "llm", "--metric", "tokens_per_sec"])
    assert scaling.exit_code == 0, scaling.output
    rows = {(r[0], r[1]): r for r in (line.split() for line in scaling.output.splitlines()) if r[:1] in (["ddp"], ["fsdp"])}
    assert set(rows) >= {("ddp", "1"), ("ddp", "2")}, scaling.output
    assert rows["ddp", "2"][2] == "1" and rows["ddp", "2"][-2].endswith("%")  # 1 thread per replica; efficiency
    shown = runner.invoke(app, ["efficiency", "llm"])
    assert shown.exit_code == 0 and "usd_per_million_tokens" not in shown.output and "$/M tokens" in shown.output
