"""Each trial's phases over its repeats, the median's distribution-free interval, the phase split of
two experiments' end-to-end times, and gates on phases."""

from __future__ import annotations

import math

import pytest

from kubebench.analyse.startup import (
    PhaseSplit,
    failing,
    median_interval,
    parse_phase_gate,
    phase_overheads,
    phase_stat,
    startup,
)
from kubebench.errors import SpecError
from kubebench.store.records import RunRecord


def run(exp: str, trial: str, i: int, metrics: dict[str, float], params: dict | None = None, **extra) -> RunRecord:
    return RunRecord(run_id=f"{exp}-{trial}-{i}", experiment_id=exp, trial_id=trial, repeat=i, warmup=False,
                     status=extra.pop("status", "succeeded"), params=params or {"w": trial}, metrics=metrics, **extra)


def test_the_median_interval_needs_enough_runs_and_covers_as_asked() -> None:
    assert all(math.isnan(v) for v in median_interval([1, 2, 3, 4, 5]))  # 5 runs cover 93.75% at most
    assert median_interval([5, 1, 4, 2, 3, 6]) == (1, 6)  # 6 runs: 96.9% with the outermost pair
    low, high = median_interval(list(range(100)))
    assert (low, high) == (39, 60)  # the binomial(100, ½) ranks of a 95% interval
    assert median_interval(list(range(100)), 0.5)[0] > low
    assert all(math.isnan(v) for v in median_interval([]))


def test_trials_phases_from_their_succeeded_runs() -> None:
    runs = [run("e", "a", i, {"scheduling_seconds": 1.0 + i, "end_to_end_seconds": 10.0, "v": 3.0}) for i in range(3)]
    runs.append(run("e", "a", 9, {"scheduling_seconds": 99.0}, status="failed"))
    runs += [run("e", "b", 0, {"scheduling_seconds": 5.0, "end_to_end_seconds": 20.0})]
    (a, b) = startup(runs)
    assert [p.metric for p in a.phases] == ["scheduling_seconds", "end_to_end_seconds"]
    assert a.get("scheduling_seconds").median == 2.0 and a.get("scheduling_seconds").n == 3
    assert b.get("end_to_end_seconds").median == 20.0 and a.get("queue_seconds") is None
    assert startup([run("e", "a", 0, {"v": 1.0})]) == []


def test_the_split_names_the_phases_that_differ_most() -> None:
    bare = [run("b", "x", i, {"imports_seconds": 2.0, "train_seconds": 5.0, "end_to_end_seconds": 7.0})
            for i in range(3)]
    platform = [run("p", "x", i, {"imports_seconds": 3.5, "rendezvous_seconds": 0.8, "train_seconds": 5.05,
                                  "end_to_end_seconds": 9.35}) for i in range(3)]
    ((params, split),) = phase_overheads(bare, platform)
    assert params == {"w": "x"} and split.total == pytest.approx(2.35)
    assert [m for m, _ in split.deltas][:2] == ["imports_seconds", "rendezvous_seconds"]
    assert split.main() == [("imports_seconds", pytest.approx(1.5)), ("rendezvous_seconds", pytest.approx(0.8))]
    assert PhaseSplit(0.0, ()).main() == []


@pytest.mark.parametrize(("text", "metric", "stat", "op", "limit"), [
    ("startup_seconds:p95<5s", "startup_seconds", "p95", "<", 5.0),
    ("overhead_fraction:<10%", "overhead_fraction", "median", "<", 0.1),
    ("image_pull_seconds:max<250ms", "image_pull_seconds", "max", "<", 0.25),
    ("queue_seconds:mean<2m", "queue_seconds", "mean", "<", 120.0),
    ("train_seconds:>1", "train_seconds", "median", ">", 1.0),
])
def test_gates_are_read_as_written(text, metric, stat, op, limit) -> None:
    gate = parse_phase_gate(text)
    assert (gate.metric, gate.stat, gate.op, gate.limit) == (metric, stat, op, pytest.approx(limit))


@pytest.mark.parametrize("text", ["startup:<5s", "startup_seconds<5s", "startup_seconds:p95<5%",
                                  "overhead_fraction:<0.1s", "startup_seconds:p95<fast"])
def test_a_gate_not_understood_says_the_form(text) -> None:
    with pytest.raises(SpecError, match="invalid --fail-on rule"):
        parse_phase_gate(text)


def test_a_trial_past_a_gate_or_without_its_phase_fails_it() -> None:
    trials = startup([run("e", "a", i, {"startup_seconds": v}) for i, v in enumerate((1.0, 2.0, 9.0))])
    assert failing(trials, [parse_phase_gate("startup_seconds:median<5s")]) == []
    ((trial, gate, value),) = failing(trials, [parse_phase_gate("startup_seconds:p95<5s")])
    assert value == pytest.approx(8.3)
    assert failing(trials, [parse_phase_gate("startup_seconds:max<10s"), parse_phase_gate("startup_seconds:mean<5s")]) == []
    missing = failing(trials, [parse_phase_gate("queue_seconds:<1s")])
    assert len(missing) == 1 and math.isnan(missing[0][2])
    assert phase_stat("x", []).quantile(0.5) != phase_stat("x", []).quantile(0.5)  # nan
