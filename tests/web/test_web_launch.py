"""Launching, following, cancelling and deleting experiments through the API (real subprocesses)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from web_support import run_spec

QUICK = """\
name: quick
job:
  command: [python, -c, "import time, kubebench; time.sleep(0.3); kubebench.report(v={{ n }} * {{ k }})"]
parameters:
  n: [1, 2]
  k: 1
telemetry: {enabled: false}
metrics: [{name: v, primary: true}]
"""

# each run writes its pid where the test finds it, then sleeps far longer than the test waits
SLEEPY = """\
name: sleepy
job:
  command: [python, -c, "import os, time; open(os.environ['KUBEBENCH_EXP_OUTPUT_PATH'] + '/pid', 'w').write(str(os.getpid())); time.sleep(120)"]
parameters:
  n: [1, 2, 3]
telemetry: {enabled: false}
"""


def wait_until(check, timeout: float = 60.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError("timed out waiting")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is dead too
        return f.read().split(") ")[1][0] != "Z"


def events(client, experiment_id: str) -> list[tuple[str, dict]]:
    """Every server-sent event of the experiment's stream, until it ends."""
    found, kind = [], None
    with client.stream("GET", f"/api/experiments/{experiment_id}/events") as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        for line in answer.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                found.append((kind, json.loads(line.removeprefix("data: "))))
    return found


@pytest.mark.slow
def test_launch_from_yaml_with_params_runs_to_the_end_with_live_progress(fresh_web) -> None:
    client = fresh_web.client
    answer = client.post("/api/experiments", headers=fresh_web.auth, json={"spec": QUICK, "params": "k: 10\n"})
    assert answer.status_code == 201, answer.text
    exp_id = answer.json()["id"]
    assert exp_id.startswith("quick-") and answer.json()["url"] == f"/experiments/{exp_id}"
    stream = events(client, exp_id)
    assert stream[-1][0] == "done" and all(kind == "progress" for kind, _ in stream[:-1])
    assert any(data["state"] == "running" for _, data in stream[:-1])
    assert stream[-1][1]["state"] == "succeeded" and stream[-1][1]["runs_by_status"]["succeeded"] == 2
    assert fresh_web.launcher.wait(exp_id, 30) and fresh_web.launcher.job(exp_id).returncode == 0
    runs = fresh_web.store.runs(exp_id)
    assert sorted(r.metrics["v"] for r in runs) == [10.0, 20.0]  # k from the parameter file
    folder = fresh_web.settings.home / "launched" / exp_id
    assert (folder / "spec.yaml").read_text() == QUICK and (folder / "params.yaml").read_text() == "k: 10\n"
    assert (folder / "runner.log").exists()
    detail = client.get(f"/api/experiments/{exp_id}").json()
    assert detail["launched_here"] is True and detail["state"] == "succeeded"
    assert client.get("/api/experiments?state=succeeded").json()["items"][0]["id"] == exp_id


@pytest.mark.slow
def test_launch_from_the_form(fresh_web) -> None:
    form = {"name": "from form", "image": "python:3.11-slim",
            "command": "python -c \"import kubebench; kubebench.report(score={{ bs }} + 0.5)\"",
            "parameters": {"bs": [8, 16], "mode": "fast"}, "repeats": 2, "backend": "local",
            "metrics": [{"name": "score", "unit": "items/s", "primary": True}]}
    answer = fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={"form": form})
    assert answer.status_code == 201, answer.text
    exp_id = answer.json()["id"]
    assert exp_id.startswith("from-form-")
    assert fresh_web.launcher.wait(exp_id, 60)
    runs = fresh_web.store.runs(exp_id)
    assert len(runs) == 4 and {r.status for r in runs} == {"succeeded"}
    assert sorted(r.metrics["score"] for r in runs) == [8.5, 8.5, 16.5, 16.5]
    assert {r.params["mode"] for r in runs} == {"fast"}
    detail = fresh_web.client.get(f"/api/experiments/{exp_id}").json()
    assert detail["metrics"][0] == {"name": "score", "goal": "maximize", "unit": "items/s", "declared": True}
    assert detail["swept"] == ["bs"]


def problems(answer) -> list[dict]:
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert isinstance(body["detail"], str) and body["errors"]
    return body["errors"]


