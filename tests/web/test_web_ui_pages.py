"""The dashboard's pages in headless Chromium, against the bugs of the 2026-11-30 review (§3, §5):
phone width, dark theme, n=1 error bars, Cancel only where it works, keyboard sorting, partial and
cancelled experiments, empty plots, the compare page's statistic and threshold, form errors,
accessible names and contrast. Every test also checks that no JS error was logged and no other
host was asked for; screenshots go to ``test-artifacts/web-ui-*.png``.
"""

from __future__ import annotations

import re

import httpx
import pytest
import ui_home
from browsing import DESKTOP, PHONE, browsing_page
from playwright.sync_api import expect
from web_support import WEB_TOKEN, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ui(web_home, tmp_path_factory):
    return ui_home.build(web_home, tmp_path_factory.mktemp("ui"))


@pytest.fixture(scope="module")
def ui_url(ui):
    from kubebench.web.app import make_app

    with serving(make_app(ui.store(), ui.settings, token=WEB_TOKEN)) as url:
        yield url


@pytest.fixture
def desktop(browser, artifacts):
    with browsing_page(browser, artifacts, DESKTOP) as state:
        yield state


def pages(ui) -> dict[str, tuple[str, str]]:
    """Every page of the dashboard (name → path, selector present once it is drawn)."""
    run_id = ui.store().runs(ui.baseline)[0].run_id
    experiment = "#experiment[data-ready='1'] #plots[data-rendered='1']"
    return {
        "list": ("/", "#experiments-table[data-ready='1']"),
        "launch": ("/launch", "#spec-gutter div"),
        "experiment": (f"/experiments/{ui.baseline}", experiment),
        "n1": (f"/experiments/{ui_home.N1}", experiment),
        "partial": (f"/experiments/{ui_home.PARTIAL}", experiment),
        "cancelled": (f"/experiments/{ui_home.CANCELLED}", experiment),
        "empty": (f"/experiments/{ui_home.ALL_FAILED}", experiment),
        "cli-running": (f"/experiments/{ui_home.CLI_RUNNING}", experiment),
        "run": (f"/runs/{run_id}", "#run[data-ready='1'] #telemetry[data-rendered='1']"),
        "compare": (f"/compare?a={ui.baseline}&b={ui.candidate}", "#ratio-chart[data-rendered='1']"),
    }


def visit(browsing, url: str, path: str, ready: str):
    browsing.page.goto(url + path)
    browsing.page.wait_for_selector(ready, state="attached")
    return browsing.page


def background(page, selector: str) -> tuple[int, ...]:
    colour = page.eval_on_selector(selector, "node => getComputedStyle(node).backgroundColor")
    return tuple(int(v) for v in re.findall(r"\d+", colour)[:3])


# the width does not depend on the colours (test_dark_theme_follows_the_system checks those): each size
# is seen in one scheme, and each scheme at one size
@pytest.mark.parametrize(("size", "scheme"), [("phone", "dark"), ("desktop", "light")])
def test_no_page_is_wider_than_the_screen(browser, artifacts, ui, ui_url, size, scheme) -> None:
    viewport = PHONE if size == "phone" else DESKTOP
    with browsing_page(browser, artifacts, viewport, scheme) as browsing:
        for name, (path, ready) in pages(ui).items():
            page = visit(browsing, ui_url, path, ready)
            width = page.evaluate("document.documentElement.scrollWidth")
            browsing.shot(f"ui-{size}-{scheme}-{name}")
            assert width <= viewport["width"], f"{name} is {width} px wide at {viewport['width']} px"
        browsing.assert_clean()
        assert not [w for w in browsing.warnings if "Invalid color" in w]  # Plotly's warning (review B20)


def test_dark_theme_follows_the_system(browser, artifacts, ui, ui_url) -> None:
    path, ready = pages(ui)["experiment"]
    looks = {}
    for scheme in ("light", "dark"):
        with browsing_page(browser, artifacts, DESKTOP, scheme) as browsing:
            page = visit(browsing, ui_url, path, ready)
            looks[scheme] = (background(page, "body"), background(page, ".table"),
                             background(page, "#plot-dist .main-svg"))
            browsing.assert_clean()
    light, dark = looks["light"], looks["dark"]
    assert all(sum(colour) > 600 for colour in light), light
    assert all(sum(colour) < 200 for colour in dark), dark  # page, tables and charts alike

    with browsing_page(browser, artifacts, DESKTOP, "light") as browsing:  # the system switches while open
        page = visit(browsing, ui_url, path, ready)
        page.emulate_media(color_scheme="dark")
        # an expectation, not wait_for_function: the page's CSP forbids the eval that one needs
        expect(page.locator("#plot-dist .main-svg").first).to_have_css(
            "background-color", f"rgb({', '.join(map(str, dark[2]))})")
        assert background(page, "body") == dark[0]
        browsing.assert_clean()


def test_trials_of_one_value_draw_no_error_bar(desktop, ui, ui_url) -> None:
    page = visit(desktop, ui_url, *pages(ui)["n1"])
    assert page.locator("#plot-param-size .scatterlayer .point").count() == 3
    assert page.locator("#plot-param-size path.yerror").count() == 0  # n=1: no CI, no bar (review B1)
    page = visit(desktop, ui_url, *pages(ui)["experiment"])
    assert page.locator("#plot-param-size path.yerror").count() == 2  # n=4: a CI bar per point
    desktop.assert_clean()


def test_cancel_is_offered_only_for_what_this_server_launched(desktop, ui, ui_url) -> None:
    page = visit(desktop, ui_url, *pages(ui)["list"])
    row = page.locator(f"#experiments-table tr[data-id='{ui_home.CLI_RUNNING}']")
    assert row.get_attribute("data-state") == "running"
    assert row.locator("button").count() == 0  # started by `kubebench run` elsewhere (review B9)
    page = visit(desktop, ui_url, *pages(ui)["cli-running"])
    assert page.get_attribute("#experiment", "data-state") == "running"
    assert page.is_hidden("#cancel-experiment")
    desktop.assert_clean()


def test_tables_sort_from_the_keyboard(desktop, ui, ui_url) -> None:
    page = visit(desktop, ui_url, *pages(ui)["experiment"])
    sizes = lambda: page.locator("#trials-table tbody tr td:nth-child(2)").all_text_contents()  # noqa: E731
    assert sizes() == ["1", "2"]
    page.focus("#metric-select")
    page.keyboard.press("Tab")  # the first column's header
    page.keyboard.press("Tab")  # "size"
    focused = page.evaluate("[document.activeElement.textContent, document.activeElement.closest('th') !== null,"
                            " getComputedStyle(document.activeElement).outlineStyle]")
    assert focused == ["size", True, "solid"]  # reached by Tab, with a visible focus ring
    header = page.locator("#trials-table thead th").nth(1)
    page.keyboard.press("Enter")
    assert header.get_attribute("aria-sort") == "ascending" and sizes() == ["1", "2"]
    page.keyboard.press("Space")
    assert header.get_attribute("aria-sort") == "descending" and sizes() == ["2", "1"]
    desktop.assert_clean()


def test_partial_and_cancelled_experiments_are_told_apart(desktop, ui, ui_url) -> None:
    page = visit(desktop, ui_url, *pages(ui)["list"])
    partial = page.locator(f"#experiments-table tr[data-id='{ui_home.PARTIAL}']")
    assert partial.locator(".badge").text_content() == "partial"
    assert partial.get_attribute("data-state") == "failed"  # still found by the "failed" filter
    assert "2 runs succeeded, 2 failed" in partial.locator(".badge").get_attribute("title")

    page = visit(desktop, ui_url, *pages(ui)["cancelled"])
    progress = page.locator("#exp-progress .progress-wrap")
    assert progress.get_attribute("data-done") == "2"  # cancelled runs are not "done" (review B17)
    assert page.text_content("#exp-progress .progress-label") == "2/12 done · 10 cancelled"
    head = page.locator("#trials-table thead th").all_text_contents()
    column = lambda name: [row.locator("td").nth(head.index(name)).text_content()  # noqa: E731
                           for row in page.locator("#trials-table tbody tr").all()]
    assert column("failed") == ["0", "0", "0"] and column("cancelled") == ["3", "3", "4"]
    desktop.assert_clean()


def test_plots_without_values_say_why_instead_of_drawing_empty_axes(desktop, ui, ui_url) -> None:
    page = visit(desktop, ui_url, *pages(ui)["empty"])
    for box in ("#plot-param-size", "#plot-dist"):
        assert page.get_attribute(box, "data-empty") == "1"
        assert "no run succeeded" in page.text_content(box)
    assert page.locator("#plots .js-plotly-plot").count() == 0  # review B16
    desktop.assert_clean()


def test_experiment_page_shows_the_description(desktop, ui, ui_url) -> None:
    page = visit(desktop, ui_url, *pages(ui)["n1"])
    assert page.text_content("#exp-description") == "One repeat per size: no CI to draw."
    assert page.is_hidden("#runner-log-section")  # run by the CLI: this server has no runner log
    desktop.assert_clean()


