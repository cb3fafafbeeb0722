"""N17 (review of 2026-12-02): ``kubebench outputs RUN FILE`` follows no link a workload left in its
run folder, as the dashboard and the runner already refuse: no file printed, no folder listed through a
link that leads out. Links that stay in the run still work; the run's folder itself being a link, or a
row naming a folder that is no run folder (N1's ``/etc``), is refused too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.settings import settings as make_settings
from kubebench.store import schema
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

runner = CliRunner(env={"COLUMNS": "200"})
SECRET = "root:secret-hash:0:0:root:/root:/bin/bash\n"


@pytest.fixture
def linked_run(home: Path, tmp_path: Path):
    """A run whose workload left links in output/: to a file and a folder outside, and to its own log."""
    config = make_settings()
    store = open_store(config.store_url)
    store_experiment(store, "links-1", "links", {"x": [[1.0]]})
    run_id = store.runs("links-1")[0].run_id
    folder = config.experiments_root / "links-1" / run_id
    (folder / "output").mkdir(parents=True)
    (folder / "output" / "worker-0.log").write_text("KUBEBENCH_METRIC x=1\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "passwd").write_text(SECRET)
    os.symlink(victim / "passwd", folder / "output" / "pw.txt")
    os.symlink(victim, folder / "output" / "race_link")
    os.symlink("worker-0.log", folder / "output" / "alias.log")
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(path=str(folder)))
    return store, run_id, folder, victim


def outputs(*args: str):
    return runner.invoke(app, ["outputs", *args])


@pytest.mark.parametrize("path", ["output/pw.txt", "output/race_link/passwd", "output/race_link"])
def test_a_link_out_of_the_run_is_not_followed(linked_run, path: str) -> None:
    _, run_id, _, _ = linked_run
    result = outputs(run_id, path)
    assert result.exit_code == 2, result.output
    assert "resolves outside the run's folder" in result.output
    assert "secret-hash" not in result.output and "Traceback" not in result.output


def test_listings_do_not_descend_through_links(linked_run) -> None:
    _, run_id, _, _ = linked_run
    result = outputs(run_id)
    assert result.exit_code == 0, result.output
    assert [line.split()[-1] for line in result.output.splitlines()] == ["output/alias.log", "output/worker-0.log"]
    assert outputs(run_id, "output/alias.log").output == "KUBEBENCH_METRIC x=1\n"  # a link in the run is fine


def test_a_run_folder_that_is_a_link_or_no_run_folder_is_refused(linked_run) -> None:
    store, run_id, folder, victim = linked_run
    os.rename(folder, folder.with_name("moved"))
    folder.symlink_to(victim)
    result = outputs(run_id, "passwd")
    assert result.exit_code == 2 and "is a link or not a folder: refused" in result.output, result.output
    with store.engine.begin() as conn:  # what a shared store's user can write
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(path=str(victim)))
    result = outputs(run_id, "passwd")
    assert result.exit_code == 2 and "not a folder kubebench made for it" in result.output, result.output
    assert "secret-hash" not in result.output
