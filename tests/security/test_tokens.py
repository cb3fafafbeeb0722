"""Finding 14 (a non-Latin-1 token): ``serve --token 'pässwörd'`` started, and the token could then
never be presented (curl sends UTF-8, the server reads Latin-1: always 401). A token is now visible
ASCII or ``serve`` refuses it (exit 2), and every token it accepts opens the state changes, also
through the address it prints (``&``, ``+``, ``#`` quoted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies as st

from kubebench.cli.serve import dashboard_url
from kubebench.settings import settings as make_settings
from kubebench.store.store import open_store
from kubebench.web.app import make_app
from kubebench.web.auth import check_token

VISIBLE = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)


@pytest.fixture(scope="module")
def store_and_config(tmp_path_factory):
    home = tmp_path_factory.mktemp("tokens") / "home"
    config = make_settings(home=home, store=f"sqlite:///{home / 'kb.db'}")
    home.mkdir(parents=True)
    return open_store(config.store_url), config


@given(token=st.text(max_size=20))
def test_a_token_is_accepted_exactly_when_it_is_visible_ascii(token: str) -> None:
    visible = token != "" and all(0x21 <= ord(c) <= 0x7E for c in token)
    try:
        check_token(token)
        accepted = True
    except ValueError as e:
        accepted = False
        assert "visible ASCII" in str(e)
    assert accepted == visible


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=VISIBLE)
def test_every_accepted_token_opens_the_state_changes(store_and_config, token: str) -> None:
    store, config = store_and_config
    with TestClient(make_app(store, config, token=check_token(token)), base_url="http://127.0.0.1") as client:
        right = client.post("/api/experiments/nothing-here/cancel", headers={"Authorization": f"Bearer {token}"})
        wrong = client.post("/api/experiments/nothing-here/cancel", headers={"Authorization": f"Bearer {token}x"})
    assert (right.status_code, wrong.status_code) == (404, 401), right.text


@given(token=VISIBLE, port=st.integers(1, 65535), host=st.sampled_from(["127.0.0.1", "0.0.0.0", "::1", "dash.example"]))
def test_the_printed_address_carries_the_token_intact(token: str, port: int, host: str) -> None:
    url = urlsplit(dashboard_url(host, port, token))
    assert url.port == port and not url.fragment
    assert parse_qs(url.query, keep_blank_values=True) == {"token": [token]}  # as the page's URLSearchParams reads it


@pytest.mark.parametrize("how", ["option", "environment"])
@pytest.mark.parametrize("token", ["pässwörd", "two words", "tab\there", "€uro"])
def test_serve_refuses_a_token_no_client_can_send(tmp_path: Path, how: str, token: str) -> None:
    env = {**os.environ, "KUBEBENCH_HOME": str(tmp_path / "home")}
    args = [sys.executable, "-m", "kubebench", "serve", "--port", "1"]  # never reached: refused first
    if how == "option":
        args += ["--token", token]
    else:
        env["KUBEBENCH_TOKEN"] = token
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2 and "visible ASCII" in done.stderr, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr
