"""bench/gpu.py: its fast (CPU) mode as CI runs it (the LLM case, both arms, one table), and every
workload command it would run, full size and fast, accepted by the workload's own parser."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kubebench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu.py"


def test_every_command_of_the_check_is_one_its_workload_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubebench.workloads import cnn, llm_options

    monkeypatch.syspath_prepend(str(BENCH.parent))  # bench/gpu.py imports bench/benchlib.py
    gpu = importlib.import_module("gpu")
    parsers = {"kubebench.workloads.cnn": cnn.parse_args, "kubebench.workloads.llm_train": llm_options.parse_args}
    for fast in (True, False):
        by_name = {case.name: case for case in gpu.cases(fast)}
        assert set(by_name) == {"cnn", "llm"}
        for case in by_name.values():
            flag, module, *argv = case.argv
            args = parsers[module](argv)  # argparse exits with status 2 on an argument it does not know
            assert flag == "-m" and args.steps > args.warmup_steps
    full = {case.name: case.argv for case in gpu.cases(False)}
    assert {"resnet50", "256", "bf16", "--channels-last"} <= set(full["cnn"])  # the ResNet-50 case
    assert {"1b", "bf16"} <= set(full["llm"])


@pytest.mark.slow
@pytest.mark.timeout(1200)  # two fresh PyTorch processes, and kubebench's, on a busy 2-core machine
def test_gpu_check_runs_its_fast_mode_on_a_cpu(tmp_path: Path) -> None:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
           "KUBEBENCH_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, str(BENCH), "--fast", "--rounds", "1", "--cases", "llm", "--json", str(tmp_path / "g.json")],
                          env=env, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| llm | bare |" in done.stdout and "| llm | kubebench |" in done.stdout
    assert "published: TinyLlama 1.1B" in done.stdout  # the published figure beside
    figures = json.loads((tmp_path / "g.json").read_text())
    assert figures["fast"] is True and figures["llm"]["rounds"] == 1 and "cnn" not in figures
    for arm in ("bare", "kubebench"):
        assert figures["llm"][arm]["rates"][0] > 0
    assert figures["llm"]["bare"]["mfu"][0] > 0
    if not figures["llm"]["bare"]["joules_per_item"]:  # no NVML here: the table says why, no number
        assert any("NVML" in note for note in figures["llm"]["bare"]["notes"])
