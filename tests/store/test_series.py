"""Series in the store (schema 7): labels, reading a series, accepted changes, noise floors, notes."""

from __future__ import annotations

import pytest

from kubebench.errors import NotFoundError, SpecError
from kubebench.store import series as s
from kubebench.store.reader import SqliteReader, open_results
from kubebench.store.series_records import NoiseFloor, parse_labels, swept_parameters, trial_key
from kubebench.testing.series import store_experiment


def _series(store, n: int = 3) -> None:
    for i in range(n):
        store_experiment(store, f"e{i}", "bench", {"ips": [[100.0 + i, 101.0 + i], [200.0, 201.0]]},
                         params=[{"bs": 8}, {"bs": 16}], created_at=1000.0 + i, labels={"version": f"1.{i}"},
                         provenance={"host": {"name": "h"}, "python": f"3.{i}"})


def test_labels_and_series_are_stored_with_the_experiment(store) -> None:
    _series(store, 1)
    record = store.experiment("e0")
    assert (record.series, record.labels) == ("bench", {"version": "1.0"})
    assert store.experiments()[0].labels == {"version": "1.0"}
    assert store.experiment_page().items[0].series == "bench"


def test_the_sqlite_reader_reads_labels_as_the_store_does(tmp_path) -> None:
    from kubebench.store.store import open_store

    url = f"sqlite:///{tmp_path / 'kb.db'}"
    store = open_store(url)
    _series(store, 1)
    reader = open_results(url)
    assert isinstance(reader, SqliteReader) and reader.experiment("e0") == store.experiment("e0")


def test_a_series_is_read_in_time_order_with_each_trials_runs(store) -> None:
    _series(store)
    store_experiment(store, "other", "another", {"ips": [[1.0]]}, created_at=999.0)
    data = s.read_series(store, "bench", environments=True)
    assert [e.id for e in data.experiments] == ["e0", "e1", "e2"]
    assert [e.labels["version"] for e in data.experiments] == ["1.0", "1.1", "1.2"]
    key8 = trial_key({"bs": 8})
    assert data.params[key8] == {"bs": 8}
    assert [m["ips"] for m in data.runs[key8]["e2"]] == [102.0, 103.0]
    assert data.environments["e1"]["python"] == "3.1"
    assert [e.id for e in s.read_series(store, "bench", since=1001.0).experiments] == ["e1", "e2"]
    assert s.resolve_series(store, "e1") == "bench"
    assert s.series_list(store)[0][:2] == ("bench", 3)
    with pytest.raises(NotFoundError, match="no series or experiment 'nope'"):
        s.resolve_series(store, "nope")


def test_accepted_changes_are_checked_and_kept(store) -> None:
    _series(store)
    s.accept_change(store, "bench", "e1", note="new kernel")
    s.accept_change(store, "bench", "e1", note="new kernel, really")  # replaces, not duplicates
    [change] = s.accepted_changes(store, "bench")
    assert (change.experiment_id, change.metric, change.note) == ("e1", "", "new kernel, really")
    with pytest.raises(NotFoundError, match="no experiment 'e9'"):
        s.accept_change(store, "bench", "e9")
    store_experiment(store, "x", "another", {"ips": [[1.0]]})
    with pytest.raises(SpecError, match="belongs to series 'another'"):
        s.accept_change(store, "bench", "x")


def test_noise_floors_and_notes_round_trip_and_go_with_the_experiment(store) -> None:
    _series(store)
    floor = NoiseFloor(trial_key({"bs": 8}), "ips", 0.012, 0.01, ("e0", "e1"), 4)
    s.save_noise_floors(store, "bench", [floor])
    s.save_noise_floors(store, "bench", [floor])
    assert s.noise_floors(store, "bench") == {(floor.trial_key, "ips"): floor}
    assert s.set_note(store, "e0", "warm cache", ["nightly", " ", "nightly", "gpu"]) == {
        "note": "warm cache", "tags": ["gpu", "nightly"]}
    assert s.set_note(store, "e0", tags=["x"]) == {"note": "warm cache", "tags": ["x"]}
    s.accept_change(store, "bench", "e0")
    assert s.notes(store, ["e0", "e1"]) == {"e0": {"note": "warm cache", "tags": ["x"]}}
    store.delete_experiment("e0")
    assert s.notes(store, ["e0"]) == {} and s.accepted_changes(store, "bench") == []


