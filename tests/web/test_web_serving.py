"""The dashboard's serving part: ``/api/experiments/{id}/serving`` (the report's serving plots as
Plotly figures, and the capacity answer of a search) and the experiment page drawing them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubebench.plan.plan import Plan, Trial, make_run
from kubebench.serving.search import Probe, walk
from kubebench.spec.model import CapacitySearch
from kubebench.store.records import ExperimentRecord, RunResult
from kubebench.store.store import open_store

SPEC = """name: web-serving
job: {kind: Serving, command: [x], server: {command: [y]}}
parameters: {batch: [4, 8]}
search: {parameter: rate, low: 1, high: 16, min: 1, max: 1, slo: {ttft_p99: 1s}}
metrics: [{name: ttft_p99, goal: minimize}, {name: output_tokens_per_s}]
"""
SEARCH = CapacitySearch(parameter="rate", low=1, high=16, min=1, max=1, slo={"ttft_p99": 1})


def make_store(folder: Path):
    """A store holding the finished capacity search of a server saturating past 4 (batch 4) or 8 requests/s."""
    store = open_store(f"sqlite:///{folder / 'kubebench.db'}")
    now = time.time()
    record = ExperimentRecord(id="web-serving-1", name="web-serving", backend="local", source="s.yaml",
                              spec_text=SPEC, job_fingerprint="f", created_at=now, updated_at=now)
    results, trials, runs = [], [], []
    for batch in (4, 8):
        probes: dict[float, Probe] = {}
        while (x := walk(SEARCH, probes)[0]) is not None:
            ttft = 0.2 if x <= batch else 3.0
            probes[x] = Probe(x, {"ttft_p99": [ttft]}, 1)
            trial = Trial(f"t{batch}-{len(probes)}", len(trials), {"batch": batch, "rate": x})
            trials.append(trial)
            runs.append(make_run(trial, 0))
            metrics = {"ttft_p50": ttft / 2, "ttft_p99": ttft, "tpot_p99": 0.05, "goodput": min(x, batch),
                       "request_throughput": min(x, batch), "output_tokens_per_s": 30 * min(x, batch),
                       "output_tokens_per_s_per_user": 100 / x}
            results.append(RunResult(run_id=runs[-1].id, status="succeeded", metrics=metrics, finished_at=now))
    store.begin_experiment(record, Plan(record.id, "f", tuple(trials), tuple(runs)))
    for run in runs:
        store.start_run(run.id, "")
    store.finish_runs(results)
    return store


@pytest.fixture
def app(tmp_path: Path):
    from kubebench.settings import settings
    from kubebench.web.app import make_app

    return make_app(make_store(tmp_path), settings(home=tmp_path), token="t" * 32)


def test_the_api_gives_the_figures_and_the_capacity(app) -> None:
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as client:
        view = client.get("/api/experiments/web-serving-1/serving").json()
    assert view["question"] == "highest rate with ttft_p99 ≤ 1"
    by_setting = {row["setting"]: row for row in view["capacity"]}
    assert by_setting["batch=4"]["status"] == "found" and by_setting["batch=4"]["meets"] <= 4 < by_setting["batch=4"]["fails"]
    assert by_setting["batch=8"]["meets"] <= 8 < by_setting["batch=8"]["fails"]
    titles = [f["layout"]["title"]["text"] for f in view["figures"]]
    assert titles == ["latency vs rate", "goodput vs rate", "throughput vs interactivity"]


def test_other_experiments_have_no_serving_part(app, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/api/experiments/no-such-thing/serving").status_code == 404


def test_the_experiment_page_draws_the_serving_plots(app, browser) -> None:
    from web_support import serving

    with serving(app) as url:
        page = browser.new_page()
        page.goto(f"{url}/experiments/web-serving-1")
        page.wait_for_selector("#serving-plots[data-rendered='1']", timeout=60_000)
        assert page.locator("#serving-plots .plot[data-rendered='1']").count() == 3
        assert page.locator("#capacity-table tbody tr").count() == 2
        assert "highest rate" in page.locator("#serving-question").inner_text()
        page.close()
