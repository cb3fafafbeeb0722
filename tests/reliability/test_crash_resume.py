"""A runner killed with SIGKILL at random moments, and resumed each time, loses no run and counts
none twice; the runs it had in flight are recorded as interrupted and redone, and nothing the
killed runner left running writes into a redone run's folder."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from reliability_support import Cli, run_processes
from support.timing import wait_for

from kubebench.store.store import open_store

# Each replica writes a marker named by its pid into result/ after a while, by path (as a workload
# writes its outputs): a leftover of a killed attempt would leave a second marker in the redone run.
WORKLOAD = """
import os, pathlib, sys, time
print("start", os.getpid(), flush=True)
time.sleep(0.25)
pathlib.Path(os.environ["KUBEBENCH_EXP_RESULT_PATH"], f"marker-{os.getpid()}").write_text("x")
print(f"KUBEBENCH_METRIC v={sys.argv[1]}", flush=True)
"""
SPEC = """
name: crash
job:
  command: [python, work.py, "{{ n }}"]
parameters:
  n: [%s]
repeats: 2
parallelism: 2
metrics: [{name: v}]
""" % ", ".join(str(n) for n in range(1, 21))
KILLS = 7


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_stores_each_run_once(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(WORKLOAD)
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)
    rng = random.Random(9)
    for _ in range(KILLS):
        started, target = _attempts_started(cli), _succeeded(cli) + rng.randint(0, 2)
        runner = cli.start("run", str(spec), "--id", "crash-1")
        # a random moment once this runner has started a run and done 0 to 2 more (whatever the load)
        wait_for(lambda started=started, target=target, runner=runner:  # this attempt's values, bound now
                 (_attempts_started(cli) > started and _succeeded(cli) >= target) or runner.poll() is not None,
                 timeout=120, what="the runner's progress")
        time.sleep(rng.uniform(0, 0.4))
        runner.send_signal(signal.SIGKILL)
        runner.communicate()
    done_before = _succeeded(cli)
    assert 0 < done_before < 40, "the kills should leave the sweep part done"
    final = cli.run("run", str(spec), "--id", "crash-1", timeout=240)
    assert final.returncode == 0, final.stdout + final.stderr

    store = open_store(f"sqlite:///{cli.db}")
    runs = store.runs("crash-1")
    assert len(runs) == 40 and len({r.run_id for r in runs}) == 40
    assert {r.status for r in runs} == {"succeeded"}
    assert sorted((r.params["n"], r.repeat) for r in runs) == [(n, k) for n in range(1, 21) for k in range(2)]
    assert all(r.metrics["v"] == r.params["n"] for r in runs)
    for run in runs:
        _assert_folder_complete(Path(run.path), run)

    attempts = store.attempts("crash-1")
    interrupted = [a for found in attempts.values() for a in found if a.status == "interrupted"]
    assert len(interrupted) >= KILLS // 2, "most kills should land while runs are in flight"
    for run in runs:
        found = attempts[run.run_id]
        assert [a.attempt for a in found] == list(range(1, run.attempts + 1))  # every attempt recorded
        assert found[-1].status == "succeeded"
        assert all(a.status == "interrupted" and a.reason.startswith("interrupted: ") for a in found[:-1])
    assert run_processes(cli.home) == []
    with sqlite3.connect(cli.db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    store.engine.dispose()


def _attempts_started(cli: Cli) -> int:
    return (cli.rows("SELECT coalesce(sum(attempts), 0) FROM runs") or [(0,)])[0][0]


def _succeeded(cli: Cli) -> int:
    return (cli.rows("SELECT count(*) FROM runs WHERE status = 'succeeded'") or [(0,)])[0][0]


def _assert_folder_complete(folder: Path, run) -> None:
    """run.json says what the store says; one replica process wrote the log and the outputs."""
    record = json.loads((folder / "run.json").read_text())
    assert (record["run_id"], record["status"], record["metrics"]["v"]) == (run.run_id, "succeeded", run.metrics["v"])
    log = (folder / "output" / "worker-0.log").read_text().splitlines()
    starts = [line.split()[1] for line in log if line.startswith("start ")]
    assert len(starts) == 1, log
    assert sorted(p.name for p in (folder / "result").iterdir()) == [f"marker-{starts[0]}"]
    assert (folder / "config" / "manifest.yaml").is_file() and (folder / "config" / "params.yaml").is_file()