def test_labels_must_be_key_value() -> None:
    assert parse_labels(["version=1.4.2", "commit = abc123"]) == {"version": "1.4.2", "commit": "abc123"}
    for bad in ("version", "=x", "1x=2", "k="):
        with pytest.raises(SpecError, match="invalid --label"):
            parse_labels([bad])


def test_an_upgraded_store_puts_each_experiment_in_the_series_of_its_name(store_url: str) -> None:
    from test_migrate import make_v1_store  # rootdir-relative: tests/ has no packages
    from typer.testing import CliRunner

    from kubebench.cli import app
    from kubebench.store.store import open_store

    make_v1_store(store_url, before_alembic=False)
    assert CliRunner().invoke(app, ["db", "upgrade", "--store", store_url]).exit_code == 0
    store = open_store(store_url)
    assert (store.experiment("old-exp").series, store.experiment("old-exp").labels) == ("old", {})
    assert [e.id for e in s.read_series(store, "old").experiments] == ["old-exp"]
    store.engine.dispose()


def test_a_parameter_fixed_in_each_experiment_does_not_split_the_trials(store) -> None:
    # speed is fixed within each experiment (it describes the experiment), bs is swept: trials are bs=…
    for i, speed in enumerate((1.0, 0.9)):
        store_experiment(store, f"v{i}", "bench", {"ips": [[100.0], [200.0]]},
                         params=[{"bs": 8, "speed": speed}, {"bs": 16, "speed": speed}], created_at=1000.0 + i)
    data = s.read_series(store, "bench")
    assert sorted(data.params.values(), key=str) == [{"bs": 16}, {"bs": 8}]
    assert sorted(data.runs[trial_key({"bs": 8})]) == ["v0", "v1"]
    assert swept_parameters([("a", {"x": 1, "y": 1}), ("a", {"x": 2, "y": 1}), ("b", {"y": 2})]) == {"x"}


def test_the_sqlite3_series_reader_answers_what_the_store_answers(store_url: str) -> None:
    from kubebench.store.series_reader import SqliteSeries, StoreSeries, open_series
    from kubebench.store.store import open_store

    store = open_store(store_url)
    _series(store)
    store_experiment(store, "e9", "bench", {"ips": [[5.0, 6.0], [7.0]], "lat": [[1.0, 2.0], []]},
                     params=[{"bs": 8}, {"bs": 16}], created_at=2000.0, provenance={"host": {"name": "other"}})
    s.accept_change(store, "bench", "e1", note="n")
    s.save_noise_floors(store, "bench", [NoiseFloor(trial_key({"bs": 8}), "ips", 0.01, 0.02, ("e0", "e1"), 4)])
    fast, full = open_series(store_url), StoreSeries(store)
    assert isinstance(fast, SqliteSeries) == store_url.startswith("sqlite")
    for source in (fast, full):
        assert source.resolve_series("e2") == "bench" and source.newest_experiment("bench") == "e9"
        assert source.accepted_changes("bench") == s.accepted_changes(store, "bench")
        assert source.noise_floors("bench") == s.noise_floors(store, "bench")
        assert source.environments(["e0", "e9"]) == s.environments_of(store, ["e0", "e9"])
        with pytest.raises(NotFoundError, match="no series or experiment 'nope'"):
            source.resolve_series("nope")
    reference = s.read_series(store, "bench")
    assert fast.read_series("bench") == reference
    one = fast.read_series("bench", metrics=["ips"])
    assert (one.experiments, one.params) == (reference.experiments, reference.params)
    assert {k: {e: sorted(m["ips"] for m in runs) for e, runs in by_exp.items()} for k, by_exp in one.runs.items()} == \
        {k: {e: sorted(m["ips"] for m in runs) for e, runs in by_exp.items()} for k, by_exp in reference.runs.items()}
    assert fast.read_series("bench", since=1001.5).experiments == reference.experiments[2:]
    store.engine.dispose()
