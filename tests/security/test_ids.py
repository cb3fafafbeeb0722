"""Finding 1 (HIGH): experiment ids were never validated, so `--id ..` wrote runs outside the store
and `delete ..` removed the home. One grammar (kubebench.ids), checked wherever an id enters."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.plan.plan import new_experiment_id

from security_support import raw

runner = CliRunner(env={"COLUMNS": "200"})
#: The grammar, written out here too: the test pins it (a Kubernetes label value, lowercase, no '_').
GRAMMAR = r"[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?"
BAD_IDS = ["..", ".", "../x", "../../victim", "/abs", "a/b", "-x", "A", "a_b", "x" * 64, "a\x1b]0;t", "a.", "", " a"]


@given(st.text(max_size=120), st.floats(min_value=0, max_value=4e9))
def test_every_generated_id_is_valid(name: str, now: float) -> None:
    from kubebench import ids

    generated = new_experiment_id(name, now)
    assert ids.is_valid(generated) and len(generated) <= ids.MAX_LENGTH


@settings(max_examples=300)
@given(value=st.from_regex(GRAMMAR, fullmatch=True))
def test_a_valid_id_is_one_folder_strictly_inside_its_root(value: str, tmp_path_factory) -> None:
    root = tmp_path_factory.getbasetemp().resolve()
    assert len(value) <= 63
    assert (root / value).resolve().parent == root


@given(st.text(max_size=80))
def test_the_check_accepts_exactly_the_grammar(value: str) -> None:
    import re

    from kubebench import ids
    from kubebench.errors import IdError

    expected = re.fullmatch(GRAMMAR, value) is not None
    assert ids.is_valid(value) is expected
    if not expected:
        with pytest.raises(IdError, match="lowercase letters, digits"):
            ids.check(value)


@pytest.mark.parametrize("bad", BAD_IDS)
def test_run_with_a_bad_id_is_refused_and_writes_nothing(home: Path, tiny_spec: Path, bad: str) -> None:
    result = runner.invoke(app, ["run", str(tiny_spec), f"--id={bad}"])
    assert result.exit_code == 2, result.output
    assert "is not valid: an id is 1 to 63 lowercase letters" in result.output
    assert "Traceback" not in result.output
    assert not (home / "experiments").exists() or not any((home / "experiments").iterdir())
    assert not any(p.name == "config" for p in home.parent.rglob("config"))  # no run folder anywhere


@pytest.mark.parametrize("command", [
    ["show", "{}"], ["results", "{}"], ["delete", "{}", "--yes"], ["compare", "{}", "{}"], ["scaling", "{}"],
    ["overhead", "{}", "{}"], ["report", "{}"], ["export", "mlflow", "{}", "--tracking-uri", "sqlite:///unused.db"], ["outputs", "{}"],
])
def test_every_command_taking_an_id_refuses_a_bad_one(home: Path, tiny_spec: Path, command: list[str]) -> None:
    assert runner.invoke(app, ["run", str(tiny_spec), "--id", "fine-1"]).exit_code == 0
    for bad in ("..", "a/b", "UPPER"):
        result = runner.invoke(app, [part.format(bad) for part in command])
        assert result.exit_code == 2, (command, bad, result.output)
        assert "is not valid: an id is" in result.output and "Traceback" not in result.output
    assert (home / "experiments" / "fine-1").is_dir() and (home / "kubebench.db").is_file()


def test_the_store_refuses_to_record_a_bad_id(home: Path, tiny_spec: Path) -> None:
    from kubebench.errors import KubebenchError
    from kubebench.runner import plan_experiment, record_experiment
    from kubebench.settings import settings as make_settings
    from kubebench.spec.load import load_spec
    from kubebench.store.store import open_store

    config = make_settings()
    experiment = plan_experiment(load_spec(tiny_spec), config, "fine-2")
    plan = experiment.plan.__class__(**{**experiment.plan.__dict__, "experiment_id": ".."})
    forged = experiment.__class__(experiment.loaded, plan, config)
    store = open_store(config.store_url)
    with pytest.raises(KubebenchError, match="is not valid: an id is"):
        record_experiment(forged, store)
    with pytest.raises(KubebenchError, match="is not valid: an id is"):
        plan_experiment(load_spec(tiny_spec), config, "../x")
    assert store.experiments() == []


@pytest.mark.parametrize("route", [
    ("GET", "/api/experiments/{}"), ("GET", "/api/experiments/{}/events"), ("POST", "/api/experiments/{}/cancel"),
    ("DELETE", "/api/experiments/{}"), ("GET", "/api/compare?a={}&b=fine-1"), ("GET", "/api/runs/{}"),
    ("GET", "/api/runs/{}/logs/worker-0"), ("GET", "/api/runs/{}/telemetry"), ("GET", "/api/runs/{}/files"),
    ("GET", "/api/runs/{}/files/run.json"),
])
def test_every_route_taking_an_id_refuses_a_bad_one(home: Path, tiny_spec: Path, route) -> None:
    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app
    from web_support import WEB_TOKEN, run_spec, serving

    config = make_settings()
    run_spec(tiny_spec.read_text(), tiny_spec.parent, config, "fine-1")
    method, template = route
    with serving(make_app(open_store(config.store_url), config, token=WEB_TOKEN)) as url:
        for bad in ("UPPER", "a_b", "%2e%2e", "..", ".", "-x", "x" * 64, "a%0a"):
            status, body = raw(url, method, template.format(bad), WEB_TOKEN)
            assert status in (404, 422), (route, bad, status, body)
            if status == 422:
                assert b"is not valid: an id is 1 to 63 lowercase letters" in body, body
    assert (config.experiments_root / "fine-1").is_dir()


def test_the_pages_of_a_bad_id_say_why(home: Path) -> None:
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings()
    with TestClient(make_app(open_store(config.store_url), config), base_url="http://127.0.0.1") as client:
        for page in ("/experiments/UPPER", "/runs/a_b", "/experiments/-x"):
            answer = client.get(page)
            assert answer.status_code == 404 and "text/html" in answer.headers["content-type"], page
            assert "is not valid: an id is 1 to 63 lowercase letters" in answer.text, page
