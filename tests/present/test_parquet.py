"""Parquet export: the CSV's columns, typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.present.parquet import write_parquet
from kubebench.store.records import RunRecord

pq = pytest.importorskip("pyarrow.parquet")


def record(run_id: str, params: dict, metrics: dict, status: str = "succeeded") -> RunRecord:
    return RunRecord(run_id=run_id, experiment_id="e", trial_id="t" + run_id, repeat=0, warmup=False,
                     status=status, params=params, metrics=metrics, started_at=10.0, finished_at=12.5,
                     exit_code=0 if status == "succeeded" else 3, reason="" if status == "succeeded" else "boom")


def test_columns_keep_their_types_and_missing_values_are_null(tmp_path: Path) -> None:
    runs = [record("a", {"bs": 8, "lr": 0.1, "opt": "sgd", "amp": True, "layers": [1, 2], "mix": 1},
                   {"ips": 10.0, "loss": 0.5}),
            record("b", {"bs": 16, "lr": 1, "opt": "adam", "layers": [3], "mix": "x"}, {"ips": 20.0}, "failed")]
    path = tmp_path / "r.parquet"
    write_parquet(runs, path)
    table = pq.read_table(path)
    assert table.column_names == ["run_id", "trial_id", "repeat", "status", "param.bs", "param.lr", "param.opt",
                                  "param.amp", "param.layers", "param.mix", "metric.ips", "metric.loss",
                                  "started_at", "finished_at", "duration_s", "exit_code", "reason"]
    types = {f.name: str(f.type) for f in table.schema}
    assert (types["param.bs"], types["param.lr"], types["param.opt"], types["param.amp"]) == (
        "int64", "double", "string", "bool")
    assert types["param.layers"] == "list<item: int64>" or types["param.layers"].startswith("list<")
    assert types["metric.ips"] == "double" and types["exit_code"] == "int64" and types["param.mix"] == "string"
    rows = table.to_pylist()
    assert rows[0]["param.layers"] == [1, 2] and rows[1]["param.amp"] is None and rows[1]["metric.loss"] is None
    assert (rows[0]["param.mix"], rows[1]["param.mix"]) == ("1", "x")
    assert (rows[0]["duration_s"], rows[1]["exit_code"], rows[1]["reason"]) == (2.5, 3, "boom")
    assert table.schema.metadata[b"kubebench.format_version"] == b"3"
    assert str(table.schema.field("started_at").type) == "timestamp[ms, tz=UTC]"
    assert rows[0]["started_at"].isoformat() == "1970-01-01T00:00:10+00:00"
