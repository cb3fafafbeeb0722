"""What a stored experiment says about its metrics: the declared ones, the primary one, each one's goal."""

from __future__ import annotations

import pytest

from kubebench.errors import SpecError
from kubebench.store.records import ExperimentRecord


def experiment(spec_text: str) -> ExperimentRecord:
    return ExperimentRecord(id="exp-1", name="s", backend="local", source="s.yaml", spec_text=spec_text,
                            job_fingerprint="f", created_at=0.0, updated_at=0.0)


SPEC = """
name: s
metrics:
  - {name: images_per_sec}
  - {name: step_time, goal: minimize, primary: true}
  - not a mapping
  - {unit: s}
"""


def test_declared_metrics_primary_and_goals() -> None:
    record = experiment(SPEC)
    assert [m["name"] for m in record.declared_metrics()] == ["images_per_sec", "step_time"]
    assert record.primary_metric() == "step_time"
    assert record.metric_goal(None) == ("step_time", "minimize")
    assert record.metric_goal("images_per_sec") == ("images_per_sec", "maximize")  # the default goal
    assert record.metric_goal("undeclared") == ("undeclared", "maximize")


def test_without_a_primary_the_first_declared_metric_is_analysed() -> None:
    assert experiment("metrics: [{name: a}, {name: b, goal: minimize}]").metric_goal(None) == ("a", "maximize")


@pytest.mark.parametrize("spec_text", ["name: s", "metrics: [", "just text", ""])
def test_no_metrics_declared_asks_for_one_by_name(spec_text: str) -> None:
    record = experiment(spec_text)
    assert record.declared_metrics() == [] and record.primary_metric() is None
    with pytest.raises(SpecError, match=r"^experiment 'exp-1' declares no metrics: choose one with --metric$"):
        record.metric_goal(None)


def test_trial_results_count_runs_by_state_and_keep_succeeded_metrics_in_order() -> None:
    from kubebench.store.records import json_objects, trial_results

    rows = [("t1", "succeeded", '{"v": 1}'), ("t1", "failed", None), ("t2", "succeeded", '{"v": 2}'),
            ("t1", "succeeded", '{"v": 3}'), ("t3", "failed", None), ("t1", "failed", None)]
    found = trial_results(rows, {"t1": {"n": 1}, "t2": {"n": 2}})
    assert [(t.trial_id, t.params, t.runs_by_status, t.metrics) for t in found] == [
        ("t1", {"n": 1}, {"succeeded": 2, "failed": 2}, [{"v": 1}, {"v": 3}]),
        ("t2", {"n": 2}, {"succeeded": 1}, [{"v": 2}]),
        ("t3", {}, {"failed": 1}, []),  # a trial without parameters recorded
    ]
    # runs whose step time drifted are counted (info as text from SQLite, parsed from psycopg)
    drifted = trial_results([("t1", "succeeded", '{"v": 1}', '{"drifting": "yes: step time changed by -51.0%"}'),
                             ("t1", "succeeded", '{"v": 2}', {"drifting": "yes"}), ("t1", "succeeded", "{}", "{}"),
                             ("t1", "failed", None, '{"drifting": "yes"}')], {})
    assert drifted[0].drifting == 2
    # psycopg hands JSON columns over parsed; SQLite as text; null is no metrics
    assert json_objects([{"a": 1}, '{"b": 2}', None]) == [{"a": 1}, {"b": 2}, {}]
    assert json_objects(['{"b": 2}', None]) == [{"b": 2}, {}]
