"""An experiment's sequential decisions (`run --decide-against`) in the dashboard: the API and its page."""

from __future__ import annotations

import time

import pytest
from browsing import DESKTOP, browsing_page
from web_support import WEB_TOKEN, serving

from kubebench.numerics.sequential import Design, decide
from kubebench.plan.adaptive import Against
from kubebench.runner import decision_record
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from kubebench.settings import settings as make_settings
    from kubebench.web.app import make_app

    home = tmp_path_factory.mktemp("decisions-web")
    url = f"sqlite:///{home / 'kubebench.db'}"
    store = open_store(url)
    base = [100.0, 100.5, 99.5]
    store_experiment(store, "base", "bench", {"ips": [base, base]}, params=[{"bs": 8}, {"bs": 16}])
    store_experiment(store, "cand", "bench", {"ips": [[90.0, 90.3, 89.8], [100.2, 99.9, 100.1]]},
                     params=[{"bs": 8}, {"bs": 16}], created_at=time.time() + 1)
    design = Design(3, 10)
    against = Against("experiment base", ("base",), "ips", "maximize", design)
    values = {8: [90.0, 90.3, 89.8], 16: [100.2, 99.9, 100.1]}
    store.record_decisions([decision_record("cand", r.trial_id, against, decide(base, values[r.params["bs"]], design,
                                                                                "maximize"))
                            for r in store.runs("cand") if r.repeat == 0])
    return make_app(store, make_settings(home=home, store=url, storage=str(home / "experiments")), token=WEB_TOKEN)


@pytest.fixture(scope="module")
def client(app):
    from fastapi.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def test_the_api_gives_each_trials_verdict_and_the_runs_it_took(client) -> None:
    view = client.get("/api/experiments/cand/decisions").json()
    assert (view["against"], view["metric"]) == ("experiment base", "ips")
    assert view["summary"] == "2 trials decided in 6 runs (a fixed design: 20): 1 regressed, 1 unchanged"
    by_bs = {d["params"]["bs"]: d for d in view["decisions"]}
    assert by_bs[8]["verdict"] == "regressed" and by_bs[8]["runs_text"] == "3 of ≤10 runs, sequential"
    assert by_bs[8]["change_text"] == "-10.0% (90% CI -10.8% … -9.1%)"
    assert by_bs[16]["verdict"] == "unchanged" and by_bs[16]["sequential"] is True
    assert client.get("/api/experiments/base/decisions").json()["decisions"] == []
    assert client.get("/api/experiments/nope/decisions").status_code == 404
    assert "/api/experiments/{experiment_id}/decisions" in client.get("/openapi.json").json()["paths"]


def test_the_experiment_page_has_a_place_for_them(client) -> None:
    page = client.get("/experiments/cand").text
    assert 'id="decisions-section"' in page and "(sequential)" in page


@pytest.mark.slow
def test_the_page_shows_the_decisions_in_chromium(browser, artifacts, app) -> None:
    with serving(app) as url, browsing_page(browser, artifacts, DESKTOP) as browsing:
        page = browsing.page
        page.goto(url + "/experiments/cand")
        page.wait_for_selector("#decisions-section:not([hidden]) #decisions-table tbody tr", state="attached")
        rows = page.locator("#decisions-table tbody tr")
        assert rows.count() == 2
        assert "3 of ≤10 runs, sequential" in rows.first.inner_text()
        assert page.locator("#decisions-table tr[data-verdict='regressed'] .badge.regressed").count() == 1
        assert "1 regressed, 1 unchanged" in page.locator("#decisions-summary").inner_text()
        browsing.shot("decisions")
        page.goto(url + "/compare?a=base&b=cand")
        page.wait_for_selector("#compare-result[data-ready='1']", state="attached")
        assert page.locator("#compare-sequential").is_visible()
        assert "regressed after 3 of ≤10 runs (sequential, against experiment base)" in \
            page.locator("#compare-decisions").inner_text()
        browsing.assert_clean()
