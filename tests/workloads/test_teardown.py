"""How distributed workloads end: no thread of a process group may meet a finalizing interpreter.

PyTorch's DDP reducer keeps its gloo process group alive after ``destroy_process_group()``; its
threads then run while Python finalizes, and one that takes the GIL is ended with ``pthread_exit``,
which aborts the replica ("terminate called without an active exception", exit 134) after it printed
its numbers (review ux.md B4). These tests look at the threads a replica still has when Python starts
to finalize, through an ``atexit`` hook installed by a ``sitecustomize`` module.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from test_cnn import _cmd, _env, _free_port

TIMEOUT_S = 180
#: Thread names of c10d and gloo (TCPStore server, gloo work queue, gloo transport loop).
C10D_THREADS = ("pt_tcpstore_uv", "pt_gloo_runloop", "gloo_tcp_loop")
SITECUSTOMIZE = """
import atexit, os

def _threads_at_exit():
    names = sorted(open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task"))
    with open(os.path.join(os.environ["THREADS_AT_EXIT"], str(os.getpid())), "w") as f:
        f.write("\\n".join(names))

atexit.register(_threads_at_exit)
"""


def _threads_at_exit(tmp_path: Path, *ranks_args: list[str]) -> tuple[list[subprocess.CompletedProcess], list[str]]:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    seen = tmp_path / "seen"
    seen.mkdir()
    port = str(_free_port())
    procs = []
    for rank, args in enumerate(ranks_args):
        env = _env(MASTER_ADDR="127.0.0.1", MASTER_PORT=port, WORLD_SIZE=str(len(ranks_args)), RANK=str(rank),
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(len(ranks_args)), THREADS_AT_EXIT=str(seen))
        env["PYTHONPATH"] = os.pathsep.join((str(hook), env["PYTHONPATH"]))
        procs.append(subprocess.Popen(_cmd(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    done = [subprocess.CompletedProcess(p.args, p.wait(TIMEOUT_S), p.stdout.read()) for p in procs]
    names = [line for f in seen.iterdir() for line in f.read_text().splitlines()]
    return done, names


@pytest.mark.slow
def test_ddp_replicas_end_without_process_group_threads_at_finalization(tmp_path: Path) -> None:
    args = ["--batch-size", "4", "--steps", "2", "--warmup-steps", "1"]
    done, names = _threads_at_exit(tmp_path, args, args)
    assert [p.returncode for p in done] == [0, 0], [p.stdout[-2000:] for p in done]
    assert "images/sec:" in done[0].stdout
    assert not set(names) & set(C10D_THREADS), f"process-group threads alive at finalization: {names}"


@pytest.mark.slow
def test_a_failing_replica_still_fails_and_reports_its_error(tmp_path: Path) -> None:
    """The orderly end is for completed runs only: an error is not swallowed by the exit path."""
    good = ["--batch-size", "4", "--steps", "2", "--warmup-steps", "1"]
    bad = [*good, "--data", str(tmp_path / "missing-dataset")]
    done, _ = _threads_at_exit(tmp_path, bad, bad)
    assert all(p.returncode not in (0, None) for p in done)
    assert all("cnn:" in p.stdout for p in done), [p.stdout[-2000:] for p in done]
