"""Where the time goes in the dashboard: a run's timeline and an experiment's phases, as JSON and as
pages drawn in headless Chromium (issue #31)."""

from __future__ import annotations

import pytest
from browsing import browsing_page

from kubebench.timeline import COLOURS


def test_a_runs_timeline_has_its_lanes_moments_and_phases(web_client, web_home) -> None:
    run = web_home.store().runs(web_home.baseline)[0]
    data = web_client.get(f"/api/runs/{run.run_id}/timeline").json()
    assert data["run_id"] == run.run_id and data["experiment_id"] == web_home.baseline
    names = {b["name"] for b in data["boundaries"]}
    assert {"submitted", "started", "exited", "collected"} <= names
    assert [lane["name"] for lane in data["lanes"]] == ["run", "worker-0"]
    worker = data["lanes"][1]["segments"]
    assert worker[0]["phase"] == "container_start_seconds" and worker[0]["start"] == 0.0
    assert all(s["end"] >= s["start"] for s in worker) and data["colours"] == COLOURS
    assert data["phases"]["end_to_end_seconds"] == pytest.approx(run.metrics["end_to_end_seconds"])
    assert web_client.get("/api/runs/0123456789ab/timeline").status_code == 404
    assert "/api/runs/{run_id}/timeline" in web_client.get("/openapi.json").json()["paths"]


def test_an_experiments_phases_are_each_trials_medians(web_client, web_home) -> None:
    data = web_client.get(f"/api/experiments/{web_home.baseline}/phases").json()
    assert [t["params"]["size"] for t in data["trials"]] == [1, 2]
    first = data["trials"][0]
    assert len(first["runs"]) == 4 and first["phases"]["end_to_end_seconds"]["n"] == 4
    assert first["phases"]["end_to_end_seconds"]["low"] is None  # 4 runs: too few for a 95% interval
    assert data["chain"][0] == "queue_seconds" and data["names"]["image_pull_seconds"] == "image pull"


def test_the_pages_say_what_they_draw(web_client, web_home) -> None:
    run = web_home.store().runs(web_home.baseline)[0]
    page = web_client.get(f"/runs/{run.run_id}/timeline")
    assert page.status_code == 200 and f'data-run-id="{run.run_id}"' in page.text
    assert web_client.get(f"/experiments/{web_home.baseline}/phases").status_code == 200
    assert web_client.get("/runs/0123456789ab/timeline").status_code == 404
    assert web_client.get("/experiments/no-such-1/phases").status_code == 404
    assert f'href="/runs/{run.run_id}/timeline"' in web_client.get(f"/runs/{run.run_id}").text


@pytest.mark.slow
def test_the_timeline_and_the_phases_are_drawn(browser, artifacts, live_server, web_home) -> None:
    run = web_home.store().runs(web_home.baseline)[0]
    with browsing_page(browser, artifacts) as state:
        page = state.page
        page.goto(f"{live_server.url}/runs/{run.run_id}/timeline")
        page.wait_for_selector("#timeline-plot[data-rendered='1']")
        assert page.locator("#timeline-plot .barlayer .trace").count() >= 3
        assert page.locator("#timeline-moments tbody tr").count() == 4  # submitted, started, exited, collected
        state.shot("run-timeline")
        page.goto(f"{live_server.url}/experiments/{web_home.baseline}/phases")
        page.wait_for_selector("#phases-plot[data-rendered='1']")
        assert page.locator("#phases-table tbody tr").count() == 2
        page.click(f"#phases-table a:text('{run.run_id}')")
        page.wait_for_selector("#timeline-plot[data-rendered='1']")
        state.shot("experiment-phases")
        state.assert_clean()
