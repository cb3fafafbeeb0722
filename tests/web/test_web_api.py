"""The JSON API over real finished experiments (``web_home``): listing, details, runs, files, compare."""

from __future__ import annotations

import pytest

from kubebench.analyse.experiments import compare_experiments, trial_values
from kubebench.numerics.stats import summarize


def test_config_says_writable_and_the_version(web_client) -> None:
    assert web_client.get("/api/config").json() == {"read_only": False, "auth": True, "version": "0.1.0"}


def test_openapi_documents_every_endpoint(web_client) -> None:
    spec = web_client.get("/openapi.json").json()
    paths = spec["paths"]
    for path in ("/api/experiments", "/api/experiments/{experiment_id}", "/api/experiments/{experiment_id}/events",
                 "/api/experiments/{experiment_id}/cancel", "/api/runs/{run_id}", "/api/runs/{run_id}/logs/{replica}",
                 "/api/runs/{run_id}/telemetry", "/api/runs/{run_id}/files", "/api/runs/{run_id}/files/{path}",
                 "/api/compare", "/api/config"):
        assert path in paths, path
    assert set(paths["/api/experiments"]) == {"get", "post"}
    assert "delete" in paths["/api/experiments/{experiment_id}"]
    assert "ExperimentSummary" in spec["components"]["schemas"]
    assert web_client.get("/docs").status_code == 200


def test_list_is_newest_first_with_counts_and_run_counts(web_client, web_home) -> None:
    listing = web_client.get("/api/experiments").json()
    assert listing["total"] == 3 and (listing["offset"], listing["limit"]) == (0, 50)
    assert [e["id"] for e in listing["items"]] == [web_home.failed, web_home.candidate, web_home.baseline]
    assert listing["counts"] == {"pending": 0, "running": 0, "interrupted": 0, "succeeded": 2, "failed": 1,
                                 "cancelled": 0}
    broken = listing["items"][0]
    assert broken["state"] == "failed" and broken["runs"] == 2 and broken["name"] == "web-broken"
    assert broken["runs_by_status"] == {"succeeded": 1, "failed": 1, "running": 0, "pending": 0, "cancelled": 0,
                                        "timeout": 0}
    assert listing["items"][1]["runs_by_status"]["succeeded"] == 8 and listing["items"][1]["backend"] == "local"


@pytest.mark.parametrize("query, expected", [
    ("state=succeeded", ["cand", "base"]),
    ("state=failed", ["broken"]),
    ("state=running", []),
    ("name=web-demo", ["cand", "base"]),
    ("name=web-dem", []),  # exact name
    ("q=DEMO-CA", ["cand"]),  # substring of the id, any case
    ("q=broken", ["broken"]),  # substring of the name
    ("q=%25", []),  # LIKE's wildcard is a literal percent sign here
    ("q=_", []),  # … and '_' a literal underscore (no id or name holds one), not LIKE's any-character
    ("backend=local", ["broken", "cand", "base"]),
    ("backend=kubernetes", []),
    ("name=web-demo&state=succeeded&backend=local", ["cand", "base"]),
])
def test_list_filters(web_client, web_home, query: str, expected: list[str]) -> None:
    ids = {"broken": web_home.failed, "cand": web_home.candidate, "base": web_home.baseline}
    listing = web_client.get(f"/api/experiments?{query}").json()
    assert [e["id"] for e in listing["items"]] == [ids[k] for k in expected]
    assert listing["total"] == len(expected) == sum(listing["counts"].values())


def test_list_by_creation_date(web_client, web_home) -> None:
    records = {e.id: e for e in web_home.store().experiments()}
    middle = records[web_home.candidate].created_at
    since = web_client.get(f"/api/experiments?since={middle}").json()
    assert [e["id"] for e in since["items"]] == [web_home.failed, web_home.candidate]
    until = web_client.get(f"/api/experiments?until={middle}").json()
    assert [e["id"] for e in until["items"]] == [web_home.candidate, web_home.baseline]
    import datetime as dt

    day = dt.datetime.fromtimestamp(middle, dt.timezone.utc).date()
    assert web_client.get(f"/api/experiments?since={day}&until={day}").json()["total"] == 3
    assert web_client.get(f"/api/experiments?until={day - dt.timedelta(days=1)}").json()["total"] == 0
    bad = web_client.get("/api/experiments?since=yesterday")
    assert bad.status_code == 422 and "since" in bad.json()["detail"]


