"""Processes that a killed runner left behind, found and stopped when their runs are redone.

A replica runs in its own process group, so it outlives a runner killed with SIGKILL (or by the
OOM killer, or a lost terminal). Before such a run is redone, its leftovers must go: they would
write into the run's fresh folder. They are found by the run's folder in their environment
(``KUBEBENCH_EXP_PATH``, which every replica and whatever it starts inherits) rather than by
process ids written down at start: there is no moment between the start of a process and its being
findable, and a reused process id cannot be mistaken for it. psutil reads the environments on
Linux and macOS.
"""

from __future__ import annotations

import os
import signal
import time

import psutil

ENV_KEY = "KUBEBENCH_EXP_PATH"
RUN_KEY = "KUBEBENCH_RUN_ID"
WAIT_S = 10.0
_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def find(run_folders: set[str], since_pid: int | None = None) -> list[psutil.Process]:
    """Live processes (not this one, nor its parents) started for one of these run folders.

    ``since_pid``: the first process of the job; on Linux, where process ids grow until they wrap,
    only the processes started after it are looked at (a sweep after each run stays cheap).
    """
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for pid in _candidates(since_pid):
        if pid in mine:
            continue
        try:
            process = psutil.Process(pid)
            if process.environ().get(ENV_KEY) in run_folders and not _gone(process):
                found.append(process)
        except (psutil.Error, OSError):
            continue  # ended meanwhile, or another user's: not ours to stop
    return found


def stop_escaped(run_folder: str, run_id: str, first_pid: int, keep: set[int]) -> list[str]:
    """Stop what a run left running once its job ended, whatever group or session it moved to
    (a daemon started with ``setsid``), and say what it was: ``pid 123 (sleep)``.

    Found by the run's folder and id in their environment; ``keep`` (the replicas themselves) is
    left to the backend. Processes started meanwhile (a daemon forking again) are looked for again.
    """
    stopped: list[str] = []
    for _ in range(5):
        found = [p for p in find({run_folder}, first_pid) if p.pid not in keep and _run_id(p) == run_id]
        if not found:
            break
        stopped += [_describe(p) for p in found]
        _kill(found)
    return stopped


def _candidates(since_pid: int | None) -> list[int]:
    pids = psutil.pids()
    if since_pid is None:
        return pids
    try:
        with open(_LAST_PID) as f:
            last = int(f.read())
    except (OSError, ValueError):
        return pids  # not Linux, or no such file: every process
    return [p for p in pids if p >= since_pid] if last >= since_pid else pids  # wrapped: every process


def _run_id(process: psutil.Process) -> str | None:
    try:
        return process.environ().get(RUN_KEY)
    except (psutil.Error, OSError):
        return None


def _describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid} ({process.name()})"
    except psutil.Error:
        return f"pid {process.pid}"


def stop(run_folders: set[str], wait: float = WAIT_S) -> int:
    """SIGKILL the process groups of the leftovers of these runs, and wait until they are gone.

    Returns how many processes were found. Nobody records anything for them any more (their
    runner is dead), so there is no point in a graceful SIGTERM first.
    """
    if not run_folders:
        return 0
    found = find(run_folders)
    _kill(found, wait)
    return len(found)


def _kill(found: list[psutil.Process], wait: float = WAIT_S) -> None:
    """SIGKILL each process's group (unless it is ours) and the process, and wait until all are gone."""
    ours = _our_groups()
    for process in found:
        try:
            group = os.getpgid(process.pid)
            # A replica's group is its own (the local backend starts each in a new session); a
            # process in our group or an ancestor's (a post-processor of the killed runner, started
            # in the group of whatever started that runner) is killed alone.
            if group not in ours:
                os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.kill()  # in case it left its group
        except psutil.Error:
            pass
    deadline = time.monotonic() + wait
    while any(not _gone(p) for p in found) and time.monotonic() < deadline:
        time.sleep(0.01)


def _our_groups() -> set[int]:
    groups = set()
    for process in [psutil.Process(), *psutil.Process().parents()]:
        try:
            groups.add(os.getpgid(process.pid))
        except (ProcessLookupError, PermissionError):
            pass
    return groups


def _gone(process: psutil.Process) -> bool:
    # A zombie has exited: it only waits for its new parent (init) to reap it, and writes nothing.
    try:
        return not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True
