"""Two runners on two "machines" (two ``KUBEBENCH_HOME`` folders) sharing one store: the check of
``tests/security/test_shared_store.py`` and ``bench/shared_store_runners.py``.

Runner A starts an experiment. Runner B, started with the same id while A runs, must be refused
(BusyError, exit 2, naming A's host and pid). A is then killed with its jobs, as when its machine
dies; once A's lease has expired, B is started again, takes the lease over and finishes the
experiment. Every job records its executions, so that the check counts them: each run executed
exactly once, except the one A was running when killed, redone once by B, never at the same time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

EXPERIMENT = "shared-1"
#: How long each run's job sleeps; the lease of the runners (KUBEBENCH_LEASE_SECONDS).
JOB_SECONDS, LEASE_SECONDS = 0.3, 1.0

# A's jobs (home-a) wait while the file `hold` exists, and the third one hangs until it is killed: so B
# meets A mid-run, and A dies mid-run, whatever the machine's load.
JOB = """\
import os, sys, time
log, run, hold = sys.argv[1], os.environ["KUBEBENCH_RUN_ID"], sys.argv[3]
def note(what):
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{what} {run} {os.getpid()} {time.time():.6f}\\n".encode())
    os.close(fd)
note("start")
if "home-a" in os.environ["KUBEBENCH_EXP_ROOT"]:
    while os.path.exists(hold):
        time.sleep(0.01)
    if sum(line.startswith("end ") for line in open(log)) >= 2:
        time.sleep(3600)
time.sleep(float(sys.argv[2]))
note("end")
print("KUBEBENCH_METRIC x=1")
"""

SPEC = """\
name: shared
job:
  command: [{python}, {job}, {log}, "{seconds}", {hold}]
parameters:
  n: [0, 1, 2, 3, 4, 5]
telemetry: {{enabled: false}}
metrics: [{{name: x}}]
"""


@dataclass
class Outcome:
    """What the check saw; ``problems`` is empty when it passed."""

    refused: str = ""
    took_over: bool = False
    statuses: dict[str, int] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    ends: dict[str, int] = field(default_factory=dict)
    killed_run: str = ""
    killed_pid: str = ""
    overlaps: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _runner(url: str, spec: Path, home: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "KUBEBENCH_HOME": str(home), "KUBEBENCH_STORE": url, "KUBEBENCH_LEASE_SECONDS": str(LEASE_SECONDS),
           "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(spec), "--id", EXPERIMENT], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _lines(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def _wait(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {seconds:g} s for {what}")
        time.sleep(0.02)


def _kill_machine(runner: subprocess.Popen[str], log: Path) -> tuple[str, str]:
    """SIGKILL the runner and every job it started (their pids are in the log): a machine that died.
    Returns the run and pid of the job killed (empty: none was running)."""
    runner.kill()
    runner.wait()
    started = {pid: run for what, run, pid, _ in _lines(log) if what == "start"}
    ended = {pid for what, _, pid, _ in _lines(log) if what == "end"}
    killed = ("", "")
    for pid, run in started.items():
        if pid not in ended:
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed = (run, pid)
            except ProcessLookupError:
                pass
    return killed


def check(url: str, folder: Path, timeout: float = 120.0) -> Outcome:
    """Run the two-runner check on the store at ``url``, in ``folder`` (made here; left for a look)."""
    from kubebench.store.store import open_store

    folder.mkdir(parents=True, exist_ok=True)
    job, log, spec, hold = folder / "job.py", folder / "executions.log", folder / "spec.yaml", folder / "hold"
    job.write_text(JOB)
    spec.write_text(SPEC.format(python=sys.executable, job=job, log=log, seconds=JOB_SECONDS, hold=hold))
    hold.touch()
    out = Outcome()
    a = _runner(url, spec, folder / "home-a")
    try:
        _wait(lambda: any(w[0] == "start" for w in _lines(log)) or a.poll() is not None, timeout, "A's first run")
        b = _runner(url, spec, folder / "home-b")
        b_out = b.communicate(timeout=timeout)[0]
        out.refused = b_out if b.returncode == 2 and "being run by another kubebench runner" in b_out else ""
        if not out.refused:
            out.problems.append(f"B was not refused while A ran (rc {b.returncode}): {b_out[-400:]}")
        hold.unlink()
        _wait(lambda: sum(w[0] == "start" for w in _lines(log)) >= 3 or a.poll() is not None, timeout, "A's third run")
        if a.poll() is not None:
            out.problems.append(f"A ended before it could be killed (rc {a.returncode}): {a.communicate()[0][-400:]}")
        out.killed_run, out.killed_pid = _kill_machine(a, log)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    store = open_store(url)
    try:
        _wait(lambda: (lambda lease: lease is None or not lease.alive)(store.lease(EXPERIMENT)), timeout,
              "A's lease to expire")
        b = _runner(url, spec, folder / "home-b")
        b_out = b.communicate(timeout=timeout)[0]
        out.took_over = b.returncode == 0 and "took over the lease of a runner that is gone" in b_out
        if not out.took_over:
            out.problems.append(f"B did not take the experiment over (rc {b.returncode}): {b_out[-600:]}")
        out.statuses = dict(Counter(r.status for r in store.runs(EXPERIMENT)))
        attempts = store.attempts(EXPERIMENT)
    finally:
        store.engine.dispose()
    _count(out, _lines(log), attempts)
    return out


def _count(out: Outcome, lines: list[list[str]], attempts: dict) -> None:
    out.starts = dict(Counter(run for what, run, *_ in lines if what == "start"))
    out.ends = dict(Counter(run for what, run, *_ in lines if what == "end"))
    runs = 6
    if out.statuses != {"succeeded": runs}:
        out.problems.append(f"stored runs: {out.statuses} (expected {runs} succeeded)")
    for run in sorted(out.starts):
        expected = 2 if run == out.killed_run else 1
        if out.starts[run] != expected or out.ends.get(run, 0) != 1:
            out.problems.append(f"run {run}: started {out.starts[run]}×, ended {out.ends.get(run, 0)}× "
                                f"(expected {expected} and 1)")
    if len(out.ends) != runs:
        out.problems.append(f"{len(out.ends)} runs executed to the end (expected {runs})")
    if out.killed_run and "interrupted" not in {a.status for a in attempts.get(out.killed_run, [])}:
        out.problems.append(f"run {out.killed_run}, killed with A, has no interrupted attempt")
    live: dict[str, str] = {}  # run → pid of its execution in progress, in time order
    for what, run, pid, _ in sorted(lines, key=lambda w: float(w[3])):
        if what == "start":
            if run in live:
                out.overlaps.append(f"run {run}: pid {pid} started while pid {live[run]} ran")
            live[run] = pid
        elif live.get(run) == pid:
            del live[run]
        if live.get(out.killed_run) == out.killed_pid:  # killed before B started: not running any more
            del live[out.killed_run]
    out.problems += out.overlaps
