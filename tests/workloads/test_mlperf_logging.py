"""MLPerf logging: the emitter's line format, and the official compliance checker on a real log of
the time-to-accuracy workload.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.timing import scaled

import kubebench
from kubebench.collect.mllog import parse_events, summarize
from kubebench.workloads.mllog import PREFIX, MLLogger

NO_MLPERF = "mlperf-logging is not installed (pip install 'kubebench[mlperf]')"


def test_line_format_is_mlperf_loggings() -> None:
    out = io.StringIO()
    MLLogger(out, clock=lambda: 1700000000.1234).end("run_stop", metadata={"status": "success"})
    line = out.getvalue()
    assert line.startswith(":::MLLOG {") and line.endswith("}\n")
    record = json.loads(line[len(PREFIX):])
    assert list(record) == ["namespace", "time_ms", "event_type", "key", "value", "metadata"]
    assert record["time_ms"] == 1700000000123 and record["event_type"] == "INTERVAL_END"
    assert record["metadata"] == {"file": __file__, "lineno": record["metadata"]["lineno"], "status": "success"}
    assert record["metadata"]["lineno"] > 0


def test_disabled_logger_writes_nothing() -> None:
    out = io.StringIO()
    MLLogger(out, enabled=False).event("seed", 1)
    assert out.getvalue() == ""


def test_official_parser_reads_our_lines(tmp_path: Path) -> None:
    parser = pytest.importorskip("mlperf_logging.compliance_checker.mlp_parser", reason=NO_MLPERF)
    out = io.StringIO()
    log = MLLogger(out)
    log.event("eval_accuracy", 0.5, metadata={"epoch_num": 2})
    (tmp_path / "log").write_text(out.getvalue())
    lines, errors = parser.parse_file(str(tmp_path / "log"), ruleset="4.0.0")
    assert errors == [] and lines[0].key == "eval_accuracy" and lines[0].value["value"] == 0.5


def run_checker(log: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mlperf_logging.compliance_checker", "--usage", "training", "--ruleset", "4.0.0",
           "--log_output", str(log.with_suffix(".checker")), str(log)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=scaled(60))


@pytest.mark.slow
def test_workload_log_passes_the_official_compliance_checker(tmp_path: Path) -> None:
    pytest.importorskip("mlperf_logging.compliance_checker", reason=NO_MLPERF)
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src, "KUBEBENCH_DATA_ROOT": str(tmp_path)}
    cmd = [sys.executable, "-m", "kubebench.workloads.mlperf_cnn", "--samples", "512", "--val-samples", "128",
           "--target-accuracy", "0.5", "--threads", "1"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=scaled(120))
    assert proc.returncode == 0, proc.stderr
    log = tmp_path / "mlperf.log"
    log.write_text(proc.stdout)

    checked = run_checker(log)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stderr + checked.stdout

    metrics = summarize(parse_events(proc.stdout.splitlines()))
    assert metrics["run_success"] == 1 and metrics["eval_accuracy"] >= 0.5 > 0
    assert 0 < metrics["time_to_accuracy"] <= metrics["time_to_train"]
    assert (tmp_path / "mlperf-synthetic" / "train_images.npy").exists()  # made under the data root

    # The checker does check: the same log without its run_stop fails.
    broken = tmp_path / "broken.log"
    broken.write_text("".join(line for line in proc.stdout.splitlines(True) if '"key": "run_stop"' not in line))
    assert run_checker(broken).returncode != 0
