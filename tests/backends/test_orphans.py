"""Finding and stopping what a killed runner left running, by the run folder in the environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
from support.timing import scaled

from kubebench.backends import orphans

# A replica as the local backend starts one (its own session), with a child of its own.
REPLICA = ("import subprocess, sys, time\n"
           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
           "print('ready', flush=True)\ntime.sleep(60)")


def start(folder: str, own_session: bool) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", REPLICA], env={**os.environ, "KUBEBENCH_EXP_PATH": folder},
                               stdout=subprocess.PIPE, text=True, start_new_session=own_session)
    assert process.stdout.readline().strip() == "ready"
    return process


def tree(process: subprocess.Popen) -> list[psutil.Process]:
    parent = psutil.Process(process.pid)
    return [parent, *parent.children(recursive=True)]


def test_the_leftovers_of_a_run_are_killed_with_their_groups_and_only_they(tmp_path: Path) -> None:
    run, other = str(tmp_path / "exp" / "r1"), str(tmp_path / "exp" / "r2")
    replica = start(run, own_session=True)
    in_our_group = start(run, own_session=False)  # e.g. a post-processor of the killed runner
    unrelated = start(other, own_session=True)
    doomed = tree(replica) + tree(in_our_group)
    try:
        assert {p.pid for p in orphans.find({run})} == {p.pid for p in doomed}
        started = time.monotonic()
        assert orphans.stop({run}) == 4
        assert time.monotonic() - started < scaled(5)
        for process in (replica, in_our_group):
            process.wait(timeout=scaled(5))
        assert all(not p.is_running() or p.status() == psutil.STATUS_ZOMBIE for p in doomed)
        assert all(p.is_running() for p in tree(unrelated))  # another run's processes are left alone
        assert orphans.find({run}) == [] and orphans.stop(set()) == 0
    finally:
        for process in (replica, in_our_group, unrelated):
            for p in tree(process) if process.poll() is None else []:
                p.kill()
            process.wait()
