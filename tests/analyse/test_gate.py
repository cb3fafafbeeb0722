"""The gate's tests of one experiment against another (``kubebench check BASE CANDIDATE``)."""

from __future__ import annotations

import pytest

from kubebench.analyse.gate import baseline, pair_tests, series_tests
from kubebench.errors import SpecError
from kubebench.store.records import RunRecord
from kubebench.store.series_records import AcceptedChange, SeriesData, SeriesExperiment, trial_key


def _run(experiment: str, workers: int, repeat: int, value: float) -> RunRecord:
    return RunRecord(run_id=f"{experiment}{workers}{repeat}", experiment_id=experiment, trial_id=f"t{workers}",
                     repeat=repeat, warmup=False, status="succeeded", params={"workers": workers},
                     metrics={"ips": value})


def test_a_trial_the_candidate_lacks_is_checked_with_no_candidate_values() -> None:
    base = [_run("b", w, r, 100.0 + r) for w in (1, 2) for r in range(3)]
    candidate = [_run("c", 1, r, 101.0 + r) for r in range(3)]  # no workers=2 trial
    tests = pair_tests(base, candidate, [("ips", "maximize")], {}, 0.05)
    by_workers = {t.params["workers"]: t for t in tests}
    assert set(by_workers) == {1, 2}
    assert by_workers[1].candidate == (101.0, 102.0, 103.0)
    assert by_workers[2].base == (100.0, 101.0, 102.0) and by_workers[2].candidate == ()


def test_a_threshold_is_looked_up_by_the_trial_s_swept_parameters_and_the_metric() -> None:
    def runs(experiment: str) -> list[RunRecord]:
        return [RunRecord(run_id=f"{experiment}{w}{r}", experiment_id=experiment, trial_id=f"t{w}", repeat=r, warmup=False,
                          status="succeeded", params={"workers": w, "model": "m"}, metrics={"ips": 100.0 + r})
                for w in (1, 2) for r in range(3)]

    # "model" is the same in every trial: the series keys trials (and their thresholds) by "workers" alone
    thresholds = {(trial_key({"workers": 2}), "ips"): 0.10, (trial_key({"workers": 1}), "lat"): 0.20}
    tests = pair_tests(runs("b"), runs("c"), [("ips", "maximize")], thresholds, 0.05)
    assert sorted((t.params["workers"], t.metric, t.threshold) for t in tests) == [(1, "ips", 0.05), (2, "ips", 0.10)]


def _series() -> SeriesData:
    one, two, three, four = (trial_key({"bs": b}) for b in (1, 2, 3, 4))
    ids = [f"e{i}" for i in range(5)]
    return SeriesData(
        "nightly", [SeriesExperiment(e, i, {}) for i, e in enumerate(ids)],
        params={k: {"bs": b} for b, k in enumerate((one, two, three, four), 1)},
        runs={one: {e: [{"ips": 100.0 + i, "lat": 10.0 + i}] for i, e in enumerate(ids)},
              two: {e: [{"ips": 200.0 + i}] for i, e in enumerate(ids[:4])},  # gone from the candidate e4
              three: {"e4": [{"ips": 300.0}]}})  # new in the candidate; bs=4 has no succeeded run at all


def test_series_tests_take_each_metric_s_baseline_and_keep_trials_one_side_lacks() -> None:
    # a step in latency accepted at e2: latency is measured from e2 on, throughput over the whole window
    accepted = [AcceptedChange("nightly", "e2", "lat", "faster disks", 0.0)]
    found = series_tests(_series(), "e4", [("ips", "maximize"), ("lat", "minimize")], {}, 0.05, accepted)
    assert found.baselines == {"ips": ["e0", "e1", "e2", "e3"], "lat": ["e2", "e3"]} and found.held == {}
    got = {(t.metric, t.params["bs"]): (t.base, t.candidate) for t in found.tests}
    assert got == {("ips", 1): ((100.0, 101.0, 102.0, 103.0), (104.0,)), ("ips", 2): ((200.0, 201.0, 202.0, 203.0), ()),
                   ("ips", 3): ((), (300.0,)), ("lat", 1): ((12.0, 13.0), (14.0,))}
    found = series_tests(_series(), "e4", [("ips", "maximize"), ("lat", "minimize")], {}, 0.05, accepted, window=3)
    assert found.baselines == {"ips": ["e1", "e2", "e3"], "lat": ["e2", "e3"]}


def test_series_tests_say_why_there_is_nothing_to_check() -> None:
    with pytest.raises(SpecError) as error:
        series_tests(_series(), "e9", [("ips", "maximize")], {}, 0.05)
    assert str(error.value) == "experiment 'e9' is not in series 'nightly'"
    with pytest.raises(SpecError) as error:
        series_tests(_series(), "e0", [("ips", "maximize")], {}, 0.05)
    assert str(error.value) == ("experiment 'e0' is the first of series 'nightly' (since its last accepted change): "
                                "nothing to check it against; run the benchmark again, or give BASE CANDIDATE")


def _stepped(levels: list[float], runs: int = 3) -> SeriesData:
    """A series of one trial whose experiments e0, e1 … run at ``levels`` (1% noise, seeded)."""
    import numpy as np

    rng = np.random.default_rng(1)
    key = trial_key({})
    ids = [f"e{i}" for i in range(len(levels))]
    return SeriesData("nightly", [SeriesExperiment(e, i, {}) for i, e in enumerate(ids)], params={key: {}},
                      runs={key: {e: [{"ips": level * (1 + 0.01 * rng.standard_normal())} for _ in range(runs)]
                                  for e, level in zip(ids, levels)}})


def test_the_baseline_never_straddles_a_change_point_not_accepted() -> None:
    # UX review 2026-12-02 #2: after a -9% step at e3, `check` passed e4 and e5 against a window of e0-e3 (e4)
    data = _stepped([1000.0] * 3 + [910.0] * 3)
    for candidate, window in (("e4", ["e0", "e1", "e2"]), ("e5", ["e0", "e1", "e2"])):
        found = series_tests(data, candidate, [("ips", "maximize")], {}, 0.02)
        assert found.baselines == {"ips": window} and found.held == {"ips": ["e3"]}
    # accepted: the new level from e3 on
    accepted = [AcceptedChange("nightly", "e3", "", "slower, safer", 0.0)]
    found = series_tests(data, "e5", [("ips", "maximize")], {}, 0.02, accepted)
    assert found.baselines == {"ips": ["e3", "e4"]} and found.held == {}
    # a change at the candidate itself holds nothing: the baseline is what came before it anyway
    assert series_tests(_stepped([1000.0] * 5 + [910.0]), "e5", [("ips", "maximize")], {}, 0.02).held == {}


def test_a_baseline_stops_at_the_first_change_after_the_accepted_one() -> None:
    data = SeriesData("s", [SeriesExperiment(f"e{i}", i, {}) for i in range(8)])
    accepted = [AcceptedChange("s", "e2", "", "", 0.0)]
    assert baseline(data, "e7", "ips", accepted, changes=["e1", "e5", "e6"]) == ["e2", "e3", "e4"]
    assert baseline(data, "e7", "ips", accepted, window=2, changes=["e5"]) == ["e3", "e4"]
    assert baseline(data, "e7", "ips", changes=["e7"]) == [f"e{i}" for i in range(7)]
