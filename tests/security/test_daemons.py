"""Finding 13: a daemon that leaves its replica's process group (`setsid`, a double fork) outlived its
run, recorded succeeded, and skewed the runs after it. Now whatever still carries the run's
KUBEBENCH_RUN_ID and KUBEBENCH_EXP_PATH once the job has ended is stopped, and the run says so."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from security_support import without_energy
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

DAEMONS = """\
name: daemons
job:
  command: [python, -c, "__CODE__"]
parameters:
  n: [1, 2]
telemetry: {enabled: false}
metrics: [{name: v}]
"""
# One daemon by setsid(1), one by a double fork with os.setsid(); both write their pid, then the job ends.
CODE = (
    "import os, subprocess, time, kubebench; out = os.environ['KUBEBENCH_EXP_OUTPUT_PATH']; "
    "p = subprocess.Popen(['setsid', 'sleep', '301'], start_new_session=False); "
    "open(os.path.join(out, 'setsid.pid'), 'w').write(str(p.pid)); "
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        open(os.path.join(out, 'double.pid'), 'w').write(str(os.getpid())); time.sleep(301)\n"
    "    os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "while not os.path.exists(os.path.join(out, 'double.pid')): time.sleep(0.01)\n"
    "kubebench.report(v={{ n }})"
)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_daemons_do_not_outlive_their_run_and_the_run_says_so(home: Path, write) -> None:
    spec = write("daemons.yaml", DAEMONS.replace("__CODE__", CODE.replace('"', '\\"').replace("\n", "\\n")))
    pids: list[int] = []
    try:
        result = runner.invoke(app, ["run", str(spec), "--id", "daemons-1"])
        for folder in sorted((home / "experiments" / "daemons-1").glob("*/output")):
            pids += [int((folder / name).read_text()) for name in ("setsid.pid", "double.pid")]
        assert result.exit_code == 0, result.output
        assert len(pids) == 4
        deadline = time.monotonic() + 10
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p for p in pids if alive(p)] == []
        runs = json.loads(runner.invoke(app, ["results", "daemons-1", "-f", "json"]).output)
        for run in runs:
            assert run["status"] == "succeeded"
            warning = run["info"]["leftover_warning"]
            assert warning.startswith("stopped 2 process(es) still running after the job ended: pid "), warning
            assert "(sleep)" in warning and "(python" in warning
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_job_that_leaves_nothing_gets_no_warning(home: Path, tiny_spec: Path) -> None:
    assert runner.invoke(app, ["run", str(tiny_spec), "--id", "clean-1"]).exit_code == 0
    runs = json.loads(runner.invoke(app, ["results", "clean-1", "-f", "json"]).output)
    assert [without_energy(r["info"]) for r in runs] == [{}, {}]
