"""The dashboard's serving part: ``/api/experiments/{id}/serving`` (the report's serving plots as
Plotly figures, and the capacity answer of a search) and the experiment page drawing them."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.ux_home import capacity_store as make_store


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
