"""Every security rule of the dashboard: loopback by default, tokens, read-only, body size, safe YAML,
sandboxed templates, and a file browser that never leaves the run's folder."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from web_support import TINY, WEB_TOKEN, free_port, serving, tiny_run

from kubebench.web.app import make_app


def state_changes(app) -> list[tuple[str, str]]:
    """Every state-changing operation of the API, as documented (method, path with ids filled in)."""
    found = []
    for path, operations in app.openapi()["paths"].items():
        for method in operations:
            if method.upper() not in ("GET", "HEAD", "OPTIONS"):
                found.append((method.upper(), path.replace("{experiment_id}", "web-demo-base").replace("{name}", "web-demo-base")))
    return found


def nothing_launched(home: Path) -> bool:
    """No launched experiment's folder (not even a staging one) was left under ``home``."""
    folder = home / "launched"
    return not folder.exists() or not any(folder.iterdir())


def send(client, method: str, path: str, **kwargs):
    body = {"spec": TINY} if method == "POST" and path == "/api/experiments" else None
    return client.request(method, path, json=body, **kwargs)


# -- tokens and read-only -------------------------------------------------------------------------

def test_the_api_has_the_state_changes_of_the_contract(web_client) -> None:
    assert set(state_changes(web_client.app)) == {
        ("POST", "/api/experiments"), ("POST", "/api/experiments/web-demo-base/cancel"),
        ("DELETE", "/api/experiments/web-demo-base"), ("PUT", "/api/experiments/web-demo-base/notes"),
        ("POST", "/api/history/web-demo-base/accept")}


@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {WEB_TOKEN}"},
    {"Authorization": "Bearer "}, {"X-Kubebench-Token": WEB_TOKEN[:-1]}, {"Authorization": f"Bearer {WEB_TOKEN}x"},
], ids=["none", "wrong", "not-bearer", "empty", "prefix", "longer"])
def test_every_state_change_without_a_valid_token_is_401_and_changes_nothing(web_client, web_home, headers) -> None:
    before = web_client.get("/api/experiments").json()
    for method, path in state_changes(web_client.app):
        answer = send(web_client, method, path, headers=headers)
        assert answer.status_code == 401, (method, path)
        assert "token" in answer.json()["detail"] and answer.headers["www-authenticate"] == "Bearer"
    assert web_client.get("/api/experiments").json() == before
    assert nothing_launched(web_home.home)
    assert web_client.app.state.launcher.active_ids() == []


def test_a_token_in_the_address_is_not_a_credential(web_client) -> None:
    answer = web_client.delete(f"/api/experiments/web-demo-base?token={WEB_TOKEN}")
    assert answer.status_code == 401


def test_both_token_headers_are_accepted(fresh_web) -> None:
    # fresh_web's home is empty: delete answers 404 past the token check
    for headers in ({"Authorization": f"Bearer {WEB_TOKEN}"}, {"authorization": f"bearer {WEB_TOKEN}"},
                    {"X-Kubebench-Token": WEB_TOKEN}):
        assert fresh_web.client.delete("/api/experiments/none", headers=headers).status_code == 404


def test_tokens_are_compared_in_constant_time(web_client, monkeypatch) -> None:
    import secrets

    from kubebench.web import auth

    calls, real = [], secrets.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.secrets, "compare_digest", spy)
    web_client.delete("/api/experiments/none", headers={"Authorization": "Bearer guess"})
    assert calls == [(b"guess", WEB_TOKEN.encode())]


def test_a_server_without_a_token_refuses_every_change(web_home) -> None:
    with TestClient(make_app(web_home.store(), web_home.settings, token=None), base_url="http://127.0.0.1") as client:
        for method, path in state_changes(client.app):
            assert send(client, method, path, headers={"Authorization": "Bearer "}).status_code == 401
            assert send(client, method, path, headers={"Authorization": "Bearer None"}).status_code == 401


def test_read_only_refuses_every_change_even_with_the_token_and_serves_reads(web_home) -> None:
    app = make_app(web_home.store(), web_home.settings, token=WEB_TOKEN, read_only=True)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/api/config").json()["read_only"] is True
        for method, path in state_changes(app):
            answer = send(client, method, path, headers={"Authorization": f"Bearer {WEB_TOKEN}"})
            assert answer.status_code == 403 and "read-only" in answer.json()["detail"], (method, path)
        assert client.get("/api/experiments").json()["total"] == 3
        assert client.get(f"/api/experiments/{web_home.baseline}").status_code == 200
        assert client.get("/").status_code == 200
    assert nothing_launched(web_home.home)


# -- request size, safe YAML, sandboxed templates ---------------------------------------------------

