"""`kubebench run` end to end on the local backend with small Python workloads."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.timing import scaled, wait_for
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

SPEC = """
name: Tiny Bench
job:
  kind: Process
  command: [python, -c, "import kubebench, os; print('n', {{ n }}); kubebench.report(score={{ n }} * 10, rank=0)"]
parameters:
  n: [1, 2]
  mode: fast
repeats: 2
metrics:
  - {name: score, primary: true}
"""


def invoke(*args: str):
    return runner.invoke(app, list(args))


def experiment_id(output: str) -> str:
    return output.split("experiment ")[1].split(":")[0].strip()


def test_run_stores_and_prints_results(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    result = invoke("run", str(spec), "--id", "tiny-1")
    assert result.exit_code == 0, result.output
    assert "results of tiny-1" in result.output
    runs = json.loads(invoke("results", "tiny-1", "--format", "json").output)
    assert len(runs) == 4
    assert {r["status"] for r in runs} == {"succeeded"}
    assert sorted(r["metrics"]["score"] for r in runs) == [10.0, 10.0, 20.0, 20.0]
    assert all(r["params"]["mode"] == "fast" and r["duration_s"] > 0 for r in runs)
    first = runs[0]
    run_dir = home / "experiments" / "tiny-1" / first["run_id"]
    assert (run_dir / "output" / "worker-0.log").read_text().startswith("n ")
    assert "kind: Process" in (run_dir / "config" / "manifest.yaml").read_text()
    assert (run_dir / "config" / "params.yaml").read_text() == f"n: {first['params']['n']}\nmode: fast\n"


def test_results_csv_has_stable_columns(home: Path, write) -> None:
    # No telemetry: whether a run lasts long enough to be sampled (cpu_percent_max …) depends on the machine.
    invoke("run", str(write("spec.yaml", SPEC + "telemetry: {enabled: false}\n")), "--id", "tiny-csv")
    rows = list(csv.reader(io.StringIO(invoke("results", "tiny-csv", "--format", "csv").output)))
    assert rows[0][:6] == ["run_id", "trial_id", "repeat", "status", "param.n", "param.mode"]
    metrics = [c for c in rows[0] if c.startswith("metric.")]
    assert metrics == sorted(metrics) and {"metric.rank", "metric.score", "metric.end_to_end_seconds"} <= set(metrics)
    assert len(rows) == 5


def test_experiments_and_show(home: Path, write) -> None:
    invoke("run", str(write("spec.yaml", SPEC)), "--id", "tiny-show")
    listing = invoke("experiments")
    assert listing.exit_code == 0 and "tiny-show" in listing.output and "Tiny Bench" in listing.output
    shown = invoke("show", "tiny-show")
    assert shown.exit_code == 0
    assert "4 succeeded" in shown.output and re.search(r"score.*\n.*median", shown.output)


def test_generated_id_follows_the_original_format(home: Path, write) -> None:
    result = invoke("run", str(write("spec.yaml", SPEC)), "--repeats", "1")
    assert result.exit_code == 0, result.output
    exp_id = experiment_id(result.output)
    assert exp_id.startswith("tiny-bench-") and len(exp_id.split("-")[-1]) == 4


COUNTING = """
name: counting
job:
  command: [python, -c, "open('{counter}', 'a').write('x'); import kubebench; kubebench.report(v=1)"]
parameters:
  p: [1, 2, 3]
repeats: 2
"""


def test_same_id_resumes_without_repeating_completed_runs(home: Path, write, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    spec = write("spec.yaml", COUNTING.format(counter=counter))
    assert invoke("run", str(spec), "--id", "resume-1").exit_code == 0
    assert counter.read_text() == "x" * 6
    again = invoke("run", str(spec), "--id", "resume-1")
    assert again.exit_code == 0
    assert "6 already done" in again.output
    assert counter.read_text() == "x" * 6
    more = invoke("run", str(spec), "--id", "resume-1", "--repeats", "3")
    assert more.exit_code == 0
    assert counter.read_text() == "x" * 9


HEALING = """
name: healing
job:
  command: [python, -c, "import os, sys, kubebench; open('COUNTER', 'a').write('{{ n }}'); kubebench.report(v={{ n }}); sys.exit(0 if {{ n }} == 1 or os.path.exists('HEALED') else 4)"]
parameters:
  n: [1, 2]
