"""JSON and CSV exports of run records."""

from __future__ import annotations

import csv
import io
import json

from kubebench.present.export import to_csv, to_json
from kubebench.store.records import RunRecord


def record(run_id: str, params: dict, metrics: dict, status: str = "succeeded") -> RunRecord:
    return RunRecord(run_id=run_id, experiment_id="e", trial_id="t" + run_id, repeat=0, warmup=False,
                     status=status, params=params, metrics=metrics, started_at=10.0, finished_at=12.5,
                     exit_code=0 if status == "succeeded" else 3, reason="" if status == "succeeded" else "boom")


RUNS = [
    record("a", {"bs": 8, "layers": [1, 2]}, {"ips": 10.0, "loss": 0.5}),
    record("b", {"bs": 16, "extra": True}, {"ips": 20.0}, status="failed"),
]


def test_json_is_a_list_of_run_objects() -> None:
    data = json.loads(to_json(RUNS))
    assert [r["run_id"] for r in data] == ["a", "b"]
    assert data[0]["params"] == {"bs": 8, "layers": [1, 2]}
    assert data[0]["metrics"] == {"ips": 10.0, "loss": 0.5}
    assert data[0]["duration_s"] == 2.5
    assert data[0]["started_at"] == "1970-01-01T00:00:10.000+00:00" and data[0]["started_at_epoch"] == 10.0
    assert data[0]["finished_at"] == "1970-01-01T00:00:12.500+00:00" and data[0]["finished_at_epoch"] == 12.5
    assert (data[1]["status"], data[1]["exit_code"], data[1]["reason"]) == ("failed", 3, "boom")


def test_csv_columns_cover_every_run_and_blank_what_is_missing() -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(RUNS))))
    header = list(rows[0])
    assert header == ["run_id", "trial_id", "repeat", "status", "param.bs", "param.layers", "param.extra",
                      "metric.ips", "metric.loss", "started_at", "finished_at", "duration_s", "exit_code", "reason"]
    assert rows[0]["started_at"] == "1970-01-01T00:00:10.000+00:00"
    assert rows[0]["param.layers"] == "[1, 2]" and rows[0]["param.extra"] == ""
    assert rows[1]["metric.loss"] == "" and rows[1]["param.extra"] == "True"
