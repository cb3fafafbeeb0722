"""SIGINT and SIGTERM stop a real `kubebench run`: every replica's process group is stopped, the
runs in flight are recorded cancelled, the store stays consistent; a second signal stops at once.
A runner killed with SIGKILL leaves processes behind: resuming stops them before redoing the run.
"""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from pathlib import Path

import psutil
import pytest
from reliability_support import Cli, run_processes
from support.timing import scaled, wait_for

from kubebench.store.store import open_store

# Two replicas per run, each with a child of its own; both run until stopped, unless `quick` exists.
# IGNORE_TERM: the workload and its child ignore SIGTERM (only SIGKILL stops them).
WORKLOAD = """
import os, pathlib, signal, subprocess, sys, time
ignore = os.environ.get("IGNORE_TERM") == "1"
if ignore:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
code = "import signal, time\\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n" if ignore else "") + "time.sleep(120)"
subprocess.Popen([sys.executable, "-c", code])
if pathlib.Path(sys.argv[1]).exists():
    print("KUBEBENCH_METRIC v=1", flush=True)
    sys.exit(0)
time.sleep(120)
"""
SPEC = """
name: stop
job:
  workers: 2
  command: [python, {work}, {quick}]
  env: {{IGNORE_TERM: "{ignore}"}}
parameters:
  n: [1, 2, 3, 4]
parallelism: 2
backend: {{kind: local, kill_grace: {grace}}}
"""


def write_spec(tmp_path: Path, ignore: bool = False, grace: float = 3) -> tuple[Path, Path]:
    (tmp_path / "work.py").write_text(WORKLOAD)
    quick = tmp_path / "quick"
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(work=tmp_path / "work.py", quick=quick, ignore="1" if ignore else "0", grace=grace))
    return spec, quick


def start_and_wait_for_replicas(cli: Cli, spec: Path, exp_id: str):
    runner = cli.start("run", str(spec), "--id", exp_id)
    # two runs in flight, two replicas each, each replica with its child
    wait_for(lambda: len(run_processes(cli.home)) >= 8 or runner.poll() is not None, what="the replicas")
    assert runner.poll() is None, runner.communicate()
    return runner, run_processes(cli.home)


class follow(list):  # noqa: N801 (used like a function)
    """The lines of a child's pipe as they come, read by a thread (communicate() would wait for the end)."""

    def __init__(self, stream) -> None:
        super().__init__()
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream) -> None:
        for line in iter(stream.readline, ""):
            self.append(line)

    def text(self) -> str:
        """Everything, once the child has closed the pipe."""
        self.thread.join(timeout=scaled(30))
        return "".join(self)


