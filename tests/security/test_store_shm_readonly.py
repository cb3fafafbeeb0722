"""N19 (review 2026-12-02): SQLite's ``-shm`` made unwritable mid-run (``chattr +i``) killed the runner
with SIGBUS (exit 135) and no message. Now the runner stops with a clear error (exit 2) naming the
file, nothing lost, and a resume once the file is writable again completes.

``chattr +i`` needs root and a file system with the immutable flag (ext4, xfs, btrfs, tmpfs on Linux
6.0+); elsewhere the test is skipped. It runs the runner as a process: a SIGBUS would kill pytest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.timing import scaled, wait_for

from kubebench.store.store import open_store

SPEC = """\
name: shm
job:
  command: [python, -c, "import os, time\\nopen({started!r}, 'w').close()\\nwhile os.path.exists({hold!r}): time.sleep(0.01)\\nprint('KUBEBENCH_METRIC x=1')"]
parameters:
  n: [0, 1, 2, 3]
telemetry: {{enabled: false}}
"""


def _chattr(flag: str, path: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.mark.slow
def test_an_immutable_shm_mid_run_is_a_clear_error_and_the_resume_completes(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.touch()
    if not _chattr("+i", probe):
        pytest.skip("chattr +i is not possible here (needs root and a file system with the immutable flag)")
    _chattr("-i", probe)
    hold, started, db = tmp_path / "hold", tmp_path / "started", tmp_path / "kb.db"
    hold.touch()
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(hold=str(hold), started=str(started)))
    env = {**os.environ, "KUBEBENCH_HOME": str(tmp_path / "home"), "KUBEBENCH_STORE": f"sqlite:///{db}"}
    command = [sys.executable, "-m", "kubebench", "run", str(spec), "--id", "shm-1"]
    runner = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    shm = Path(f"{db}-shm")
    try:
        wait_for(lambda: started.exists() or runner.poll() is not None, 120, "the first run to start")
        assert runner.poll() is None and _chattr("+i", shm)  # the run waits on `hold`; its start is recorded
        hold.unlink()
        output = runner.communicate(timeout=scaled(120))[0]
    finally:
        _chattr("-i", shm)
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 2, output  # not -7 (SIGBUS)
    assert f"its shared-memory file {shm} is not writable any more" in output
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=scaled(120))
    assert done.returncode == 0, done.stdout + done.stderr
    store = open_store(f"sqlite:///{db}")
    assert [r.status for r in store.runs("shm-1")] == ["succeeded"] * 4
    store.engine.dispose()
