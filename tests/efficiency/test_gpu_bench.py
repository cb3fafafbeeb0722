"""bench/gpu.py in its fast (CPU) mode, as CI runs it: both workloads, both arms, one table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kubebench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu.py"


@pytest.mark.slow
@pytest.mark.timeout(1200)  # four fresh PyTorch processes on a busy 2-core machine
def test_gpu_check_runs_its_fast_mode_on_a_cpu(tmp_path: Path) -> None:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
           "KUBEBENCH_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, str(BENCH), "--fast", "--rounds", "1", "--json", str(tmp_path / "g.json")],
                          env=env, capture_output=True, text=True, timeout=1100)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| cnn | bare |" in done.stdout and "| llm | kubebench |" in done.stdout
    assert "~2,470 images/s on 1x A100 80GB" in done.stdout  # the published figures beside
    figures = json.loads((tmp_path / "g.json").read_text())
    assert figures["fast"] is True and figures["llm"]["rounds"] == 1
    for case in ("cnn", "llm"):
        for arm in ("bare", "kubebench"):
            assert figures[case][arm]["rates"][0] > 0
    assert figures["llm"]["bare"]["mfu"][0] > 0
    if not figures["llm"]["bare"]["joules_per_item"]:  # no NVML here: the table says why, no number
        assert any("NVML" in note for note in figures["llm"]["bare"]["notes"])