def test_list_pagination(web_client, web_home) -> None:
    first = web_client.get("/api/experiments?limit=2").json()
    second = web_client.get("/api/experiments?limit=2&offset=2").json()
    assert [e["id"] for e in first["items"]] == [web_home.failed, web_home.candidate]
    assert [e["id"] for e in second["items"]] == [web_home.baseline]
    assert first["total"] == second["total"] == 3 and second["offset"] == 2
    assert web_client.get("/api/experiments?offset=10").json()["items"] == []
    assert web_client.get("/api/experiments?limit=501").status_code == 422
    assert web_client.get("/api/experiments?limit=0").status_code == 422
    bad_state = web_client.get("/api/experiments?state=exploded")
    assert bad_state.status_code == 422 and "succeeded" in bad_state.json()["detail"]


def test_experiment_detail_statistics_are_kubebench_analyse_s(web_client, web_home) -> None:
    detail = web_client.get(f"/api/experiments/{web_home.baseline}").json()
    assert detail["state"] == "succeeded" and detail["launched_here"] is False
    assert detail["primary_metric"] == "throughput" and detail["swept"] == ["size"]
    assert detail["metrics"][:2] == [
        {"name": "throughput", "goal": "maximize", "unit": "items/s", "declared": True},
        {"name": "latency", "goal": "minimize", "unit": "ms", "declared": True},
    ]
    assert "memory_peak_bytes" in {m["name"] for m in detail["metrics"]}  # telemetry summaries too
    assert "name: web-demo" in detail["spec_text"]
    runs = web_home.store().runs(web_home.baseline)
    expected = {t.trial_id: summarize(t.values, failed=t.failed) for t in trial_values(runs, "throughput")}
    assert [t["params"] for t in detail["trials"]] == [{"size": 1, "speed": 100}, {"size": 2, "speed": 100}]
    for trial in detail["trials"]:
        got, want = trial["summary"]["throughput"], expected[trial["trial_id"]]
        assert trial["runs"] == 4 and trial["failed"] == 0
        for key in ("n", "mean", "median", "stdev", "cv", "ci_low", "ci_high", "min", "max"):
            assert got[key] == pytest.approx(getattr(want, key)), key
    assert detail["trials"][1]["summary"]["throughput"]["mean"] == pytest.approx(201.5)  # 200..203
    assert len(detail["runs"]) == 8 and {r["status"] for r in detail["runs"]} == {"succeeded"}
    run = detail["runs"][0]
    assert set(run) >= {"run_id", "trial_id", "repeat", "warmup", "status", "exit_code", "reason", "attempts",
                        "started_at", "finished_at", "duration_s", "params", "metrics"}
    assert run["duration_s"] == pytest.approx(run["finished_at"] - run["started_at"])


def test_experiment_detail_of_failed_runs(web_client, web_home) -> None:
    detail = web_client.get(f"/api/experiments/{web_home.failed}").json()
    assert detail["state"] == "failed"
    failed = [r for r in detail["runs"] if r["status"] == "failed"]
    assert len(failed) == 1 and failed[0]["exit_code"] == 3 and "code 3" in failed[0]["reason"]
    assert sum(t["failed"] for t in detail["trials"]) == 1


def test_unknown_ids_are_404_with_a_message(web_client) -> None:
    for path in ("/api/experiments/nope", "/api/experiments/nope/events", "/api/runs/nope", "/api/runs/nope/telemetry",
                 "/api/runs/nope/files", "/api/runs/nope/logs/worker-0", "/api/compare?a=nope&b=nope"):
        answer = web_client.get(path)
        assert answer.status_code == 404, path
        assert "nope" in answer.json()["detail"]


def _run(web_home, experiment_id: str, status: str = "succeeded"):
    return next(r for r in web_home.store().runs(experiment_id) if r.status == status)


