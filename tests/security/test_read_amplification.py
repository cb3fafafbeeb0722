"""N4 (review of 2026-12-02): what one unauthenticated read costs is bounded. Sparklines took 500 ids
(30 s of CPU for one 4 KB request); every ``trial=`` of ``/api/history`` computed the series' history
again, even one matching nothing; ``/api/table?limit=2000`` read 2,000 experiments with all their
trials. Now: at most 50 sparkline ids (422 beyond) and kept until the series changes; a history is
computed once per series and metric, ``trial=`` picks from it and a metric or trial the series lacks
is a 404 before anything is computed; the table holds a bounded number of rows. (Times on a
600-experiment store: ``bench/web_reads.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

EXPERIMENTS = 12


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """A dashboard over series ``long``: 12 experiments × 4 trials (``bs``) × 3 runs."""
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.web.app import make_app

    home: Path = tmp_path_factory.mktemp("reads")
    config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}")
    store = open_store(config.store_url)
    for i in range(EXPERIMENTS):
        store_experiment(store, f"s-{i:02d}", "long", {"x": [[100.0 + t, 101.0 + t, 99.0 + t] for t in range(4)]},
                         params=[{"bs": t} for t in range(4)], created_at=1_700_000_000.0 + 3600 * i)
    with TestClient(make_app(store, config), base_url="http://127.0.0.1") as c:
        yield c


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The series whose history is computed, and the ids whose sparklines are, request by request."""
    import kubebench.analyse.history as history
    import kubebench.web.sparklines as sparklines

    calls: list[str] = []
    real_history, real_trends = history.load_history, sparklines._trends

    def load_history(source, name, *args, **kwargs):
        calls.append(f"history {name}")
        return real_history(source, name, *args, **kwargs)

    def trends(store, series, records, points):
        calls.extend(f"sparkline {r.id}" for r in records)
        return real_trends(store, series, records, points)

    monkeypatch.setattr(history, "load_history", load_history)
    monkeypatch.setattr(sparklines, "_trends", trends)
    return calls


def test_sparklines_take_at_most_50_ids_and_are_kept(client, computed) -> None:
    ids = [f"s-{i:02d}" for i in range(EXPERIMENTS)]
    too_many = client.get("/api/sparklines", params={"ids": ",".join(ids + [f"x-{i}" for i in range(39)])})
    assert too_many.status_code == 422 and "at most 50 experiment ids" in too_many.json()["detail"]
    assert client.get("/api/sparklines", params={"points": 51, "ids": "s-00"}).status_code == 422
    first = client.get("/api/sparklines", params={"ids": ",".join(ids + ["nope"]), "points": 5}).json()
    assert sorted(first) == ids and first["s-11"]["experiments"] == [f"s-{i:02d}" for i in range(7, 12)]
    assert sorted(computed) == sorted(f"sparkline {i}" for i in ids)  # one pass over the series
    computed.clear()
    assert client.get("/api/sparklines", params={"ids": ",".join(ids), "points": 5}).json() == first
    assert computed == []  # asked again: nothing computed


def test_history_is_computed_once_whatever_trial_is_asked(client, computed) -> None:
    every = client.get("/api/history/long")
    assert every.status_code == 200 and computed == ["history long"]
    for trial, status in (("bs=1", 200), ("bs=2", 200), ("bs=nonexistent", 404), ("other=1", 404)):
        answer = client.get("/api/history/long", params={"trial": trial})
        assert answer.status_code == status, answer.text
        if status == 200:
            assert [t["params"]["bs"] for t in answer.json()["trials"]] == [int(trial[-1])]
            assert answer.headers["X-Kubebench-Cache"] == "hit"
    assert client.get("/api/history/long", params={"metric": "nope"}).status_code == 404
    assert computed == ["history long"]  # neither another trial, nor one matching none, nor a metric it lacks


def test_the_runs_table_is_bounded_by_rows(client, monkeypatch: pytest.MonkeyPatch) -> None:
    import kubebench.web.history as history

    whole = client.get("/api/table", params={"limit": 2000}).json()
    assert (len(whole["rows"]), whole["experiments"], whole["truncated"]) == (EXPERIMENTS * 4, EXPERIMENTS, False)
    monkeypatch.setattr(history, "MAX_TABLE_ROWS", 10)  # the same rule as 5,000 rows, on a small store
    cut = client.get("/api/table", params={"limit": 2000}).json()
    assert (len(cut["rows"]), cut["experiments"], cut["truncated"]) == (8, 2, True)  # 2 experiments × 4 trials
    assert {r["experiment"]["id"] for r in cut["rows"]} == {"s-11", "s-10"}  # the newest
