"""N16 (review of 2026-12-02): a runner killed with SIGKILL leaves its experiment ``running`` in the
store; the dashboard then answered 409 to both cancel and delete, while ``kubebench delete`` could. Now
the dashboard asks whether a runner holds the experiment's lock (kubebench.liveness): while one does,
or where it cannot tell, it refuses as before; once the runner is gone, the experiment shows as
interrupted and can be cancelled and deleted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ux_home

from kubebench.settings import settings as make_settings
from kubebench.store.store import open_store

TOKEN = "n16-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SPEC = "name: dead\njob: {command: [python, -c, 'print(1)']}\nparameters: {n: [1, 2, 3]}\n"


@pytest.fixture
def dead(tmp_path: Path):
    """An experiment recorded as a runner leaves it (one run succeeded, one running, one pending), and
    that runner: a process holding the experiment's lock, as ``kubebench run`` does."""
    config = make_settings(home=tmp_path, store=f"sqlite:///{tmp_path / 'kubebench.db'}")
    store = open_store(config.store_url)
    ux_home.record(store, "dead-1", SPEC, lambda p, r: {1: ("succeeded", {"v": 1.0}), 2: ("running", {})}.get(
        p["n"], ("pending", {})))
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from kubebench.locks import ExperimentLock
        with ExperimentLock(Path({str(config.experiments_root / "dead-1")!r}), "dead-1"):
            print("held", flush=True)
            time.sleep(120)
        """)], stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    yield config, store, holder
    holder.kill()
    holder.wait()


def client(config):
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    return TestClient(make_app(open_store(config.store_url), config, token=TOKEN), base_url="http://127.0.0.1")


def test_a_live_runner_keeps_its_experiment_running(dead) -> None:
    config, store, _ = dead
    with client(config) as web:
        assert web.get("/api/experiments/dead-1").json()["state"] == "running"
        assert web.post("/api/experiments/dead-1/cancel", headers=AUTH).status_code == 409
        assert web.delete("/api/experiments/dead-1", headers=AUTH).status_code == 409
    assert store.experiment("dead-1").runs_by_status == {"succeeded": 1, "running": 1, "pending": 1}


def test_a_killed_runner_s_experiment_is_interrupted_and_can_be_cancelled_then_deleted(dead) -> None:
    config, store, holder = dead
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with client(config) as web:
        detail = web.get("/api/experiments/dead-1").json()
        assert (detail["state"], detail["runner"]) == ("interrupted", "gone")
        assert "--id dead-1" in detail["resume"]
        assert web.post("/api/experiments/dead-1/cancel").status_code == 401  # still needs the token
        answer = web.post("/api/experiments/dead-1/cancel", headers=AUTH)
        assert answer.status_code == 202, answer.text
        runs = {r.status: r.reason for r in store.runs("dead-1")}
        assert set(runs) == {"succeeded", "cancelled"} and "its runner had stopped" in runs["cancelled"]
        assert web.get("/api/experiments/dead-1").json()["state"] == "cancelled"
        assert web.delete("/api/experiments/dead-1", headers=AUTH).status_code == 204
    assert [e.id for e in store.experiments()] == []
    assert not (config.experiments_root / "dead-1").exists()


def test_a_killed_runner_s_experiment_can_be_deleted_at_once(dead) -> None:
    config, store, holder = dead
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with client(config) as web:
        assert web.delete("/api/experiments/dead-1", headers=AUTH).status_code == 204
    assert [e.id for e in store.experiments()] == []


def test_a_runner_this_machine_cannot_see_counts_as_alive(tmp_path: Path) -> None:
    """No experiment folder here (its runner on another machine, with a shared store): refused as before."""
    config = make_settings(home=tmp_path, store=f"sqlite:///{tmp_path / 'kubebench.db'}")
    store = open_store(config.store_url)
    ux_home.record(store, "far-1", SPEC, lambda p, r: ("running", {}))
    with client(config) as web:
        assert web.get("/api/experiments/far-1").json()["state"] == "running"
        assert web.post("/api/experiments/far-1/cancel", headers=AUTH).status_code == 409
        assert web.delete("/api/experiments/far-1", headers=AUTH).status_code == 409
