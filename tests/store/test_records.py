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
