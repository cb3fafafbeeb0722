"""Finding 14 (a log named ``<svg …>.log``): every log the run's detail lists can be fetched by the
name it is listed under, whatever a workload names its files; a name the log route refuses is never
listed."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st
from web_support import WEB_TOKEN, tiny_run

from kubebench.web.app import make_app


@pytest.fixture(scope="module")
def run_output(tmp_path_factory):
    """A finished run's ``output/`` folder and a client of the dashboard serving it."""
    root = tmp_path_factory.mktemp("lognames")
    config, store = tiny_run(root, "lognames-1")
    run = store.runs("lognames-1")[0]
    with TestClient(make_app(store, config, token=WEB_TOKEN), base_url="http://127.0.0.1") as client:
        yield client, run.run_id, Path(run.path) / "output"


# What workloads name files: replica names, dots (``a..b``), markup, spaces, controls, non-ASCII.
STEMS = st.text(st.sampled_from(list("aZ09_-.<> \n\x1b%é")), min_size=1, max_size=10).filter(
    lambda s: s not in (".", ".."))


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(stems=st.lists(STEMS, min_size=1, max_size=4, unique=True), folder=st.booleans())
def test_every_listed_log_can_be_fetched(run_output, stems: list[str], folder: bool) -> None:
    client, run_id, output = run_output
    made = []
    for i, stem in enumerate(stems):
        path = output / f"{stem}.log"
        if path.exists():
            continue  # worker-0.log, the run's own
        if folder and i == 0:  # a folder named like a log is no log
            path.mkdir()
        else:
            path.write_text(f"log of {stem!r}\n")
        made.append(path)
    try:
        listed = client.get(f"/api/runs/{run_id}").json()["logs"]
        for name in listed:
            answer = client.get(f"/api/runs/{run_id}/logs/{quote(name, safe='')}")
            assert answer.status_code == 200, (name, answer.status_code, answer.text)
            assert answer.content == (output / f"{name}.log").read_bytes()
        assert "worker-0" in listed
    finally:
        for path in made:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
