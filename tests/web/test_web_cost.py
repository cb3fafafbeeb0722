"""The experiment page shows what runs cost (issue #18): the API's median cost per run and per item, and
the trials table's cost columns in Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.costs import priced_experiment
from web_support import WEB_TOKEN, serving


def test_the_experiment_detail_carries_the_median_cost_and_the_cost_columns(fresh_web) -> None:
    priced_experiment(fresh_web.store, "priced-base")
    priced_experiment(fresh_web.store, "unpriced", priced=False)
    detail = fresh_web.client.get("/api/experiments/priced-base").json()
    # medians over the six runs: $0.01, 0.011, 0.012, 0.02, 0.022, 0.024; $0.1 and $0.05 per million tokens
    assert detail["cost"] == "$0.0160/run, $0.0750/M tokens"
    assert detail["cost_columns"] == [{"name": "cost_usd", "heading": "$/run"},
                                      {"name": "usd_per_million_tokens", "heading": "$/M tokens"}]
    medians = {t["params"]["batch"]: t["summary"]["cost_usd"]["median"] for t in detail["trials"]}
    assert medians == pytest.approx({8: 0.011, 16: 0.022})
    plain = fresh_web.client.get("/api/experiments/unpriced").json()
    assert plain["cost"] is None and plain["cost_columns"] == []


@pytest.mark.slow
def test_the_experiment_page_shows_the_cost_per_run_and_per_token(home: Path, browser, artifacts: Path) -> None:
    from browsing import browsing_page

    from kubebench.settings import settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = settings(home=home)
    store = open_store(config.store_url)
    priced_experiment(store, "priced-base")
    with serving(make_app(store, config, token=WEB_TOKEN)) as url, browsing_page(browser, artifacts) as browsing:
        page = browsing.page
        page.goto(f"{url}/experiments/priced-base")
        page.wait_for_selector("#experiment[data-ready='1'] #trials-table tr[data-trial]")
        assert page.locator("#exp-cost").inner_text() == "Cost (median of the runs): $0.0160/run, $0.0750/M tokens"
        heads = page.locator("#trials-table thead th").all_inner_texts()
        assert any("$/run" in h for h in heads) and any("$/M tokens" in h for h in heads)
        cells = [[c.strip() for c in page.locator(f"#trials-table tr[data-trial]:nth-child({i}) td[data-cost]")
                  .all_inner_texts()] for i in (1, 2)]
        assert cells == [["$0.0110", "$0.100"], ["$0.0220", "$0.0500"]]
        browsing.assert_clean()


def test_the_comparison_carries_both_costs_the_correction_and_each_verdict_s_reason(fresh_web) -> None:
    priced_experiment(fresh_web.store, "priced-base")
    priced_experiment(fresh_web.store, "priced-fast", speed=2.0)
    found = fresh_web.client.get("/api/compare", params={"a": "priced-base", "b": "priced-fast"}).json()
    assert found["cost"] == ("median cost per run: base $0.0160, candidate $0.00800 · "
                             "$/M tokens candidate/base: 0.500")
    assert found["correction"] == "the verdict's p adjusted over the 2 trials tested (Holm (family-wise error rate))"
    assert all(row["reason"] and row["adjusted_p"] is not None for row in found["rows"])
    priced_experiment(fresh_web.store, "unpriced", priced=False)
    assert fresh_web.client.get("/api/compare", params={"a": "priced-base", "b": "unpriced"}).json()["cost"] is None