def test_a_body_over_256_kib_is_413_before_parsing(fresh_web) -> None:
    big = {"spec": "name: x\n# " + "x" * (256 * 1024) + "\n"}
    answer = fresh_web.client.post("/api/experiments", json=big, headers=fresh_web.auth)
    assert answer.status_code == 413 and "256 KiB" in answer.json()["detail"]
    unauthenticated = fresh_web.client.post("/api/experiments", json=big)
    assert unauthenticated.status_code == 413
    declared = fresh_web.client.post("/api/experiments", content=b"{}", headers={
        **fresh_web.auth, "Content-Length": str(10**9), "Content-Type": "application/json"})
    assert declared.status_code == 413
    assert fresh_web.launcher.active_ids() == [] and nothing_launched(fresh_web.settings.home)


def test_a_chunked_body_is_counted_as_it_arrives(web_home) -> None:
    app = make_app(web_home.store(), web_home.settings, token=WEB_TOKEN)
    sent = []

    def chunks():
        for _ in range(400):  # 400 KiB, no Content-Length
            sent.append(1)
            yield b"x" * 1024

    with serving(app) as url:
        answer = httpx.post(f"{url}/api/experiments", content=chunks(),
                            headers={"Authorization": f"Bearer {WEB_TOKEN}", "Content-Type": "application/json"})
        assert answer.status_code == 413
        small = httpx.post(f"{url}/api/experiments", content=iter([b'{"spec": ', b'"name: [x"}']),
                           headers={"Authorization": f"Bearer {WEB_TOKEN}", "Content-Type": "application/json"})
        assert small.status_code == 422  # under the limit: parsed (a YAML error, located)
        assert small.json()["errors"][0]["line"] == 1
    assert nothing_launched(web_home.home)


def test_yaml_is_loaded_safely(fresh_web, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    spec = f'!!python/object/apply:os.system ["touch {marker}"]\n'
    answer = fresh_web.client.post("/api/experiments", json={"spec": spec}, headers=fresh_web.auth)
    assert answer.status_code == 422 and not marker.exists()
    params = f'n: !!python/object/apply:os.system ["touch {marker}"]\n'
    answer = fresh_web.client.post("/api/experiments", json={"spec": TINY, "params": params}, headers=fresh_web.auth)
    assert answer.status_code == 422 and not marker.exists()
    assert answer.json()["errors"][0]["loc"].startswith("params")


@pytest.mark.parametrize("expression", [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ lipsum.__globals__['os'].system('touch MARKER') }}",
])
def test_templates_render_in_the_sandbox(fresh_web, tmp_path: Path, expression: str) -> None:
    marker = tmp_path / "pwned"
    expression = expression.replace("MARKER", str(marker))
    template = f"kind: Process\nspec:\n  command: [python, -c, \"print('{expression}')\"]\n"
    answer = fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={"form": {
        "name": "sandboxed", "template": template, "parameters": {"n": [1]}}})
    assert answer.status_code == 422, answer.text
    problem = answer.json()["errors"][0]
    assert problem["field"] == "template" and ("unsafe" in problem["message"] or "undefined" in problem["message"])
    shorthand = TINY.replace("v={{ n }}", f"v={expression}")
    answer = fresh_web.client.post("/api/experiments", json={"spec": shorthand}, headers=fresh_web.auth)
    assert answer.status_code == 422
    assert not marker.exists() and fresh_web.launcher.active_ids() == []


# -- the file browser ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browsed(tmp_path_factory):
    """A run folder with links planted in it, its sibling run, and a live server over them."""

    root = tmp_path_factory.mktemp("browse")
    config, store = tiny_run(root, "browse-1")
    run, sibling = store.runs("browse-1")
    output = Path(run.path) / "output"
    (output / "passwd").symlink_to("/etc/passwd")
    (output / "sibling.log").symlink_to(Path(sibling.path) / "output" / "worker-0.log")
    (output / "up").symlink_to(Path(run.path).parent)
    (output / "inside.log").symlink_to(output / "worker-0.log")
    (root / "outside.txt").write_text("secret outside the run\n")
    with serving(make_app(store, config, token=WEB_TOKEN)) as url:
        yield url, run.run_id, store


