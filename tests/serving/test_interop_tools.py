"""Other load tools run for real against the known-behaviour server, their result files read by
kubebench's post-processors. Each tool is optional (none is a kubebench dependency: see
docs/serving.md); a test runs when the tool's command is found (``$KUBEBENCH_AIPERF`` or ``aiperf``
on PATH) and is skipped, saying so, otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kubebench.collect.context import RunContext
from kubebench.collect.metrics import collect
from kubebench.paths import RunPaths
from kubebench.spec.model import BenchmarkSpec
from kubebench.testing.llm_fake import FakeLLMServer

pytestmark = pytest.mark.slow
TTFT, TPOT, OSL = 0.05, 0.01, 8


def tool(name: str, variable: str) -> str:
    found = os.environ.get(variable) or shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (pip install {name}, or set {variable} to its command)")
    return found


def read_back(tmp_path: Path, output: Path, kind: str) -> dict[str, float]:
    paths = RunPaths(tmp_path, tmp_path / "data", "exp", "run1")
    Path(paths.result).mkdir(parents=True, exist_ok=True)
    ctx = RunContext("exp", "t", "run1", 0, {}, paths, tmp_path)
    assert ctx.output == output
    spec = BenchmarkSpec.model_validate({"name": "x", "job": {"command": ["x"]}, "postprocess": [{"kind": kind}]})
    collected = collect(ctx, spec.postprocess, [])
    assert collected.error == ""
    return collected.metrics


def test_aiperf_against_the_known_server(tmp_path: Path) -> None:
    aiperf = tool("aiperf", "KUBEBENCH_AIPERF")
    output = tmp_path / "exp" / "run1" / "output"
    output.mkdir(parents=True)
    with FakeLLMServer(ttft=TTFT, tpot=TPOT) as server:
        done = subprocess.run(
            [aiperf, "profile", "--model", "fake-llm", "--url", server.url.removesuffix("/v1"),
             "--endpoint-type", "completions", "--streaming", "--tokenizer", "builtin", "--request-count", "20",
             "--concurrency", "2", "--isl", "16", "--osl", str(OSL), "--artifact-dir", str(output / "artifacts"),
             "--ui-type", "none"],
            capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    metrics = read_back(tmp_path, output, "aiperf")
    assert TTFT <= metrics["ttft_p50"] < TTFT + 0.5  # no token before the server sends it
    assert TPOT * 0.5 < metrics["tpot_p50"] < TPOT * 3
    assert metrics["request_throughput"] > 0 and metrics["error_rate"] == 0