def test_run_detail(web_client, web_home) -> None:
    run = _run(web_home, web_home.failed, "failed")
    detail = web_client.get(f"/api/runs/{run.run_id}").json()
    assert detail["experiment_id"] == web_home.failed and detail["status"] == "failed"
    assert detail["exit_code"] == 3 and "about to fail" in detail["log_tail"]
    assert detail["logs"] == ["worker-0"] and detail["path"] == run.path
    assert detail["provenance"]["backend"] == "local" and "python" in detail["provenance"]
    assert detail["params"] == {"code": 3}


def test_replica_log_is_plain_text(web_client, web_home) -> None:
    run = _run(web_home, web_home.baseline)
    answer = web_client.get(f"/api/runs/{run.run_id}/logs/worker-0")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert "training size" in answer.text and "KUBEBENCH_METRIC throughput=" in answer.text
    assert web_client.get(f"/api/runs/{run.run_id}/logs/worker-7").status_code == 404


def test_telemetry_series(web_client, web_home) -> None:
    run = _run(web_home, web_home.baseline)
    detail = web_client.get(f"/api/runs/{run.run_id}").json()
    series = web_client.get(f"/api/runs/{run.run_id}/telemetry").json()["series"]
    assert sorted(series) == detail["telemetry"] and "system_cpu_percent" in series
    stored = web_home.store().telemetry(run.run_id)
    assert series["system_cpu_percent"] == [list(p) for p in stored["system_cpu_percent"]]
    times = [t for t, _ in series["system_cpu_percent"]]
    assert times == sorted(times) and len(times) >= 1


def test_file_browser_lists_and_downloads(web_client, web_home) -> None:
    run = _run(web_home, web_home.baseline)
    top = web_client.get(f"/api/runs/{run.run_id}/files").json()
    assert top["path"] == ""
    assert [(e["name"], e["is_dir"]) for e in top["entries"]] == [
        ("config", True), ("output", True), ("result", True), ("run.json", False), ("timeline.json", False)]
    output = web_client.get(f"/api/runs/{run.run_id}/files", params={"path": "output"}).json()
    names = {e["name"]: e for e in output["entries"]}
    assert set(names) == {"samples.csv", "worker-0.log"}
    assert names["samples.csv"]["path"] == "output/samples.csv" and names["samples.csv"]["size"] == 22
    download = web_client.get(f"/api/runs/{run.run_id}/files/output/samples.csv")
    assert download.status_code == 200 and download.content == b"step,loss\n0,1.0\n1,0.5\n"
    assert download.headers["content-disposition"].startswith("attachment")
    assert download.headers["content-type"] == "application/octet-stream"
    inline = web_client.get(f"/api/runs/{run.run_id}/files/config/params.yaml?inline=1")
    assert inline.headers["content-type"].startswith("text/plain") and inline.text == "size: 1\nspeed: 100\n"
    assert inline.headers["content-disposition"].startswith("inline")
    assert web_client.get(f"/api/runs/{run.run_id}/files/output/missing.txt").status_code == 404
    assert web_client.get(f"/api/runs/{run.run_id}/files", params={"path": "nothing"}).status_code == 404
    assert web_client.get(f"/api/runs/{run.run_id}/files/output").status_code == 404  # a folder is no file


def test_compare_uses_kubebench_analyse(web_client, web_home) -> None:
    answer = web_client.get(f"/api/compare?a={web_home.baseline}&b={web_home.candidate}").json()
    assert (answer["a"], answer["b"], answer["metric"], answer["goal"]) == (
        web_home.baseline, web_home.candidate, "throughput", "maximize")
    store = web_home.store()
    expected = compare_experiments(store.runs(web_home.baseline), store.runs(web_home.candidate), "throughput",
                                   "maximize")  # the default threshold of kubebench.rules, as the CLI's
    assert len(answer["rows"]) == len(expected) == 2
    for row, want in zip(answer["rows"], expected):
        assert row["params"] == want.params
        assert row["verdict"] == want.comparison.verdict == "improved"
        assert row["ratio"] == pytest.approx(want.comparison.ratio)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(want.comparison.ratio_ci)
        assert row["a"]["median"] == pytest.approx(want.comparison.base.median)
    latency = web_client.get(f"/api/compare?a={web_home.baseline}&b={web_home.candidate}&metric=latency").json()
    assert latency["goal"] == "minimize" and latency["metric"] == "latency"
    # latency does not depend on speed: no verdict of change ("unchanged" needs the whole CI within ±2%)
    assert {r["verdict"] for r in latency["rows"]} <= {"unchanged", "inconclusive"}