repeats: 1
metrics: [{name: v}]
"""


def test_resuming_redoes_a_failed_run_and_only_it(home: Path, write, tmp_path: Path) -> None:
    counter, healed = tmp_path / "counter", tmp_path / "healed"
    spec = write("spec.yaml", HEALING.replace("COUNTER", str(counter)).replace("HEALED", str(healed)))
    first = invoke("run", str(spec), "--id", "heal-1")
    assert first.exit_code == 1
    assert counter.read_text() == "12"
    healed.touch()
    again = invoke("run", str(spec), "--id", "heal-1")
    assert again.exit_code == 0, again.output
    assert "1 already done" in again.output
    assert counter.read_text() == "122"  # the failed run was redone, the succeeded one was not
    runs = {r["params"]["n"]: r for r in json.loads(invoke("results", "heal-1", "-f", "json").output)}
    assert {n: (r["status"], r["metrics"]["v"]) for n, r in runs.items()} == {1: ("succeeded", 1.0), 2: ("succeeded", 2.0)}


def test_a_failed_run_is_recorded_and_the_sweep_goes_on(home: Path, write) -> None:
    spec = write("spec.yaml", """
        name: flaky
        job:
          command: [python, -c, "import sys, kubebench; print('about to fail'); kubebench.report(v=1); sys.exit({{ code }})"]
        parameters:
          code: [0, 3]
        metrics: [{name: v}]
    """)
    result = invoke("run", str(spec), "--id", "flaky-1")
    assert result.exit_code == 1
    runs = {r["params"]["code"]: r for r in json.loads(invoke("results", "flaky-1", "-f", "json").output)}
    assert runs[0]["status"] == "succeeded"
    assert (runs[3]["status"], runs[3]["exit_code"], runs[3]["reason"]) == ("failed", 3, "worker-0 exited with code 3")
    assert "failed runs" in result.output and "worker-0 exited with code 3" in result.output


def test_missing_metric_and_timeout_are_failures(home: Path, write) -> None:
    limit = math.ceil(scaled(5))  # time for the quick run to start Python on a busy machine
    spec = write("spec.yaml", """
        name: slow
        job:
          command: [python, -c, "import time; time.sleep({{ sleep }})"]
        parameters:
          sleep: [0, 600]
        timeout: LIMITs
        metrics: [{name: never_reported}]
    """.replace("LIMIT", str(limit)))
    started = time.monotonic()
    result = invoke("run", str(spec), "--id", "slow-1")
    assert result.exit_code == 1
    assert time.monotonic() - started < 3 * limit  # the 600 s sleep was cut at the timeout
    runs = {r["params"]["sleep"]: r for r in json.loads(invoke("results", "slow-1", "-f", "json").output)}
    assert (runs[0]["status"], runs[0]["reason"]) == ("failed", "metric 'never_reported' missing from the run's outputs")
    assert (runs[600]["status"], runs[600]["reason"]) == ("timeout", f"timed out after {limit}s")


def test_warmup_runs_are_done_first_and_not_counted(home: Path, write, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    spec = write("spec.yaml", COUNTING.format(counter=counter) + "warmup_runs: 1\n")
    assert invoke("run", str(spec), "--id", "warm-1").exit_code == 0
    assert counter.read_text() == "x" * 9
    assert len(json.loads(invoke("results", "warm-1", "-f", "json").output)) == 6


def test_dry_run_and_render_do_nothing(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    dry = invoke("run", str(spec), "--dry-run", "--id", "dry-1")
    assert dry.exit_code == 0
    assert "2 trials, 4 runs" in dry.output
    rendered = invoke("render", str(spec), "--set", "n=[5]")
    assert rendered.exit_code == 0
    # one job per trial, its repeats counted from 0 as in tables and JSON; --all-runs prints each run's
    assert rendered.output.count("kind: Process") == 1
    assert "(repeat 0) (of 2 runs; the others differ only in run id and repeat)" in rendered.output
    every = invoke("render", str(spec), "--set", "n=[5]", "--all-runs", "--repeats", "3")
    assert every.output.count("kind: Process") == 3 and "(repeat 2)" in every.output
    assert "KUBEBENCH_EXP_OUTPUT_PATH" in rendered.output and "print('n', 5)" in rendered.output
    assert not (home / "experiments").exists()


def test_params_file_overrides_the_spec(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    params = write("params.yaml", "n: [7]\n")
    assert invoke("run", str(spec), "--params", str(params), "--id", "p-1", "--repeats", "1").exit_code == 0
    runs = json.loads(invoke("results", "p-1", "-f", "json").output)
    assert [r["metrics"]["score"] for r in runs] == [70.0]


def test_ctrl_c_cancels_the_run_and_leaves_no_process(home: Path, write, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    spec = write("spec.yaml", f"""
        name: long
        job:
          command: [python, -c, "import os, time; open('{pidfile}', 'w').write(str(os.getpid())); time.sleep(120)"]
    """)
    env = {**os.environ, "KUBEBENCH_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(spec), "--id", "long-1"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workload = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), 60, "the workload's pid file"))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=scaled(30))
    assert proc.returncode == 130, out + err
    # the command that resumes it, spec path included, alone on its line: pasted as it is (review 2026-12-02 #9)
    assert f"resume with:\n  kubebench run {spec} --id long-1\n" in err
    assert "Traceback" not in err
    assert not Path(f"/proc/{workload}").exists() or Path(f"/proc/{workload}/stat").read_text().split()[2] == "Z"
    runs = json.loads(invoke("results", "long-1", "-f", "json").output)
    assert [(r["status"], r["reason"]) for r in runs] == [("cancelled", "cancelled by the user")]
