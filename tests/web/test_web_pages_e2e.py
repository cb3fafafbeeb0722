"""The dashboard in headless Chromium (Playwright, Debian's ``chromium``) against a real uvicorn server.

Every request to another host than the loopback server is blocked and recorded; each test ends by
checking that none was attempted, that the page logged no JS error, and saves a full-page
screenshot of each page it visited under ``test-artifacts/web-*.png``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from browsing import browsing_page
from web_support import LiveServer, serving

pytestmark = pytest.mark.slow

VERDICTS = {"improved", "regressed", "unchanged", "inconclusive"}
LAUNCH_SPEC = """\
name: e2e-launch
job:
  command: [python, -c, "import sys, kubebench; print('workers', {{ workers }}, file=sys.stderr); kubebench.report(score={{ workers }} * 1.5)"]
parameters:
  workers: [1, 2]
repeats: 2
metrics:
  - {name: score, goal: maximize, primary: true}
"""
BAD_SPEC = """\
name: e2e-bad
job:
  command: [python, -c, "print(1)"]
repeats: many
"""


@pytest.fixture
def browsing(browser, artifacts):
    with browsing_page(browser, artifacts) as state:
        yield state


@pytest.fixture
def fresh_live(home: Path, web_token: str):
    """The dashboard over the test's own empty home, on a real server (launches land there)."""
    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings(home=home)
    app = make_app(open_store(config.store_url), config, token=web_token)
    with serving(app) as url:
        yield LiveServer(url, web_token, app)


def rows(page, selector: str) -> list:
    return page.locator(selector).all()


def test_experiments_list_filters_and_pages(browsing, live_server, web_home):
    page = browsing.page
    page.goto(f"{live_server.url}/?token={live_server.token}")
    page.wait_for_selector("#experiments-table[data-ready='1']")
    # the token is kept for state changes and taken out of the address bar
    assert "token=" not in page.url
    assert page.evaluate("localStorage.getItem('kubebench-token')") == live_server.token
    ids = [row.get_attribute("data-id") for row in rows(page, "#experiments-table tbody tr[data-id]")]
    assert ids[:3] == [web_home.failed, web_home.candidate, web_home.baseline]
    assert page.text_content("#page-range") == f"1–{len(ids)} of {len(ids)}"
    assert page.text_content("#counts [data-state='failed'] strong") == "1"
    browsing.shot("experiments")

    page.select_option("#filters select[name=state]", "failed")
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"state=failed"))
    page.wait_for_function("() => document.querySelectorAll('#experiments-table tbody tr[data-id]').length === 1")
    assert page.get_attribute("#experiments-table tbody tr[data-id]", "data-id") == web_home.failed
    # one run succeeded and one failed: filtered as failed, shown as partial
    assert page.get_attribute("#experiments-table tbody tr[data-id]", "data-state") == "failed"
    assert page.text_content("#experiments-table tbody tr[data-id] .badge") == "partial"

    page.goto(f"{live_server.url}/?q=web-demo&limit=1")  # search, one per page
    page.wait_for_selector("#experiments-table[data-ready='1']")
    assert page.text_content("#page-range") == "1–1 of 2"
    assert page.get_attribute("#experiments-table tbody tr[data-id]", "data-id") == web_home.candidate
    page.click("#next-page")
    page.wait_for_function("() => document.getElementById('page-range').textContent === '2–2 of 2'")
    assert page.get_attribute("#experiments-table tbody tr[data-id]", "data-id") == web_home.baseline
    assert "offset=1" in page.url and page.is_disabled("#next-page")
    browsing.assert_clean()


