"""Two experiments needing one dataset: prepared once, by whichever takes its lock first; and a
preparer killed mid-step: the next one takes its lock over, stops what it left running and makes
the dataset afresh. Real ``kubebench run`` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from support.timing import scaled, wait_for

import kubebench
from kubebench.data.cache import DataCache
from kubebench.settings import settings
from kubebench.store.store import open_store

#: Counts its runs in prepared.log; the first one waits while ``hold`` exists (after writing one file),
#: then it writes the rest.
MAKE = """
import os, time
from pathlib import Path
out = Path(os.environ["KUBEBENCH_DATA_PATH"])
with Path("prepared.log").open("a") as log:
    log.write(f"{os.getpid()}\\n")
(out / "first.txt").write_text("1")
while Path("hold").exists() and Path("prepared.log").read_text().split()[0] == str(os.getpid()):
    time.sleep(0.05)
for i in range(5):
    (out / f"f{i}.txt").write_text(str(i))
"""

SPEC = """
name: shared-data
job:
  kind: Process
  command: [python, -c, "import os, kubebench; kubebench.report(files=len(os.listdir(os.environ['KUBEBENCH_DATA_ROOT'] + '/shared')))"]
metrics: [{name: files}]
data:
  prepare:
    - {name: shared, command: [python, make.py], timeout: 60s}
"""


def start(spec: Path, experiment: str) -> subprocess.Popen:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    return subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(spec), "--id", experiment],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


@pytest.fixture
def shared(home: Path, write) -> Path:
    write("make.py", MAKE)
    return write("spec.yaml", SPEC)


def pids(spec: Path) -> list[int]:
    log = spec.parent / "prepared.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


@pytest.mark.slow
def test_two_experiments_at_once_prepare_the_dataset_once(shared: Path) -> None:
    (shared.parent / "hold").write_text("")
    first, second = start(shared, "left"), start(shared, "right")
    try:
        wait_for(lambda: pids(shared), scaled(60))
        time.sleep(0.5)  # the other one is waiting for the lock by now, or soon is
        (shared.parent / "hold").unlink()
        outputs = [p.communicate(timeout=scaled(120))[0] for p in (first, second)]
    finally:
        for p in (first, second):
            p.kill()
    assert [p.returncode for p in (first, second)] == [0, 0], outputs
    assert len(pids(shared)) == 1  # one preparation for both
    db = open_store(settings().store_url)
    made = {e: [d.prepared for d in db.data(e)] for e in ("left", "right")}
    assert sorted(made.values()) == [[False], [True]]
    assert [r.metrics["files"] for e in ("left", "right") for r in db.runs(e)] == [6.0, 6.0]


@pytest.mark.slow
def test_a_killed_preparer_is_taken_over(shared: Path, home: Path) -> None:
    (shared.parent / "hold").write_text("")
    killed = start(shared, "killed")
    try:
        wait_for(lambda: pids(shared), scaled(60))
        [orphan] = pids(shared)
        killed.send_signal(signal.SIGKILL)  # the runner dies; its prepare step runs on, in its own group
        killed.wait(scaled(10))
        assert psutil.pid_exists(orphan)
        cache = DataCache(home / "data")
        assert cache.marker("shared") is None  # half made, and not ready
        # the next one must not wait for the dead runner, nor let its leftover (held) write into the new data
        done = subprocess.run([sys.executable, "-m", "kubebench", "run", str(shared), "--id", "next"],
                              capture_output=True, text=True, timeout=scaled(120),
                              env={**os.environ, "PYTHONPATH": str(Path(kubebench.__file__).resolve().parents[1])})
        stopped = not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE
    finally:
        killed.kill()
        for pid in pids(shared):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert done.returncode == 0, done.stdout + done.stderr
    assert stopped  # the leftover step was stopped before the dataset was made again
    assert len(pids(shared)) == 2
    marker = cache.marker("shared")
    assert marker is not None and marker.files == 6 and marker.experiment_id == "next"
    db = open_store(settings().store_url)
    assert [r.metrics["files"] for r in db.runs("next")] == [6.0]
    assert json.loads(json.dumps([d.prepared for d in db.data("next")])) == [True]
