"""The gate's tests of one experiment against another (``kubebench check BASE CANDIDATE``)."""

from __future__ import annotations

from kubebench.analyse.gate import pair_tests
from kubebench.store.records import RunRecord


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
