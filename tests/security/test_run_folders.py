"""N1 (review of 2026-12-02): a store row's run path never decides what the dashboard reads. A run's
files are served from ``<experiments root or --storage>/<experiment id>/<run id>`` only; a row naming
``/etc``, another folder, another run's folder or another storage gets 403, and nothing of it is read."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import fsspec
import pytest
from sqlalchemy import update

from kubebench.settings import settings as make_settings
from kubebench.store import schema
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

SECRET = "root:secret-hash:20228:0:99999:7:::\n"


def dashboard(config):
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    return TestClient(make_app(open_store(config.store_url), config, token="n1-token"), base_url="http://127.0.0.1")


@pytest.fixture
def one_run(tmp_path: Path):
    """A home whose one run has its real folder (``output/worker-0.log``), and a victim folder beside it."""
    home = tmp_path / "home"
    home.mkdir()
    config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}")
    store = open_store(config.store_url)
    store_experiment(store, "exp-1", "n1", {"x": [[1.0]]})
    run_id = store.runs("exp-1")[0].run_id
    output = config.experiments_root / "exp-1" / run_id / "output"
    output.mkdir(parents=True)
    (output / "worker-0.log").write_text("the run's own log\n")
    victim = tmp_path / "victim"
    (victim / "output").mkdir(parents=True)
    for name in ("shadow", "output/worker-0.log"):
        (victim / name).write_text(SECRET)
    return config, store, run_id, victim


def recorded(store, run_id: str, path: str) -> None:
    """What anyone holding a shared store's credentials can do."""
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(path=path))


def reads(client, run_id: str) -> list[tuple[int, str]]:
    """What the file browser, the log route and the run page answer for the run (no token)."""
    answers = [client.get(f"/api/runs/{run_id}/files/{name}", params={"inline": 1})
               for name in ("shadow", "output/worker-0.log")]
    answers += [client.get(f"/api/runs/{run_id}/files", params={"path": p}) for p in ("", "output")]
    answers.append(client.get(f"/api/runs/{run_id}/logs/worker-0"))
    return [(a.status_code, a.text) for a in answers]


def test_the_runs_own_folder_is_served(one_run) -> None:
    config, store, run_id, _ = one_run
    recorded(store, run_id, str(config.experiments_root / "exp-1" / run_id))
    with dashboard(config) as client:
        assert client.get(f"/api/runs/{run_id}/logs/worker-0").text == "the run's own log\n"
        assert client.get(f"/api/runs/{run_id}").json()["logs"] == ["worker-0"]


@pytest.mark.parametrize("where", ["victim", "another run", "a parent", "dotted"])
def test_a_row_naming_another_folder_is_refused(one_run, caplog, where: str) -> None:
    config, store, run_id, victim = one_run
    other = config.experiments_root / "exp-2" / run_id  # another experiment's folder, the same run id
    (other / "output").mkdir(parents=True)
    (other / "output" / "worker-0.log").write_text(SECRET)
    path = {"victim": str(victim), "another run": str(other), "a parent": str(config.experiments_root / "exp-1"),
            "dotted": f"{config.experiments_root}/exp-1/{run_id}/../../../../{victim.parent.name}/victim"}[where]
    recorded(store, run_id, path)
    with dashboard(config) as client, caplog.at_level(logging.WARNING, "kubebench.web"):
        answers = reads(client, run_id)
        page = client.get(f"/api/runs/{run_id}").json()
    assert {status for status, _ in answers} == {403}, answers
    assert all("secret-hash" not in text for _, text in answers)
    assert "not <root>/<experiment id>/<run id>" in answers[0][1]
    assert (page["logs"], page["step_times"], page["path"]) == ([], False, path)
    assert f"run {run_id} of experiment 'exp-1': its row names the folder" in caplog.text


def test_a_run_folder_swapped_for_a_link_is_refused(one_run) -> None:
    config, store, run_id, victim = one_run
    folder = config.experiments_root / "exp-1" / run_id
    recorded(store, run_id, str(folder))
    os.rename(folder, folder.with_name("moved"))
    folder.symlink_to(victim)  # a workload writes beside its run folder and can do this
    with dashboard(config) as client:
        answers = reads(client, run_id)
    assert {status for status, _ in answers} == {403}, answers
    assert all("secret-hash" not in text for _, text in answers)


def test_remote_folders_only_under_the_storage_the_server_was_given(one_run) -> None:
    config, store, run_id, _ = one_run
    memory = fsspec.filesystem("memory")
    for base in ("memory://n1-elsewhere/exp-1", "memory://n1-kb/exp-1"):
        memory.pipe(f"{base}/{run_id}/output/worker-0.log", b"in " + base.encode() + b"\n")
    recorded(store, run_id, f"memory://n1-elsewhere/exp-1/{run_id}")
    with dashboard(config) as client:  # no storage given: only the experiments root
        assert {status for status, _ in reads(client, run_id)} == {403}
    stored = make_settings(home=config.home, store=config.store_url, storage="memory://n1-kb/")
    with dashboard(stored) as client:  # another storage than the row's
        assert {status for status, _ in reads(client, run_id)} == {403}
        recorded(store, run_id, f"memory://n1-kb/exp-1/{run_id}")
        assert client.get(f"/api/runs/{run_id}/logs/worker-0").text == "in memory://n1-kb/exp-1\n"
