"""The datasets an experiment read (schema 8), on SQLite and PostgreSQL: recorded per start of the
experiment, refused when a dataset's key changed, found by key, and deleted with the experiment."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select

from kubebench.errors import StoreError
from kubebench.store import schema
from kubebench.store.data_records import DataRecord


def used(exp: str, name: str = "digits", key: str = "k1", trials: tuple[str, ...] = ("t1",), seconds: float = 2.0,
         prepared: bool = True) -> DataRecord:
    return DataRecord(experiment_id=exp, name=name, key=key, checksum="sha256:" + "a" * 64, source="url",
                      origin="s3://b/d.tar", trials=list(trials), files=10, bytes=5_000_000_000, seconds=seconds,
                      prepared=prepared, recorded_at=time.time())


def test_each_start_adds_its_time_and_trials(store, begin) -> None:
    begin(store, "exp-1")
    assert store.data("exp-1") == [] and store.experiment("exp-1").data_prepare_seconds is None
    store.record_data("exp-1", [used("exp-1", trials=("t1",), seconds=2.0)], 2.5)
    store.record_data("exp-1", [used("exp-1", trials=("t2",), seconds=0.1, prepared=False)], 0.2)  # a resume
    [found] = store.data("exp-1")
    assert (found.trials, found.seconds, found.prepared, found.bytes) == (["t1", "t2"], pytest.approx(2.1), True,
                                                                          5_000_000_000)
    assert store.experiment("exp-1").data_prepare_seconds == pytest.approx(2.7)


def test_a_dataset_whose_key_changed_is_refused(store, begin) -> None:
    begin(store, "exp-1")
    store.record_data("exp-1", [used("exp-1")], 1.0)
    with pytest.raises(StoreError, match="experiment 'exp-1' was started with other data for dataset 'digits'"):
        store.record_data("exp-1", [used("exp-1", key="k2")], 1.0)
    assert [d.key for d in store.data("exp-1")] == ["k1"] and store.experiment("exp-1").data_prepare_seconds == 1.0


def test_experiments_are_found_by_key_oldest_first_and_deleted_with_their_data(store, begin) -> None:
    begin(store, "new", created_at=2000.0)
    begin(store, "old", created_at=1000.0)
    store.record_data("new", [used("new"), used("new", name="other", key="k9")], 1.0)
    store.record_data("old", [used("old")], 1.0)
    assert store.experiments_using({"k1", "k9", "none"}) == {"k1": ["old", "new"], "k9": ["new"]}
    store.delete_experiment("new")
    assert store.experiments_using({"k1", "k9"}) == {"k1": ["old"]}
    with store.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(schema.experiment_data)) == 1