@pytest.mark.parametrize("spec, line, column, field, message", [
    ("name: x\njob:\n  command: [python\n", 4, 1, None, "YAML syntax error"),
    ("name: x\njob:\n  command: [python]\nrepeets: 3\n", 4, 1, "repeets", "unknown key"),
    ("name: x\njob:\n  command: [python]\nrepeats: 0\n", 4, 1, "repeats", "greater than or equal to 1"),
    ("name: x\njob:\n  kind: Rocket\n  command: [python]\n", 3, 3, "job.kind", "unknown job kind"),
    ("name: x\nparameters: {n: [1]}\n", 1, 1, "job", "required key is missing"),
])
def test_a_bad_spec_is_422_located_by_line(fresh_web, spec, line, column, field, message) -> None:
    [problem] = problems(fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={"spec": spec}))
    assert (problem["line"], problem["column"], problem["field"]) == (line, column, field), problem
    assert message in problem["message"] and problem["loc"] == f"line {line}, column {column}"
    assert "/launched/" not in json.dumps(problem)  # server paths are not shown
    assert fresh_web.launcher.active_ids() == [] and not any((fresh_web.settings.home / "launched").iterdir())


def test_template_and_parameter_errors_are_located_in_the_spec_and_the_params_file(fresh_web) -> None:
    undefined = QUICK.replace("{{ k }}", "{{ missing }}")
    [problem] = problems(fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={"spec": undefined}))
    assert "undefined" in problem["message"] and "missing" in problem["message"]
    # a rendering error names the field; the API finds its line in the spec
    assert (problem["field"], problem["line"], problem["column"]) == ("job.command[2]", 3, 25)
    problem = problems(fresh_web.client.post("/api/experiments", headers=fresh_web.auth,
                                             json={"spec": QUICK, "params": "n: [1, 2]\nk: [1, {a: 2}]\n"}))[0]
    assert problem["loc"].startswith("params line 2") and problem["field"] == "parameters.k"


@pytest.mark.parametrize("form, field, message", [
    ({"name": "f", "command": "python -c 1", "repeats": 0}, "repeats", "greater than or equal to 1"),
    ({"name": "", "command": "python -c 1"}, "name", "at least 1 character"),
    ({"name": "f"}, "command", "give `command`"),
    ({"name": "f", "command": "python -c 'unclosed"}, "command", "cannot split"),
    ({"name": "f", "command": ["python"], "backend": "mainframe"}, "backend", "local"),
    ({"name": "f", "command": ["python"], "parameters": {"n": [[1]]}}, "parameters", "n.0: Input should be"),
    ({"name": "f", "command": ["python", "{{ nope }}"]}, "command", "undefined"),
    ({"name": "f", "command": ["python"], "colour": "red"}, "colour", "Extra inputs"),
])
def test_a_bad_form_is_422_located_by_field(fresh_web, form, field, message) -> None:
    found = problems(fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={"form": form}))
    assert found[0]["field"] == field and message in found[0]["message"], found


def test_a_template_form_error_names_the_template_line(fresh_web) -> None:
    template = "kind: Process\nspec:\n  command: [python, -c, '{{ undefined_thing }}']\n"
    [problem] = problems(fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={
        "form": {"name": "t", "template": template}}))
    assert problem["field"] == "template" and problem["line"] == 3 and problem["loc"] == "template line 3"


def test_spec_or_form_not_both_nor_neither(fresh_web) -> None:
    for body in ({}, {"spec": QUICK, "form": {"name": "x", "command": "python"}}):
        answer = fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json=body)
        assert answer.status_code == 422 and "either" in answer.json()["detail"]
    not_json = fresh_web.client.post("/api/experiments", headers={**fresh_web.auth, "Content-Type": "application/json"},
                                     content=b"{nope")
    assert not_json.status_code == 422


@pytest.mark.slow
def test_cancel_stops_the_runner_and_cancels_every_run(fresh_web) -> None:
    client = fresh_web.client
    exp_id = client.post("/api/experiments", headers=fresh_web.auth, json={"spec": SLEEPY}).json()["id"]
    running = wait_until(lambda: [r for r in fresh_web.store.runs(exp_id) if r.status == "running"]
                         if _has_experiment(fresh_web.store, exp_id) else None)
    pid_file = Path(running[0].path) / "output" / "pid"
    workload = int(wait_until(lambda: pid_file.exists() and pid_file.read_text()))
    runner = fresh_web.launcher.job(exp_id).process.pid
    listing = client.get("/api/experiments?state=running").json()
    assert [e["id"] for e in listing["items"]] == [exp_id] and listing["counts"]["running"] == 1
    assert client.post(f"/api/experiments/{exp_id}/cancel").status_code == 401
    assert alive(runner) and alive(workload)
    answer = client.post(f"/api/experiments/{exp_id}/cancel", headers=fresh_web.auth)
    assert answer.status_code == 202 and answer.json() == {"id": exp_id, "cancelled": True}
    assert fresh_web.launcher.wait(exp_id, 30)
    assert fresh_web.launcher.job(exp_id).returncode == 130  # the runner's answer to Ctrl-C
    assert not alive(runner) and wait_until(lambda: not alive(workload), 10)
    runs = fresh_web.store.runs(exp_id)
    assert {r.status for r in runs} == {"cancelled"} and len(runs) == 3
    assert client.get(f"/api/experiments/{exp_id}").json()["state"] == "cancelled"
    again = client.post(f"/api/experiments/{exp_id}/cancel", headers=fresh_web.auth)
    assert again.status_code == 409 and "not running" in again.json()["detail"]