def test_compare_of_unrelated_experiments_warns(web_client, web_home) -> None:
    answer = web_client.get(f"/api/compare?a={web_home.baseline}&b={web_home.failed}")
    assert answer.status_code == 200
    warnings = answer.json()["warnings"]
    assert answer.json()["rows"] == [] and "no trials with equal parameters" in warnings[1]
    assert warnings[0].startswith("different benchmarks: web-demo and web-broken")  # review 2026-12-02 #31


def test_events_of_a_finished_experiment_end_at_once(web_client, web_home) -> None:
    with web_client.stream("GET", f"/api/experiments/{web_home.baseline}/events") as answer:
        assert answer.headers["content-type"].startswith("text/event-stream")
        text = "".join(answer.iter_text())
    assert text.startswith("event: done\ndata: ")
    import json

    data = json.loads(text.split("data: ", 1)[1])
    assert data == {"state": "succeeded", "partial": False, "runs": 8, "runs_by_status": {
        "succeeded": 8, "failed": 0, "running": 0, "pending": 0, "cancelled": 0, "timeout": 0}}


def test_live_server_serves_the_api_over_http(live_server, web_home) -> None:
    import httpx

    listing = httpx.get(f"{live_server.url}/api/experiments?state=succeeded").json()
    assert {e["id"] for e in listing["items"]} == set(web_home.sweeps)
    denied = httpx.delete(f"{live_server.url}/api/experiments/{web_home.baseline}")
    assert denied.status_code == 401


def test_runs_on_object_storage_are_browsed_through_fsspec(s3: str, tmp_path) -> None:
    from fastapi.testclient import TestClient
    from web_support import WEB_TOKEN, run_spec

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings(home=tmp_path / "home", store=f"sqlite:///{tmp_path / 'kb.db'}", storage=s3 + "/runs")
    spec = ("name: remote\njob:\n  command: [python, -c, \"import os, kubebench; "
            "open(os.environ['KUBEBENCH_EXP_OUTPUT_PATH'] + '/data.txt', 'w').write('remote bytes'); "
            "kubebench.report(v=1)\"]\ntelemetry: {enabled: false}\nmetrics: [{name: v}]\n")
    run_spec(spec, tmp_path, config, "remote-1")
    store = open_store(config.store_url)
    [run] = store.runs("remote-1")
    assert run.path.startswith(s3)
    with TestClient(make_app(store, config, token=WEB_TOKEN), base_url="http://127.0.0.1") as client:
        detail = client.get(f"/api/runs/{run.run_id}").json()
        assert detail["logs"] == ["worker-0"]
        top = client.get(f"/api/runs/{run.run_id}/files").json()["entries"]
        assert {(e["name"], e["is_dir"]) for e in top} >= {("config", True), ("output", True)}
        output = client.get(f"/api/runs/{run.run_id}/files", params={"path": "output"}).json()["entries"]
        assert {e["name"]: e["size"] for e in output}["data.txt"] == len("remote bytes")
        download = client.get(f"/api/runs/{run.run_id}/files/output/data.txt")
        assert download.status_code == 200 and download.content == b"remote bytes"
        assert download.headers["content-disposition"].startswith("attachment")
        assert "KUBEBENCH_METRIC v=1" in client.get(f"/api/runs/{run.run_id}/logs/worker-0").text
        assert client.get(f"/api/runs/{run.run_id}/files/output/missing").status_code == 404
        for bad in ("../x", "output/%2e%2e/%2e%2e/x", "/etc/passwd"):
            assert client.get(f"/api/runs/{run.run_id}/files", params={"path": bad}).status_code == 400
