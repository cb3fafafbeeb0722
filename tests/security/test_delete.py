"""Findings 1 and 9: `delete` removes only the folder kubebench made for the experiment (strictly
inside the experiments root or the configured storage), only an experiment of the store, and never
while a runner holds the experiment's lock (the web answered 204 between two runs of a live runner)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.locks import ExperimentLock
from kubebench.settings import settings as make_settings
from kubebench.store import schema
from kubebench.store.store import open_store

from security_support import raw

runner = CliRunner(env={"COLUMNS": "200"})


def run(spec: Path, exp_id: str) -> None:
    result = runner.invoke(app, ["run", str(spec), "--id", exp_id])
    assert result.exit_code == 0, result.output


def client(config, token: str = "t0k3n-for-deletes"):
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    return TestClient(make_app(open_store(config.store_url), config, token=token), base_url="http://127.0.0.1")


AUTH = {"Authorization": "Bearer t0k3n-for-deletes"}


def test_recorded_folders_outside_the_experiments_root_are_left_in_place(home: Path, tiny_spec: Path,
                                                                            tmp_path: Path) -> None:
    run(tiny_spec, "keep-1")
    run(tiny_spec, "evil-1")
    config = make_settings()
    victim = tmp_path / "victim" / "evil-1"  # named after the experiment, as the old guard wanted
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("precious\n")
    store = open_store(config.store_url)
    with store.engine.begin() as conn:  # a store row (shared store, old kubebench) pointing elsewhere
        conn.execute(update(schema.runs).where(schema.runs.c.experiment_id == "evil-1")
                     .values(path=str(victim / "0123456789ab")))
    result = runner.invoke(app, ["delete", "evil-1", "--yes"])
    assert result.exit_code == 0, result.output
    assert f"left in place: {victim} (outside the experiments root" in result.output
    assert (victim / "precious.txt").read_text() == "precious\n"
    assert not (config.experiments_root / "evil-1").exists()
    assert (config.experiments_root / "keep-1").is_dir() and len(store.runs("keep-1")) == 2
    assert [e.id for e in store.experiments()] == ["keep-1"]


def test_an_experiment_folder_that_is_a_link_is_not_followed(home: Path, tiny_spec: Path, tmp_path: Path) -> None:
    run(tiny_spec, "linked-1")
    config = make_settings()
    folder = config.experiments_root / "linked-1"
    target = tmp_path / "elsewhere" / "linked-1"
    target.mkdir(parents=True)
    (target / "precious.txt").write_text("precious\n")
    for child in folder.iterdir():
        child.rename(target / child.name)
    folder.rmdir()
    folder.symlink_to(target)
    for how in ("cli", "web"):
        if how == "cli":
            result = runner.invoke(app, ["delete", "linked-1", "--yes"])
            assert result.exit_code == 0 and "left in place" in result.output, result.output
        else:
            run(tiny_spec, "linked-2")
            (config.experiments_root / "linked-2").rename(tmp_path / "elsewhere" / "linked-2")
            (config.experiments_root / "linked-2").symlink_to(tmp_path / "elsewhere" / "linked-2")
            with client(config) as web:
                assert web.delete("/api/experiments/linked-2", headers=AUTH).status_code == 204
            assert (tmp_path / "elsewhere" / "linked-2").is_dir()
    assert (target / "precious.txt").read_text() == "precious\n"


@pytest.mark.parametrize("bad", ["..", ".", "../../victim"])
def test_delete_of_a_bad_id_removes_nothing(home: Path, tiny_spec: Path, tmp_path: Path, bad: str) -> None:
    run(tiny_spec, "keepme")
    config = make_settings()
    result = runner.invoke(app, ["delete", bad, "--yes"])
    assert result.exit_code == 2 and "is not valid: an id is" in result.output, result.output
    from kubebench.web.app import make_app
    from web_support import serving

    with serving(make_app(open_store(config.store_url), config, token="t0k3n-for-deletes")) as url:
        status, body = raw(url, "DELETE", f"/api/experiments/{bad.replace('/', '%2F')}", "t0k3n-for-deletes")
        assert (status, b"is not valid: an id is" in body) in ((422, True), (404, False)), (status, body)
    assert (home / "kubebench.db").is_file() and (config.experiments_root / "keepme").is_dir()
    assert len(open_store(config.store_url).runs("keepme")) == 2


def test_delete_is_refused_while_a_runner_holds_the_lock(home: Path, tiny_spec: Path) -> None:
    run(tiny_spec, "held-1")
    config = make_settings()
    folder = config.experiments_root / "held-1"
    with ExperimentLock(folder, "held-1"):  # as a runner between two runs: the store says pending/succeeded
        result = runner.invoke(app, ["delete", "held-1", "--yes"])
        assert result.exit_code == 2, result.output
        assert "cannot delete: experiment 'held-1' is being run by another kubebench process" in result.output
        with client(config) as web:
            answer = web.delete("/api/experiments/held-1", headers=AUTH)
            assert answer.status_code == 409 and "being run by another" in answer.json()["detail"]
        assert folder.is_dir() and len(open_store(config.store_url).runs("held-1")) == 2
    assert runner.invoke(app, ["delete", "held-1", "--yes"]).exit_code == 0
    assert not folder.exists()


GAPPY = """\
name: gappy
job:
  command: [python, -c, "import time, kubebench; time.sleep(0.15); kubebench.report(v={{ n }})"]
parameters:
  n: [1, 2, 3, 4, 5, 6]
telemetry: {enabled: false}
metrics: [{name: v}]
"""


def test_delete_between_two_runs_of_a_live_runner_is_refused(home: Path, write) -> None:
    spec = write("gappy.yaml", GAPPY)
    config = make_settings()
    env = {**os.environ, "KUBEBENCH_HOME": str(home)}
    process = subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(spec), "--id", "gap-1"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    codes: dict[int, int] = {}
    try:
        with client(config) as web:
            store = web.app.state.store
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                done = _finished(store, "gap-1")
                if done >= 5:
                    break  # the last run is in flight: past it, the runner lets go of the lock
                status = web.delete("/api/experiments/gap-1", headers=AUTH).status_code
                codes[status] = codes.get(status, 0) + 1
                assert status in (404, 409), (status, codes)
                time.sleep(0.02)
        output, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, output
    assert codes.get(409, 0) > 10, codes  # the deletes did overlap the runner
    assert _finished(open_store(config.store_url), "gap-1") == 6


def _finished(store, exp_id: str) -> int:
    from kubebench.errors import NotFoundError

    try:
        return sum(1 for r in store.runs(exp_id) if r.status == "succeeded")
    except NotFoundError:
        return 0
