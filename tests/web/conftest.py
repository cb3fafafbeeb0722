"""Fixtures of the web tests: a home with real finished experiments, a test client and a live server.

``web_home`` is built once per session (it runs real processes): tests that change state (launch,
cancel, delete) use ``fresh_web`` (an empty home of their own) instead of touching the shared one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from web_support import FAILING_SPEC, WEB_TOKEN, LiveServer, WebHome, run_spec, serving, sweep_spec


@pytest.fixture(scope="session")
def web_home(tmp_path_factory: pytest.TempPathFactory) -> WebHome:
    """An isolated home with two finished runs of the same sweep (2 trials × 4 repeats) and one experiment with a failed run."""
    from kubebench.settings import settings as make_settings

    root = tmp_path_factory.mktemp("web")
    home = root / "home"
    config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}", storage=str(home / "experiments"))
    home.mkdir()
    ids = WebHome(home, config, "web-demo-base", "web-demo-cand", "web-broken-1")
    run_spec(sweep_spec(100), root, config, ids.baseline)
    time.sleep(0.01)  # distinct created_at: newest-first order is then well defined
    run_spec(sweep_spec(110), root, config, ids.candidate)
    time.sleep(0.01)
    run_spec(FAILING_SPEC, root, config, ids.failed)
    return ids


@pytest.fixture
def web_token() -> str:
    """The token of ``web_client`` and ``live_server``."""
    return WEB_TOKEN


@pytest.fixture
def web_client(web_home: WebHome, web_token: str):
    """A starlette TestClient of the dashboard over ``web_home`` (state changes need ``web_token``)."""
    from fastapi.testclient import TestClient

    from kubebench.web.app import make_app

    with TestClient(make_app(web_home.store(), web_home.settings, token=web_token), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def live_server(web_home: WebHome, web_token: str):
    """The dashboard over ``web_home`` served by uvicorn on 127.0.0.1 and a free port."""
    from kubebench.web.app import make_app

    app = make_app(web_home.store(), web_home.settings, token=web_token)
    with serving(app) as url:
        yield LiveServer(url, web_token, app)


@dataclass(frozen=True)
class FreshWeb:
    """A dashboard over an empty home of its own (for tests that launch, cancel or delete)."""

    client: object  # TestClient
    settings: object
    store: object
    token: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def launcher(self):
        return self.client.app.state.launcher


@pytest.fixture
def fresh_web(home: Path, web_token: str):
    """A TestClient of the dashboard over the test's own (empty) ``home``; its launches are stopped after."""
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings(home=home)
    store = open_store(config.store_url)
    app = make_app(store, config, token=web_token)
    app.state.events_interval = 0.2
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield FreshWeb(client, config, store, web_token)