def test_compare_shows_the_statistic_and_threshold_of_its_ratio(desktop, ui, ui_url) -> None:
    api = httpx.get(f"{ui_url}/api/compare", params={"a": ui.baseline, "b": ui.candidate}).json()
    page = visit(desktop, ui_url, *pages(ui)["compare"])
    number = lambda cell: float(cell.split(" ")[0])  # noqa: E731
    for row, answer in zip(page.locator("#compare-table tbody tr").all(), api["rows"]):
        a, b = number(row.locator(".a-median").text_content()), number(row.locator(".b-median").text_content())
        ratio = number(row.locator("td").nth(3).text_content())  # after the verdict and the change (2026-12-02 #26)
        # the statistic of the ratio (review B8), in 3 significant digits as everywhere
        assert (a, b) == pytest.approx((answer["a"]["median"], answer["b"]["median"]), rel=5e-3)
        assert abs(b / a - ratio) / ratio < 1e-2  # so the row adds up
    percent = f"±{api['threshold'] * 100:g}%"
    assert percent in page.text_content("#compare-summary")
    shapes = page.evaluate("document.getElementById('ratio-chart').layout.shapes")
    band = next(s for s in shapes if s["type"] == "rect")
    assert (band["y0"], band["y1"]) == pytest.approx((1 - api["threshold"], 1 + api["threshold"]))
    assert page.get_attribute("#compare-threshold", "placeholder") == str(api["threshold"])

    page.goto(f"{ui_url}/compare?a={ui.baseline}&b={ui.candidate}&threshold=0.2")  # a threshold given
    page.wait_for_selector("#ratio-chart[data-rendered='1']")
    assert "±20%" in page.text_content("#compare-summary")
    desktop.assert_clean()
    assert not [w for w in desktop.warnings if "Invalid color" in w]  # review B20


def test_a_form_error_goes_once_its_field_is_edited(desktop, ui_url) -> None:
    page = desktop.page
    page.goto(f"{ui_url}/launch#form")
    page.click("#launch-form")
    error = page.locator(".field-error[data-field='name']")
    assert error.text_content() == "a name is required"
    assert page.get_attribute("#f-name", "aria-invalid") == "true"
    page.fill("#f-name", "named")  # review B18
    assert error.text_content() == "" and page.get_attribute("#f-name", "aria-invalid") is None
    assert page.locator(".field.invalid").count() == 0
    desktop.assert_clean()


CONTRAST = """() => {
  const rgb = (c) => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                       return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const states = ["succeeded", "failed", "timeout", "running", "pending", "partial", "interrupted", "cancelled",
                  "improved", "regressed", "unchanged", "inconclusive"];
  return states.map((state) => {
    const node = document.createElement("span"); node.className = `badge ${state}`; node.textContent = state;
    document.body.append(node);
    const style = getComputedStyle(node);
    const [a, b] = [lum(style.color), lum(style.backgroundColor)].sort((x, y) => y - x);
    node.remove();
    return [state, (a + 0.05) / (b + 0.05)];
  });
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_charts_are_named_and_badges_readable(browser, artifacts, ui, ui_url, scheme) -> None:
    with browsing_page(browser, artifacts, DESKTOP, scheme) as browsing:
        page = visit(browsing, ui_url, *pages(ui)["experiment"])
        charts = page.locator(".js-plotly-plot").all()
        assert charts
        for chart in charts:
            assert chart.get_attribute("role") == "figure"
            assert chart.get_attribute("aria-label").startswith("Chart: throughput")
            assert chart.locator(".modebar-btn").count() == 4  # four keyboard stops, not eight
        low = [(state, round(ratio, 2)) for state, ratio in page.evaluate(CONTRAST) if ratio < 4.5]
        assert not low, f"badges under WCAG AA contrast: {low}"  # review B19
        page.goto(f"{ui_url}/launch")
        assert page.get_by_label("Parameter file (YAML)").count() == 1
        page.focus("#spec-text")
        ring = page.eval_on_selector(".editor", "n => [getComputedStyle(n).outlineStyle, getComputedStyle(n).outlineWidth]")
        assert ring == ["solid", "2px"]
        browsing.assert_clean()


def test_list_api_says_what_can_be_cancelled_and_what_is_partial(ui, ui_url) -> None:
    items = {i["id"]: i for i in httpx.get(f"{ui_url}/api/experiments").json()["items"]}
    assert items[ui_home.CLI_RUNNING]["launched_here"] is False
    assert items[ui_home.PARTIAL]["partial"] is True and items[ui_home.PARTIAL]["state"] == "failed"
    assert items[ui_home.ALL_FAILED]["partial"] is False
    detail = httpx.get(f"{ui_url}/api/experiments/{ui_home.CANCELLED}").json()
    assert [(t["failed"], t["cancelled"], t["unfinished"]) for t in detail["trials"]] == [(0, 3, 0), (0, 3, 0), (0, 4, 0)]
    assert detail["description"] == ""
    n1 = httpx.get(f"{ui_url}/api/experiments/{ui_home.N1}").json()
    assert n1["description"] == "One repeat per size: no CI to draw."