def assert_all_gone(processes: list[psutil.Process], within: float = 10) -> None:
    def gone(p: psutil.Process) -> bool:
        try:
            return not p.is_running() or p.status() == psutil.STATUS_ZOMBIE
        except psutil.Error:
            return True

    deadline = time.monotonic() + scaled(within) if within else time.monotonic()
    while not all(map(gone, processes)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [p.pid for p in processes if not gone(p)] == []


def assert_store_intact(cli: Cli) -> None:
    with sqlite3.connect(cli.db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
def test_a_signal_cancels_the_runs_in_flight_and_stops_every_process(cli: Cli, tmp_path: Path, sig, code) -> None:
    spec, _ = write_spec(tmp_path)
    runner, processes = start_and_wait_for_replicas(cli, spec, "stop-1")
    runner.send_signal(sig)
    out, err = runner.communicate(timeout=scaled(60))
    assert runner.returncode == code, out + err
    assert f"interrupted ({sig.name}): the runs in flight were cancelled; resume with:\n  kubebench run {spec} --id stop-1\n" in err
    assert "Traceback" not in err
    assert_all_gone(processes, within=1)  # stopped before the runner exited: nothing left to wait for
    assert run_processes(cli.home) == []
    store = open_store(f"sqlite:///{cli.db}")
    runs = store.runs("stop-1")
    assert sorted(r.status for r in runs) == ["cancelled", "cancelled", "pending", "pending"]
    assert {r.reason for r in runs if r.status == "cancelled"} == {"cancelled by the user"}
    attempts = store.attempts("stop-1")
    assert sorted((a.status, a.attempt) for found in attempts.values() for a in found) == [("cancelled", 1)] * 2
    assert_store_intact(cli)
    store.engine.dispose()


@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_and_a_resume_redoes_the_runs(cli: Cli, tmp_path: Path) -> None:
    spec, quick = write_spec(tmp_path, ignore=True, grace=60)  # a polite stop would wait a minute
    runner, processes = start_and_wait_for_replicas(cli, spec, "stop-2")
    out, err = follow(runner.stdout), follow(runner.stderr)
    runner.send_signal(signal.SIGINT)
    # The first one handled (else two signals in a row would count as one), and the stop is polite:
    # SIGTERM sent to every group, which ignores it.
    wait_for(lambda: "SIGINT: cancelling the runs in flight" in "".join(err), 30, "the runner to start cancelling")
    assert runner.poll() is None
    started = time.monotonic()
    runner.send_signal(signal.SIGINT)
    runner.wait(timeout=scaled(30))
    assert time.monotonic() - started < scaled(5)
    out, err = out.text(), err.text()
    assert runner.returncode == 130, out + err
    assert "SIGINT again: stopped at once; resume with --id stop-2" in err and "Traceback" not in err
    assert_all_gone(processes)
    assert_store_intact(cli)
    assert sorted(s for (s,) in cli.rows("SELECT status FROM runs")) == ["pending", "pending", "running", "running"]

    quick.touch()
    resumed = cli.run("run", str(spec), "--id", "stop-2")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    store = open_store(f"sqlite:///{cli.db}")
    assert {r.status for r in store.runs("stop-2")} == {"succeeded"}
    attempts = store.attempts("stop-2")
    redone = [[a.status for a in found] for found in attempts.values() if len(found) > 1]
    assert redone == [["interrupted", "succeeded"]] * 2
    shown = cli.run("show", "stop-2")
    assert "attempts of runs tried more than once" in shown.stdout and "interrupted: its runner stopped" in shown.stdout
    store.engine.dispose()


@pytest.mark.slow
def test_what_a_killed_runner_left_running_is_stopped_before_the_run_is_redone(cli: Cli, tmp_path: Path) -> None:
    spec, quick = write_spec(tmp_path)
    runner, leftovers = start_and_wait_for_replicas(cli, spec, "stop-3")
    runner.send_signal(signal.SIGKILL)
    runner.communicate()
    # A short look for the opposite (nothing to poll for: the replicas must stay as they are).
    time.sleep(0.3)
    assert all(p.is_running() for p in leftovers), "replicas outlive a runner killed with SIGKILL"

    quick.touch()
    resumed = cli.run("run", str(spec), "--id", "stop-3")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_all_gone(leftovers, within=0)  # stopped by the resumed runner, not by themselves
    assert run_processes(cli.home) == []
    store = open_store(f"sqlite:///{cli.db}")
    assert {r.status for r in store.runs("stop-3")} == {"succeeded"}
    store.engine.dispose()


@pytest.mark.slow
def test_a_second_runner_of_the_same_experiment_is_refused(cli: Cli, tmp_path: Path) -> None:
    spec, _ = write_spec(tmp_path)
    first, _ = start_and_wait_for_replicas(cli, spec, "stop-4")
    try:
        second = cli.run("run", str(spec), "--id", "stop-4")
        assert second.returncode == 2
        assert second.stderr.strip() == (f"error: experiment 'stop-4' is being run by another kubebench process "
                                         f"(pid {first.pid}); wait for it to end, or stop it")
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    assert first.returncode == 130
    assert sorted(s for (s,) in cli.rows("SELECT status FROM runs")) == ["cancelled", "cancelled", "pending", "pending"]