def _has_experiment(store, exp_id: str) -> bool:
    from kubebench.errors import NotFoundError

    try:
        store.experiment(exp_id)
        return True
    except NotFoundError:
        return False


def test_cancel_of_an_experiment_not_launched_here_is_409(fresh_web, tmp_path: Path) -> None:
    run_spec(QUICK.replace("time.sleep(0.3); ", ""), tmp_path, fresh_web.settings, "elsewhere-1")
    answer = fresh_web.client.post("/api/experiments/elsewhere-1/cancel", headers=fresh_web.auth)
    assert answer.status_code == 409 and "not launched by this server" in answer.json()["detail"]
    assert fresh_web.client.post("/api/experiments/nope/cancel", headers=fresh_web.auth).status_code == 404


def test_delete_removes_the_rows_and_the_folders(fresh_web, tmp_path: Path) -> None:
    run_spec(QUICK.replace("time.sleep(0.3); ", ""), tmp_path, fresh_web.settings, "doomed-1")
    folder = fresh_web.settings.experiments_root / "doomed-1"
    assert folder.is_dir()
    run_ids = [r.run_id for r in fresh_web.store.runs("doomed-1")]
    answer = fresh_web.client.delete("/api/experiments/doomed-1", headers=fresh_web.auth)
    assert answer.status_code == 204 and answer.content == b""
    assert not folder.exists()
    assert fresh_web.client.get("/api/experiments/doomed-1").status_code == 404
    assert fresh_web.client.get(f"/api/runs/{run_ids[0]}").status_code == 404
    assert fresh_web.client.get("/api/experiments").json()["total"] == 0
    assert fresh_web.client.delete("/api/experiments/doomed-1", headers=fresh_web.auth).status_code == 404


@pytest.mark.slow
def test_a_running_experiment_cannot_be_deleted_and_stopping_the_app_stops_it(home: Path, web_token: str) -> None:
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings(home=home)
    store = open_store(config.store_url)
    auth = {"Authorization": f"Bearer {web_token}"}
    with TestClient(make_app(store, config, token=web_token), base_url="http://127.0.0.1") as client:
        exp_id = client.post("/api/experiments", headers=auth, json={"spec": SLEEPY}).json()["id"]
        launcher = client.app.state.launcher
        runner = launcher.job(exp_id).process.pid
        refused = client.delete(f"/api/experiments/{exp_id}", headers=auth)
        assert refused.status_code == 409 and "cancel it first" in refused.json()["detail"]
        wait_until(lambda: _has_experiment(store, exp_id) and any(r.status == "running" for r in store.runs(exp_id)))
    assert not alive(runner) and launcher.active_ids() == []  # the app's shutdown stopped it
    assert {r.status for r in store.runs(exp_id)} == {"cancelled"}


@pytest.mark.slow
def test_a_runner_that_dies_leaves_no_run_running(fresh_web) -> None:
    import signal

    exp_id = fresh_web.client.post("/api/experiments", headers=fresh_web.auth, json={"spec": SLEEPY}).json()["id"]
    running = wait_until(lambda: _has_experiment(fresh_web.store, exp_id)
                         and [r for r in fresh_web.store.runs(exp_id) if r.status == "running"])
    pid_file = Path(running[0].path) / "output" / "pid"
    workload = int(wait_until(lambda: pid_file.exists() and pid_file.read_text()))
    os.kill(fresh_web.launcher.job(exp_id).process.pid, signal.SIGKILL)
    assert fresh_web.launcher.wait(exp_id, 20)
    runs = {r.run_id: r for r in fresh_web.store.runs(exp_id)}
    assert runs[running[0].run_id].status == "failed" and "runner stopped" in runs[running[0].run_id].reason
    assert {r.status for r in runs.values()} == {"failed", "pending"}  # the rest can be resumed
    try:
        os.kill(workload, signal.SIGKILL)  # orphaned by the killed runner: the test cleans it up
    except ProcessLookupError:
        pass
