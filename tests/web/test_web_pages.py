"""The dashboard's HTML pages as HTTP resources: shells, ids, escaping, 404s, static files, Plotly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubebench.web import pages

STATIC = Path(pages.__file__).parent / "static"
TEMPLATES = Path(pages.__file__).parent / "templates"


def assets(html: str) -> list[str]:
    """Local scripts and stylesheets a page loads."""
    return re.findall(r'(?:src|href)="(/static/[^"]+)"', html)


@pytest.mark.parametrize("path, script", [
    ("/", "experiments.js"), ("/launch", "launch.js"), ("/compare", "compare.js"),
])
def test_top_level_pages_are_shells_with_nav_and_their_module(web_client, path, script):
    answer = web_client.get(path)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    html = answer.text
    for link in ('href="/"', 'href="/launch"', 'href="/compare"'):
        assert link in html
    assert f'<script type="module" src="/static/{script}"></script>' in html
    assert 'id="token-input"' in html  # the token prompt exists on every page


def test_experiment_page_carries_the_id_and_name(web_client, web_home):
    answer = web_client.get(f"/experiments/{web_home.baseline}")
    assert answer.status_code == 200
    assert f'data-experiment-id="{web_home.baseline}"' in answer.text
    assert 'data-experiment-name="web-demo"' in answer.text
    assert "<title>web-demo · kubebench</title>" in answer.text


def test_run_page_carries_the_run_and_its_experiment(web_client, web_home):
    run = web_home.store().runs(web_home.failed)[0]
    answer = web_client.get(f"/runs/{run.run_id}")
    assert answer.status_code == 200
    assert f'data-run-id="{run.run_id}"' in answer.text
    assert f'data-experiment-id="{web_home.failed}"' in answer.text
    assert f'href="/experiments/{web_home.failed}"' in answer.text


@pytest.mark.parametrize("path", ["/experiments/no-such-exp", "/runs/no-such-run"])
def test_unknown_ids_answer_404_pages(web_client, path):
    answer = web_client.get(path)
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert "no-such-" in answer.text


def test_text_from_the_url_is_escaped(web_client):
    answer = web_client.get("/experiments/%3Cscript%3Ealert(1)")
    assert answer.status_code == 404
    assert "<script>alert(1)" not in answer.text
    assert "&lt;script&gt;alert(1)" in answer.text
    page = web_client.get("/compare", params={"a": '"><img src=x onerror=alert(1)>', "b": "x"}).text
    assert "<img src=x" not in page
    assert 'data-a="&#34;&gt;&lt;img src=x onerror=alert(1)&gt;"' in page


def test_every_asset_of_every_page_is_served(web_client, web_home):
    seen = set()
    for path in ("/", "/launch", "/compare", f"/experiments/{web_home.baseline}"):
        seen.update(assets(web_client.get(path).text))
    assert {"/static/style.css", "/static/experiments.js", "/static/experiment.js"} <= seen
    for asset in seen:
        answer = web_client.get(asset)
        assert answer.status_code == 200, asset
        assert answer.content


def test_js_modules_import_only_existing_local_modules():
    for module in STATIC.glob("*.js"):
        for target in re.findall(r'from "([^"]+)"', module.read_text(encoding="utf-8")):
            assert target.startswith("./"), (module.name, target)
            assert (STATIC / target[2:]).is_file(), (module.name, target)


def test_nothing_is_loaded_from_another_host():
    """The dashboard works offline: no CDN, no external fonts or scripts."""
    for file in [*STATIC.iterdir(), *TEMPLATES.iterdir()]:
        if file.suffix in {".js", ".css", ".html"}:
            text = file.read_text(encoding="utf-8").replace('"http://www.w3.org/2000/svg"', "")  # a name, not a load
            assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), file.name


def test_plotly_is_served_from_the_installed_package_with_a_long_cache(web_client):
    import plotly

    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    page = web_client.get("/").text
    tag = re.search(r'data-plotly="/static/plotly.min.js\?v=([0-9a-f]+-[0-9a-f]+)"', page).group(1)
    assert tag == f"{shipped.stat().st_size:x}-{shipped.stat().st_mtime_ns // 10**9:x}"
    answer = web_client.get(f"/static/plotly.min.js?v={tag}")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/javascript")
    assert "max-age=31536000" in answer.headers["cache-control"]
    assert answer.content == shipped.read_bytes()


def test_read_only_server_says_so_in_the_page(web_home):
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    with TestClient(make_app(web_home.store(), web_home.settings, read_only=True), base_url="http://127.0.0.1") as client:
        page = client.get("/").text
    assert 'data-read-only="1"' in page
    assert 'class="mode"' in page and ">read-only</span>" in page


def test_writable_server_pages_have_no_read_only_mark(web_client):
    page = web_client.get("/").text
    assert "data-read-only" not in page and 'class="mode"' not in page


def test_a_just_launched_experiment_has_its_page_at_once(fresh_web):
    spec = ("name: quick\njob:\n  command: [python, -c, \"import kubebench; kubebench.report(v={{ n }})\"]\n"
            "parameters:\n  n: [1]\nmetrics: [{name: v}]\n")
    launched = fresh_web.client.post("/api/experiments", json={"spec": spec}, headers=fresh_web.auth)
    assert launched.status_code == 201, launched.text
    exp_id = launched.json()["id"]
    # the launcher stores the experiment before its runner starts: its page and API answer at once
    page = fresh_web.client.get(launched.json()["url"])
    assert page.status_code == 200
    detail = fresh_web.client.get(f"/api/experiments/{exp_id}").json()
    assert detail["name"] == "quick" and detail["runs"] and detail["runs"][0]["params"] == {"n": 1}
    assert f'data-experiment-id="{exp_id}"' in page.text and 'data-experiment-name="quick"' in page.text
    assert fresh_web.launcher.wait(exp_id, timeout=60)
    page = fresh_web.client.get(f"/experiments/{exp_id}")
    assert page.status_code == 200