def raw_get(url: str, path: str) -> tuple[int, bytes]:
    """GET ``path`` exactly as written (an HTTP client would normalise ``..`` away)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=False, skip_accept_encoding=True)
        conn.endheaders()
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


ESCAPES = [
    "../run.json", "../../browse-1", "output/../../../kubebench.db", "%2e%2e/%2e%2e/kubebench.db",
    "%2e%2e%2f%2e%2e%2fkubebench.db", "..%2f..%2fkubebench.db", "%252e%252e%252fkubebench.db",
    "output%5c..%5c..%5crun.json", "output\\..\\run.json", "output/%00", "%2fetc%2fpasswd", "/etc/passwd",
    "//etc/passwd", "output/passwd", "output/sibling.log", "output/up/browse-1.yaml", "output/up",
    "%2E%2E/%2E%2E/outside.txt", ".%2e/.%2e/outside.txt",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_file_paths_out_of_the_run_are_refused(browsed, path: str) -> None:
    url, run_id, _ = browsed
    status, body = raw_get(url, f"/api/runs/{run_id}/files/{path}")
    assert status in (400, 403, 404), (path, status)
    assert b"root:" not in body and b"secret outside" not in body and b"KUBEBENCH_METRIC v=" not in body
    listing_status, listing = raw_get(url, f"/api/runs/{run_id}/files?path={path}")
    assert listing_status in (400, 403, 404), (path, listing_status)
    assert b'"entries"' not in listing


def test_refusals_say_why(browsed) -> None:
    url, run_id, _ = browsed
    cases = {"..%2f..%2fkubebench.db": (400, b"'..'"), "%252e%252e%252fx": (400, b"percent-encoded"),
             "output%5cx": (400, b"backslash"), "output/%00": (400, b"control character"),
             "output/passwd": (403, b"outside the run"), "output/sibling.log": (403, b"outside the run")}
    for path, (status, why) in cases.items():
        got, body = raw_get(url, f"/api/runs/{run_id}/files/{path}")
        assert (got, why in body) == (status, True), (path, body)


def test_links_inside_the_run_are_followed_and_links_out_are_hidden(browsed) -> None:
    url, run_id, store = browsed
    status, body = raw_get(url, f"/api/runs/{run_id}/files/output/inside.log")
    assert status == 200 and b"KUBEBENCH_METRIC v=" in body
    names = {e["name"] for e in httpx.get(f"{url}/api/runs/{run_id}/files?path=output").json()["entries"]}
    assert names == {"worker-0.log", "inside.log"}


def test_replica_names_cannot_walk_out(browsed) -> None:
    url, run_id, _ = browsed
    for replica in ("..%2f..%2frun", "%2e%2e", "../worker-0", "passwd", "sibling"):
        status, body = raw_get(url, f"/api/runs/{run_id}/logs/{replica}")
        assert status in (400, 403, 404), replica
        assert b"root:" not in body and b"KUBEBENCH_METRIC" not in body


# -- kubebench serve ----------------------------------------------------------------------------------

def start_serve(home: Path, *args: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    port = free_port()
    environment = {**os.environ, "KUBEBENCH_HOME": str(home), **(env or {})}
    environment.pop("KUBEBENCH_STORE", None)
    process = subprocess.Popen([sys.executable, "-m", "kubebench", "serve", "--port", str(port), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, text=True)
    return process, port


def wait_up(port: int, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("kubebench serve did not start")


def stop(process: subprocess.Popen) -> tuple[str, str]:
    process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()


def listening_addresses(port: int) -> set[str]:
    """Local addresses listening on ``port`` (Linux /proc/net/tcp, IPv4)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if state == "0A" and int(hex_port, 16) == port:
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


@pytest.mark.slow
def test_serve_binds_loopback_and_prints_a_generated_token(home: Path) -> None:
    process, port = start_serve(home)
    try:
        wait_up(port)
        if Path("/proc/net/tcp").exists():
            assert listening_addresses(port) == {"127.0.0.1"}
        config = httpx.get(f"http://127.0.0.1:{port}/api/config").json()
        assert config["read_only"] is False
    finally:
        out, err = stop(process)
    line = next(l for l in out.splitlines() if "http://" in l)
    assert f"http://127.0.0.1:{port}/?token=" in line
    token = line.split("?token=")[1].strip()
    assert len(token) >= 24 and "warning" not in err


@pytest.mark.slow
def test_serve_takes_the_token_from_the_environment_and_can_be_read_only(home: Path) -> None:
    process, port = start_serve(home, env={"KUBEBENCH_TOKEN": "from-env-123"})
    try:
        wait_up(port)
        ok = httpx.delete(f"http://127.0.0.1:{port}/api/experiments/none",
                          headers={"Authorization": "Bearer from-env-123"})
        assert ok.status_code == 404  # past the token check
    finally:
        out, _ = stop(process)
    assert "?token=from-env-123" in out
    process, port = start_serve(home, "--read-only", "--token", "t0k3n")
    try:
        wait_up(port)
        refused = httpx.delete(f"http://127.0.0.1:{port}/api/experiments/none", headers={"Authorization": "Bearer t0k3n"})
        assert refused.status_code == 403
        assert httpx.get(f"http://127.0.0.1:{port}/api/config").json()["read_only"] is True
    finally:
        out, err = stop(process)
    assert "read-only" in out and "token=" not in out


@pytest.mark.slow
def test_serve_warns_when_reachable_from_other_machines(home: Path) -> None:
    process, port = start_serve(home, "--host", "0.0.0.0")
    try:
        wait_up(port)
    finally:
        out, err = stop(process)
    assert "warning" in err and "0.0.0.0" in err and "--read-only" in err
    assert f"http://127.0.0.1:{port}/?token=" in out
    process, port = start_serve(home, "--host", "0.0.0.0", "--read-only")
    try:
        wait_up(port)
    finally:
        _, err = stop(process)
    assert "warning" not in err
