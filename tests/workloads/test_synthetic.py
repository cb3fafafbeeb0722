"""The synthetic workloads: the CPU-bound reference (bare and through kubebench) and the noisy metric."""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from support.timing import scaled
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.workloads import synthetic
from kubebench.workloads.synthetic import lcg, noisy_value, reference_metrics, run_reference

runner = CliRunner(env={"COLUMNS": "200"})


def run_module(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kubebench.workloads.synthetic", *args], capture_output=True,
                          text=True, timeout=scaled(60), env={**os.environ, **env})


def metric_line(stdout: str) -> dict[str, float]:
    (line,) = re.findall(r"^KUBEBENCH_METRIC (.*)$", stdout, re.MULTILINE)
    return {k: float(v) for k, v in (pair.split("=", 1) for pair in line.split())}


def test_lcg_is_the_c_rand_recurrence_and_deterministic() -> None:
    assert lcg(1, 1) == (1103515245 + 12345) & 0x7FFFFFFF
    assert lcg(3, 7) == lcg(1, lcg(2, 7))
    assert lcg(0, 42) == 42


def test_reference_times_every_step_and_does_the_same_work_each_run() -> None:
    first, second = run_reference(steps=3, warmup_steps=2, work=1000), run_reference(steps=3, warmup_steps=2, work=1000)
    assert len(first.wall) == len(first.cpu) == 5
    assert all(s > 0 for s in first.wall)
    assert first.checksum == second.checksum == lcg(5000, 1)


def test_reference_metrics_are_throughput_of_the_measured_steps() -> None:
    steps = synthetic.Steps(wall=[0.5, 0.25, 0.25], cpu=[0.25, 0.25, 0.5], checksum=0)
    metrics = reference_metrics(steps, work=1000)
    assert metrics["steps_per_s"] == pytest.approx(3.0)
    assert metrics["ops_per_s"] == pytest.approx(3000.0)
    assert metrics["ops_per_cpu_s"] == pytest.approx(3000.0)
    assert metrics["step_time_p50"] == pytest.approx(0.25)
    assert "ops_per_cpu_s" not in reference_metrics(synthetic.Steps([0.1], [0.0], 0), work=10)


def test_noisy_value_is_seeded_and_matches_the_distribution() -> None:
    assert noisy_value(100, 0.03, "gaussian", "run-1") == noisy_value(100, 0.03, "gaussian", "run-1")
    assert noisy_value(100, 0.03, "gaussian", "run-1") == 100 * random.Random("run-1").gauss(1, 0.03)
    assert noisy_value(100, 0.03, "uniform", "x") == 100 * random.Random("x").uniform(0.97, 1.03)
    assert noisy_value(5, 0.0, "gaussian", "any") == 5
    gauss = [noisy_value(100, 0.03, "gaussian", str(i)) for i in range(2000)]
    assert statistics.mean(gauss) == pytest.approx(100, abs=0.3)
    assert statistics.stdev(gauss) == pytest.approx(3, rel=0.1)
    uniform = [noisy_value(100, 0.03, "uniform", str(i)) for i in range(2000)]
    assert 97 <= min(uniform) < 97.2 and 102.8 < max(uniform) <= 103
    with pytest.raises(ValueError, match="valid: gaussian, uniform"):
        noisy_value(1, 0.1, "cauchy", "0")


def test_reference_run_bare_prints_its_throughput_and_step_times(tmp_path: Path) -> None:
    proc = run_module("reference", "--steps", "4", "--warmup-steps", "1", "--work", "2000",
                      KUBEBENCH_EXP_OUTPUT_PATH=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    metrics = metric_line(proc.stdout)
    shown = float(re.search(r"^steps/sec: ([0-9.]+)$", proc.stdout, re.MULTILINE).group(1))
    assert shown == pytest.approx(metrics["steps_per_s"], abs=0.001)
    assert metrics["ops_per_s"] == pytest.approx(2000 * metrics["steps_per_s"])
    assert f"checksum {lcg(10_000, 1)}" in proc.stdout
    record = json.loads((tmp_path / "step_times.json").read_text())
    assert record["warmup_steps"] == 1 and record["items_per_step"] == 2000
    assert len(record["step_seconds"]) == len(record["step_cpu_seconds"]) == 5


def test_noisy_seeds_from_the_run_id_unless_given() -> None:
    proc = run_module("noisy", "--metric", "throughput", "--mean", "50", "--noise", "0.1", KUBEBENCH_RUN_ID="abc")
    assert proc.returncode == 0, proc.stderr
    assert metric_line(proc.stdout) == {"throughput": pytest.approx(noisy_value(50, 0.1, "gaussian", "abc"))}
    proc = run_module("noisy", "--distribution", "uniform", "--seed", "7", KUBEBENCH_RUN_ID="abc")
    assert metric_line(proc.stdout) == {"rate": pytest.approx(noisy_value(100, 0.03, "uniform", "7"))}


@pytest.mark.parametrize("args, message", [
    (("noisy", "--noise", "-0.1"), "must be zero or a positive number"),
    (("noisy", "--distribution", "cauchy"), "invalid choice"),
    (("reference", "--work", "0"), "must be a positive integer"),
    ((), "required"),
])
def test_bad_arguments_exit_2_with_one_message(args: tuple[str, ...], message: str) -> None:
    proc = run_module(*args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_a_metric_name_the_protocol_cannot_carry_is_one_line() -> None:
    proc = run_module("noisy", "--metric", "a b")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "synthetic: invalid metric name 'a b': use letters, digits, '_', '.', ':', '/', '-'"


@pytest.mark.slow
def test_reference_through_kubebench_stores_its_throughput(home: Path, write) -> None:
    spec = write("ref.yaml", """
        name: ref
        job:
          command: [python, -m, kubebench.workloads.synthetic, reference, --steps, "3", --work, "2000"]
        metrics: [{name: steps_per_s, primary: true}]
        """)
    result = runner.invoke(app, ["run", str(spec), "--id", "ref"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(runner.invoke(app, ["results", "ref", "-f", "json"]).stdout)
    assert run["status"] == "succeeded"
    metrics = run["metrics"]
    assert metrics["steps_per_s"] > 0 and metrics["ops_per_s"] == pytest.approx(2000 * metrics["steps_per_s"])
    assert metrics["steady_items_per_sec"] > 0  # step_times.json was read by the collector
