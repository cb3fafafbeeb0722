"""Findings 4 and 7: DNS rebinding let any web page read the whole read API (no Host check); pages
sent no CSP and no frame protection; /docs and /redoc ran third-party scripts on the token's origin
and were blank offline. Now only the hosts the server was started for are answered, every page
carries a CSP with frame-ancestors 'none', and the API docs come from an installed package."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings, strategies as st
from security_support import raw
from web_support import WEB_TOKEN, free_port, serving, tiny_run

from kubebench.settings import settings as make_settings
from kubebench.store.store import open_store
from kubebench.web.app import make_app

READ_ROUTES = ["/", "/launch", "/compare", "/api/experiments", "/api/config", "/metrics", "/docs", "/redoc",
               "/openapi.json", "/experiments/hosts-1", "/api/experiments/hosts-1"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("hosts")
    config, store = tiny_run(root, "hosts-1")
    with serving(make_app(store, config, token=WEB_TOKEN)) as url:
        yield url, store.runs("hosts-1")[0].run_id


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8766", "rebind.test", "localhost.evil",
                                  "127.0.0.1.nip.io", "xn--80ak6aa92e.com"])
def test_a_host_the_server_was_not_started_for_is_refused(served, host: str) -> None:
    url, run_id = served
    for route in [*READ_ROUTES, f"/api/runs/{run_id}/logs/worker-0", f"/api/runs/{run_id}/files/output/worker-0.log"]:
        status, body = raw(url, "GET", route, headers={"Host": host})
        assert status == 400 and b"KUBEBENCH_METRIC" not in body and b"hosts-1" not in body, (host, route, status)


@settings(max_examples=60, deadline=None)
@given(name=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){1,3}", fullmatch=True))
def test_any_other_dns_name_is_refused(name: str) -> None:
    from kubebench.web.headers import LOOPBACK_HOSTS

    app = make_app(open_store("sqlite://"), make_settings(home="/nonexistent-kb-home", store="sqlite://"))
    with TestClient(app, base_url=f"http://{name}") as client:
        assert client.get("/api/config").status_code == (200 if name in LOOPBACK_HOSTS else 400)


def test_loopback_names_are_answered(served) -> None:
    url, _ = served
    port = url.rsplit(":", 1)[1]
    for host in ("127.0.0.1", f"127.0.0.1:{port}", "localhost", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"):
        status, _ = raw(url, "GET", "/api/config", headers={"Host": host})
        assert status == 200, host


def test_every_answer_forbids_framing_and_pages_carry_a_csp(served) -> None:
    url, run_id = served
    for route in [*READ_ROUTES, f"/runs/{run_id}", f"/api/runs/{run_id}/files/output/worker-0.log", "/static/common.js"]:
        answer = httpx.get(url + route)
        assert answer.status_code == 200, route
        assert answer.headers["x-frame-options"] == "DENY" and answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"  # a ?token= address never leaves in a Referer
        policy = answer.headers["content-security-policy"]
        if answer.headers["content-type"].startswith("text/html"):
            assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy, route
            assert "unsafe-eval" not in policy and not re.search(r"script-src[^;]*'unsafe-inline'", policy)
            assert "http" not in policy  # no other host allowed to serve anything
        else:
            assert "sandbox" in policy or "default-src 'none'" in policy, (route, policy)


def test_a_rebinding_page_reads_nothing(served, playwright, chromium: str) -> None:
    """A page of ``rebind.test`` whose name now resolves to 127.0.0.1, as after DNS rebinding."""
    url, _ = served
    port = url.rsplit(":", 1)[1]
    browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=[
        "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP rebind.test 127.0.0.1"])
    try:
        page = browser.new_page()
        answer = page.goto(f"http://rebind.test:{port}/launch")
        assert answer.status == 400
        read = page.evaluate("""async () => {
            const list = await fetch('/api/experiments'); const one = await fetch('/api/experiments/hosts-1');
            return [list.status, one.status, await one.text()];
        }""")
    finally:
        browser.close()
    assert read[:2] == [400, 400] and "hosts-1" not in read[2]


@pytest.mark.parametrize("route, ready", [
    ("/docs", "() => document.querySelector('.swagger-ui .info .title')?.textContent.includes('kubebench')"),
    ("/redoc", "() => document.querySelector('.api-info h1, h1')?.textContent.includes('kubebench')"),
])
def test_the_api_docs_render_offline(served, browser, route: str, ready: str) -> None:
    url, _ = served
    context = browser.new_context()
    blocked, errors = [], []

    def only_loopback(request_route) -> None:
        if urlsplit(request_route.request.url).hostname in ("127.0.0.1", "localhost") \
                or request_route.request.url.startswith(("data:", "blob:")):
            request_route.continue_()
        else:
            blocked.append(request_route.request.url)
            request_route.abort()

    context.route("**/*", only_loopback)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    try:
        page.goto(url + route)
        page.wait_for_function(ready, timeout=30_000)
        page.wait_for_load_state("networkidle")
    finally:
        context.close()
    assert blocked == [], blocked
    assert [e for e in errors if "Content Security Policy" in e or "Refused" in e] == [], errors


def test_serve_answers_allowed_hosts_only(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "KUBEBENCH_HOME": str(tmp_path / "home")}
    env.pop("KUBEBENCH_STORE", None)
    process = subprocess.Popen([sys.executable, "-m", "kubebench", "serve", "--port", str(port), "--token", "t0k3n",
                                "--allowed-host", "dash.example", "--allowed-host", "Proxy.Example"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(url + "/api/config", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        statuses = {host: raw(url, "GET", "/api/config", headers={"Host": host})[0]
                    for host in ("dash.example", f"proxy.example:{port}", "127.0.0.1", "evil.example")}
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)
    assert statuses == {"dash.example": 200, f"proxy.example:{port}": 200, "127.0.0.1": 200, "evil.example": 400}


def test_listening_on_every_address_answers_this_machines_names() -> None:
    import socket

    from kubebench.web.headers import allowed_hosts

    wide = allowed_hosts("0.0.0.0", ["dash.example"])
    assert {"localhost", "127.0.0.1", "[::1]", "dash.example", socket.gethostname().lower()} <= set(wide)
    assert allowed_hosts("::1") == ["localhost", "127.0.0.1", "[::1]"]
    assert "192.0.2.7" in allowed_hosts("192.0.2.7") and "attacker.example" not in wide