def test_launch_watch_plot_logs_and_files(browsing, fresh_live):
    page = browsing.page
    browsing.allowed_statuses = {401, 422}  # provoked below: no token yet, then a bad spec
    page.goto(f"{fresh_live.url}/launch")
    page.fill("#spec-text", BAD_SPEC)
    page.click("#launch-yaml")
    page.fill("#token-input", fresh_live.token)  # asked for on the first 401
    page.click("#token-form button[type=submit]")
    page.wait_for_selector("#spec-errors li")
    assert "line 4" in page.text_content("#spec-errors")
    assert page.locator("#spec-gutter .error-line").all_text_contents() == ["4"]
    browsing.shot("launch-errors")

    page.click("#tab-form")  # a form's errors appear beside their field
    page.fill("#f-name", "e2e-form")
    page.fill("#f-command", "python -c 'print(1)'")
    page.fill("#f-repeats", "0")
    page.click("#launch-form")
    page.wait_for_selector(".field.invalid .field-error[data-field='repeats']")
    assert "greater than or equal to 1" in page.text_content(".field-error[data-field='repeats']")
    assert page.locator(".field-error:not(:empty)").count() == 1
    page.click("#tab-yaml")

    page.fill("#spec-text", LAUNCH_SPEC)
    assert page.locator("#spec-gutter .error-line").count() == 0
    browsing.shot("launch")
    page.click("#launch-yaml")
    page.wait_for_url(re.compile(r"/experiments/e2e-launch-"))
    page.wait_for_selector("#experiment[data-live='1']")  # following the events while it runs
    page.wait_for_selector("#experiment[data-state='succeeded']", timeout=90_000)
    # the plots of the finished experiment (the progress event that says so comes before its last runs)
    page.wait_for_selector("#plots[data-rendered='1'][data-state='succeeded']")
    progress = page.locator("#exp-progress .progress-wrap")
    assert progress.get_attribute("data-done") == progress.get_attribute("data-total") == "4"
    assert page.locator("#trials-table tbody tr").count() == 2
    assert page.locator("#runs-table tbody tr[data-status='succeeded']").count() == 4
    means = page.locator("#trials-table tbody tr td:nth-child(5)").all_text_contents()
    assert [m.split(" ")[0] for m in means] == ["1.50", "3.00"]  # one formatter: 3 significant digits
    # the metric-vs-parameter plot and the distributions rendered as SVG traces with CI bars
    assert page.locator("#plot-param-workers.js-plotly-plot .scatterlayer .trace").count() == 1
    assert page.locator("#plot-param-workers .errorbar").count() == 2
    assert page.locator("#plot-dist.js-plotly-plot .boxlayer .trace").count() == 2
    assert page.locator("#plot-dist").bounding_box()["height"] >= 300  # the box holds its chart
    # a workers sweep also gets the scaling curve: measured and ideal
    assert page.locator("#plot-scaling.js-plotly-plot .scatterlayer .trace").count() == 2
    # launched here: the runner's own output is on the page
    assert page.is_visible("#runner-log-section")
    assert page.text_content("#runner-log").strip()
    browsing.shot("experiment")

    page.locator("#runs-table .run-link").first.click()
    page.wait_for_selector("#run[data-ready='1']")
    assert page.text_content("#run-state") == "succeeded"
    assert page.input_value("#log-select") == "worker-0"
    page.wait_for_function("() => document.getElementById('log-view').textContent.includes('KUBEBENCH_METRIC')")
    assert "workers 1" in page.text_content("#log-view")
    page.click("#files-table a.dir-link:text('config/')")
    page.click("#files-table a.file-link:text('params.yaml')")
    page.wait_for_selector("#file-view[data-path='config/params.yaml']")
    page.wait_for_function("() => document.getElementById('file-view').textContent.includes('workers: 1')")
    download = page.get_attribute("#file-download", "href")
    answer = page.request.get(fresh_live.url + download)
    assert answer.status == 200 and "workers: 1" in answer.text()
    browsing.shot("run")
    browsing.assert_clean()


