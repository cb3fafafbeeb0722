"""Findings 3 and 8: the store's password was printed by `kubebench run`, served unauthenticated
through a launched runner's log, and handed with the dashboard's token to every job. Now a store URL
is shown only through kubebench.redact.mask_url, and jobs start from kubebench.redact.job_environment."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
PASSWORD = "SuperSecretPw-4711"
TOKEN = "envtok-123-secret"

# A job that prints its whole environment into its log (and result.json's info).
PRINTENV = """\
name: printenv
job:
  command: [python, -c, "import os, json, kubebench; print(json.dumps(dict(os.environ))); kubebench.report(v=1)"]
telemetry: {enabled: false}
metrics: [{name: v}]
"""

USERS = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=12)
SECRETS = st.text(st.characters(codec="ascii", exclude_characters="@:/?#[]% \t\n\r\x0b\x0c", categories=["L", "N", "P", "S"]),
                  min_size=1, max_size=20)


@given(user=USERS, secret=SECRETS, port=st.integers(1, 65535))
def test_mask_url_hides_what_sqlalchemy_hides(user: str, secret: str, port: int) -> None:
    from kubebench.redact import mask_url

    url = f"postgresql+psycopg://{user}:PW{secret}@db.example:{port}/kb"
    masked = mask_url(url)
    assert f"PW{secret}" not in masked
    assert masked == make_url(url).render_as_string(hide_password=True)
    assert mask_url(f"error: cannot reach {url} (timeout)") == f"error: cannot reach {masked} (timeout)"
    assert PASSWORD not in mask_url(f"postgresql://{user}@h/kb?sslmode=require&password={PASSWORD}")


def test_job_environment_drops_the_token_the_store_and_what_carries_it() -> None:
    from kubebench.redact import job_environment, remember_store

    url = f"postgresql+psycopg://kb:{PASSWORD}@127.0.0.1:5432/kb"
    remember_store(url)
    given_env = {"PATH": "/bin", "KUBEBENCH_TOKEN": TOKEN, "KUBEBENCH_STORE": url, "DATABASE_URL": url,
                 "PGURL": f"postgresql://kb:{PASSWORD}@other/kb", "HTTP_PROXY": "http://me:proxy@proxy:3128",
                 "KUBEBENCH_STORAGE": "s3://bucket/kb", "HOME": "/root"}
    assert job_environment(given_env) == {"PATH": "/bin", "HTTP_PROXY": "http://me:proxy@proxy:3128", "HOME": "/root"}


def _leaks(text: str) -> list[str]:
    return [secret for secret in (PASSWORD, TOKEN) if secret in text]


def test_run_shows_no_password_and_its_jobs_get_neither_the_store_nor_the_token(
        home: Path, write, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = postgres_url.replace("kubebench@", f"kubebench:{PASSWORD}@")  # the test server trusts any password
    monkeypatch.setenv("KUBEBENCH_TOKEN", TOKEN)
    monkeypatch.setenv("DATABASE_URL", url)
    spec = write("printenv.yaml", PRINTENV)
    result = runner.invoke(app, ["run", str(spec), "--id", "env-1", "--store", url])
    assert result.exit_code == 0, result.output
    assert "kubebench:***@" in result.output and _leaks(result.output) == []
    log = next((home / "experiments" / "env-1").glob("*/output/worker-0.log")).read_text()
    seen = json.loads(log.splitlines()[0])
    assert {"KUBEBENCH_TOKEN", "KUBEBENCH_STORE", "DATABASE_URL"}.isdisjoint(seen), sorted(seen)
    assert seen["KUBEBENCH_EXP_ID"] == "env-1" and _leaks(log) == []
    for command in (["show", "env-1"], ["results", "env-1"], ["experiments"]):
        shown = runner.invoke(app, [*command, "--store", url])
        assert shown.exit_code == 0 and _leaks(shown.output) == [], shown.output


def test_store_errors_show_no_password(home: Path) -> None:
    from kubebench.testing.postgres import free_port

    for url in (f"postgresql+psycopg://kb:{PASSWORD}@127.0.0.1:{free_port()}/kb",
                f"nosuchdb://kb:{PASSWORD}@h/kb", f"postgresql+nosuchdriver://kb:{PASSWORD}@h/kb"):
        result = runner.invoke(app, ["experiments", "--store", url])
        assert result.exit_code == 2 and "error:" in result.output, result.output
        assert _leaks(result.output) == [], result.output


@pytest.mark.slow
def test_a_dashboard_launch_leaks_neither_through_its_log_nor_its_jobs(
        home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    url = postgres_url.replace("kubebench@", f"kubebench:{PASSWORD}@")
    monkeypatch.setenv("KUBEBENCH_TOKEN", TOKEN)  # the documented way to give `serve` its token
    config = make_settings(home=home, store=url)
    with TestClient(make_app(open_store(url), config, token=TOKEN), base_url="http://127.0.0.1") as client:
        launched = client.post("/api/experiments", json={"spec": PRINTENV}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert launched.status_code == 201, launched.text
        exp_id = launched.json()["id"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            detail = client.get(f"/api/experiments/{exp_id}")  # no token: anyone may read this
            if detail.json()["state"] not in ("pending", "running") and not client.app.state.launcher.is_active(exp_id):
                break
            time.sleep(0.2)
        detail = client.get(f"/api/experiments/{exp_id}")
        assert detail.json()["state"] == "succeeded", detail.text
        assert "kubebench:***@" in detail.json()["runner_log"] and _leaks(detail.text) == []
        run_id = detail.json()["runs"][0]["run_id"]
        log = client.get(f"/api/runs/{run_id}/logs/worker-0")
        assert log.status_code == 200 and _leaks(log.text) == [], log.text
        seen = json.loads(log.text.splitlines()[0])
        assert {"KUBEBENCH_TOKEN", "KUBEBENCH_STORE"}.isdisjoint(seen)
        assert _leaks(client.get(f"/api/runs/{run_id}").text) == []
