"""The history page, the list's sparklines and the runs table: API answers and the pages in Chromium."""

from __future__ import annotations

import numpy as np
import pytest
from browsing import DESKTOP, browsing_page
from web_support import WEB_TOKEN, serving

from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A store with series `bench` (24 experiments, 2 trials, a −4% step of bs=8 at e12) and `other`."""
    from kubebench.settings import settings as make_settings

    home = tmp_path_factory.mktemp("history-web")
    url = f"sqlite:///{home / 'kubebench.db'}"
    store = open_store(url)
    rng = np.random.default_rng(2)
    for i in range(24):
        level = 960.0 if i >= 12 else 1000.0
        store_experiment(store, f"e{i:02d}", "bench",
                         {"ips": [(level * (1 + 0.02 * rng.standard_normal(5))).tolist(),
                                  (2000 * (1 + 0.02 * rng.standard_normal(5))).tolist()]},
                         params=[{"bs": 8}, {"bs": 16}], created_at=1_700_000_000.0 + 3600 * i,
                         labels={"version": f"1.{i}"},
                         provenance={"gpu": {"name": "H100" if i < 20 else "A100"}})
    store_experiment(store, "o1", "other", {"loss": [[0.5, 0.6]]}, goals={"loss": "minimize"},
                     created_at=1_700_000_000.0 - 10)
    return store, make_settings(home=home, store=url, storage=str(home / "experiments"))


@pytest.fixture(scope="module")
def client(seeded):
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    with TestClient(make_app(seeded[0], seeded[1], token=WEB_TOKEN), base_url="http://127.0.0.1") as c:
        yield c


def test_history_api_answers_what_the_cli_finds(client) -> None:
    answer = client.get("/api/history/bench").json()
    assert (answer["series"], answer["metric"], answer["metrics"]) == ("bench", "ips", ["ips"])
    by_bs = {t["params"]["bs"]: t for t in answer["trials"]}
    [change] = by_bs[8]["changes"]
    assert change["experiment"] in ("e11", "e12", "e13") and change["verdict"] == "regressed"
    assert change["between"].startswith("version 1.")
    # nothing detected for bs=16 (the module's accept test may have marked an accepted step, shown as such)
    assert [c for c in by_bs[16]["changes"] if not c["accepted"]] == []
    assert by_bs[16]["n_points"] == 24 and "points" not in by_bs[16]
    full = client.get("/api/history/bench?points=true").json()["trials"][0]
    assert len(full["points"]) == 24 and full["points"][0]["experiment"] == "e00"
    assert {t["type"] for t in answer["figure"]["data"]} == {"scatter"} and answer["figure"]["layout"]["shapes"]
    assert client.get("/api/history/e05").json()["series"] == "bench"  # an experiment names its series
    assert client.get("/api/history/nope").status_code == 404
    assert client.get("/api/history/bench?trial=bs").status_code == 422


def test_history_cache_follows_the_series(client, seeded) -> None:
    from kubebench.store.series import accept_change

    before = client.get("/api/history/bench?trial=bs=8").json()["trials"][0]["changes"][0]
    accept_change(seeded[0], "bench", before["experiment"], note="bigger model")
    after = client.get("/api/history/bench?trial=bs=8").json()["trials"][0]["changes"][0]
    assert (after["accepted"], after["note"]) == (True, "bigger model")


def test_sparklines_give_each_experiment_its_trials_recent_medians(client) -> None:
    found = client.get("/api/sparklines?ids=e23,e03,o1,missing&points=5").json()
    assert set(found) == {"e23", "e03", "o1"}
    assert found["e23"]["experiments"] == ["e19", "e20", "e21", "e22", "e23"] and found["e23"]["metric"] == "ips"
    assert found["e23"]["value"] == found["e23"]["history"][-1] and 900 < found["e23"]["value"] < 1000
    assert found["e03"]["experiments"] == ["e00", "e01", "e02", "e03"]


def test_runs_table_filters_with_the_query_language(client) -> None:
    answer = client.get("/api/table", params={"q": 'params.bs >= 16 and labels.version = "1.3"', "benchmark": "*"}).json()
    assert [(r["experiment"]["id"], r["params"]) for r in answer["rows"]] == [("e03", {"bs": 16})]
    assert answer["goals"] == {"ips": "maximize", "loss": "minimize"} and answer["total"] == 49
    gpu = client.get("/api/table", params={"q": "env.gpu.name = A100 and params.bs = 8"}).json()["rows"]  # bench
    assert sorted(r["experiment"]["id"] for r in gpu) == ["e20", "e21", "e22", "e23"]
    bad = client.get("/api/table", params={"q": "params.bs >="})
    assert bad.status_code == 422 and "expected a value after '>='" in bad.json()["detail"]


def test_notes_and_tags_need_the_token(client) -> None:
    body = {"note": "warm cache", "tags": ["nightly", "gpu"]}
    assert client.put("/api/experiments/e01/notes", json=body).status_code == 401
    saved = client.put("/api/experiments/e01/notes", json=body, headers={"Authorization": f"Bearer {WEB_TOKEN}"})
    assert saved.json() == {"note": "warm cache", "tags": ["gpu", "nightly"]}
    rows = client.get("/api/table", params={"q": "tags.any = nightly", "benchmark": "*"}).json()["rows"]
    assert {r["experiment"]["id"] for r in rows} == {"e01"} and rows[0]["note"] == "warm cache"
    assert client.put("/api/experiments/nope/notes", json=body,
                      headers={"Authorization": f"Bearer {WEB_TOKEN}"}).status_code == 404


@pytest.mark.slow
def test_pages_in_chromium(browser, artifacts, seeded) -> None:
    from kubebench.web.app import make_app

    with serving(make_app(seeded[0], seeded[1], token=WEB_TOKEN)) as url, \
            browsing_page(browser, artifacts, DESKTOP) as browsing:
        page = browsing.page
        page.goto(url + "/history/bench")
        page.wait_for_selector("#history-chart[data-rendered='1']", state="attached")
        assert page.locator("#changes-table tbody tr").count() >= 1
        assert "version 1." in page.locator("#changes-table tbody").inner_text()
        assert page.locator("#history-chart svg line.change").count() >= 1  # the change is marked
        assert page.locator("#history-chart svg text.change-note").count() >= 1  # with its size written
        assert page.locator("#history-chart svg polyline.line").count() >= 1
        assert page.locator("#history-chart svg polygon.band").count() >= 1  # the CI band
        browsing.shot("history")
        # a trial hidden from the legend and shown again
        key = page.locator("#history-chart .history-key").first
        lines = page.locator("#history-chart svg polyline.line").count()
        key.click()
        assert page.locator("#history-chart svg polyline.line").count() == lines - 1
        key.click()
        assert page.locator("#history-chart svg polyline.line").count() == lines
        # hover a point → its experiment named; click it → its experiment
        box = page.locator("#history-chart circle[data-id='e07']").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        assert "e07" in page.locator("#history-chart .history-tip").inner_text()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_url("**/experiments/e07")
        assert page.locator("#history-link").get_attribute("href") == "/history/e07"
        page.goto(url + "/")
        page.wait_for_selector("#experiments-table tbody[data-trends='1']", state="attached")
        cell = page.locator("td[data-trend='e23']")
        assert cell.locator("svg.sparkline polyline").count() == 1
        assert cell.locator("a").get_attribute("href") == "/history/bench"
        browsing.shot("list-sparklines")
        page.goto(url + "/table?q=params.bs%20%3D%208&best=ips")
        page.wait_for_selector("#runs-table[data-ready='1']", state="attached")
        page.wait_for_selector("#parcoords[data-rendered='1']", state="attached")
        assert page.locator("#runs-table tbody tr").count() == 24
        assert page.locator("#runs-table tbody tr.best").count() == 1
        # parallel coordinates in SVG (Plotly's WebGL parcoords cannot start under the pages' CSP): a line per row
        assert page.locator("#parcoords svg.parcoords polyline").count() == 24
        assert page.locator("#parcoords svg.parcoords text", has_text="ips").count() == 1
        browsing.shot("runs-table")
        page.locator("#runs-table tbody tr input[type=checkbox]").nth(0).check()
        page.locator("#runs-table tbody tr input[type=checkbox]").nth(1).check()
        page.locator("#compare-selected").click()
        page.wait_for_url("**/compare?a=*&b=*")
        browsing.assert_clean()