def test_compare_two_experiments(browsing, live_server, web_home):
    page = browsing.page
    page.goto(f"{live_server.url}/experiments/{web_home.candidate}")
    page.wait_for_selector("#plots[data-rendered='1']")
    link = page.locator("#compare-link")
    page.wait_for_function("() => document.getElementById('compare-link').textContent.includes('Compare with')")
    assert link.get_attribute("href") == f"/compare?a={web_home.baseline}&b={web_home.candidate}"
    link.click()
    page.wait_for_selector("#compare-result[data-ready='1']")
    verdicts = page.locator("#compare-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.verdict)")
    assert len(verdicts) == 2 and set(verdicts) <= VERDICTS
    assert page.locator("#compare-table tbody .badge").all_text_contents() == verdicts
    page.wait_for_selector("#compare-chart[data-rendered='1']")
    assert page.locator("#compare-chart .barlayer .trace").count() == 2
    browsing.shot("compare")

    # another pair picked in the selects: the failed experiment shares no trial with the sweep
    page.select_option("#compare-b", web_home.failed)
    page.click("#compare-go")
    page.wait_for_function("() => !document.getElementById('compare-warnings').hidden")
    assert f"b={web_home.failed}" in page.url
    assert page.locator("#compare-table tbody tr.placeholder").count() == 1
    browsing.assert_clean()


def test_running_experiment_shows_progress_and_cancels(browsing, fresh_live):
    import httpx

    spec = LAUNCH_SPEC.replace("e2e-launch", "e2e-slow").replace(
        "kubebench.report(", "import time; time.sleep(60 if {{ workers }} == 2 else 0); kubebench.report(")
    answer = httpx.post(f"{fresh_live.url}/api/experiments", json={"spec": spec},
                        headers={"Authorization": f"Bearer {fresh_live.token}"}, timeout=30)
    assert answer.status_code == 201, answer.text
    exp_id = answer.json()["id"]
    for _ in range(300):  # its runner records it in the store a moment after the launch
        if httpx.get(f"{fresh_live.url}/api/experiments", params={"q": exp_id}).json()["total"]:
            break
        time.sleep(0.1)
    page = browsing.page
    page.on("dialog", lambda dialog: dialog.accept())  # "Cancel experiment …?"
    page.goto(f"{fresh_live.url}/?token={fresh_live.token}")
    row = page.locator(f"#experiments-table tr[data-id='{exp_id}']")
    # the list polls while an experiment runs: the row's progress moves on its own
    page.wait_for_function(f"() => document.querySelector(\"tr[data-id='{exp_id}'] .progress-wrap\")?.dataset.done >= '1'",
                           timeout=60_000)
    assert row.get_attribute("data-state") == "running"
    assert row.locator(".progress-wrap").get_attribute("data-total") == "4"
    browsing.shot("experiments-running")
    row.locator("button[data-cancel]").click()
    page.wait_for_selector(f"#experiments-table tr[data-id='{exp_id}'][data-state='cancelled']", timeout=60_000)
    assert page.locator("#counts [data-state='cancelled'] strong").text_content() == "1"
    page.goto(f"{fresh_live.url}/experiments/{exp_id}")
    page.wait_for_selector("#experiment[data-state='cancelled']")
    statuses = page.locator("#runs-table tbody tr").evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert len(statuses) == 4 and {"cancelled", "succeeded"} == set(statuses)  # the workers=2 runs never finish
    browsing.assert_clean()


def test_run_page_charts_telemetry_and_browses_output(browsing, live_server, web_home):
    run = web_home.store().runs(web_home.baseline)[0]
    series = web_home.store().telemetry(run.run_id)
    assert series  # the shared sweep samples telemetry every 50 ms
    page = browsing.page
    page.goto(f"{live_server.url}/runs/{run.run_id}")
    page.wait_for_selector("#telemetry[data-rendered='1']")
    assert page.locator("#telemetry .js-plotly-plot .scatterlayer .trace").count() == len(series)
    assert page.locator("#provenance tbody tr").count() >= 5
    assert page.text_content("#run-metrics") and "throughput" in page.text_content("#run-metrics")
    page.click("#files-table a.dir-link:text('output/')")
    page.click("#files-table a.file-link:text('samples.csv')")
    page.wait_for_function("() => document.getElementById('file-view').textContent.includes('step,loss')")
    assert "file=output%2Fsamples.csv" in page.url or "file=output/samples.csv" in page.url
    browsing.shot("run-telemetry")
    browsing.assert_clean()
