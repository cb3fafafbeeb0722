"""The spec's ``reference:`` (results as a fraction of a published figure) and the ``--fail-on reference`` gate,
in-process: which trials a reference applies to, the fraction and its CI either goal, and the gate's edges."""

from __future__ import annotations

import math

import pytest

from kubebench.analyse.reference import check_references, parse_reference_rule, references_of
from kubebench.errors import SpecError
from kubebench.spec.efficiency import Reference
from kubebench.store.records import RunRecord

GOALS = {"images_per_sec": "maximize", "latency_ms": "minimize"}


def run(trial: str, repeat: int, params: dict, metrics: dict, status: str = "succeeded",
        warmup: bool = False) -> RunRecord:
    return RunRecord(run_id=f"{trial}-{repeat}{'w' if warmup else ''}", experiment_id="e", trial_id=trial,
                     repeat=repeat, warmup=warmup, status=status, params=params, metrics=metrics)


def runs() -> list[RunRecord]:
    """rate=88 first (88, 89, 90 img/s; 60, 50, 40 ms) then rate=95 (95, 96, 97); a warm-up and a failure."""
    found = [run("t0", 0, {"rate": 88}, {"images_per_sec": 500.0}, warmup=True)]
    for i, (ips, ms) in enumerate([(88.0, 60.0), (89.0, 50.0), (90.0, 40.0)]):
        found.append(run("t0", i, {"rate": 88}, {"images_per_sec": ips, "latency_ms": ms}))
    for i, ips in enumerate([95.0, 96.0, 97.0]):
        found.append(run("t1", i, {"rate": 95}, {"images_per_sec": ips}))
    found.append(run("t1", 3, {"rate": 95}, {}, status="failed"))
    return found


def test_references_of_reads_a_list_or_one_mapping_and_leaves_out_what_does_not_validate() -> None:
    listed = references_of("name: x\nreference:\n"
                           "  - {metric: images_per_sec, value: -1, source: a}\n"  # value must be > 0
                           "  - {metric: images_per_sec, value: 100, source: a paper, where: {rate: 95}}\n")
    assert listed == [Reference(metric="images_per_sec", value=100, source="a paper", where={"rate": 95})]
    one = references_of("reference: {metric: latency_ms, value: 50, source: b, min_ratio: 0.9}\n")
    assert one == [Reference(metric="latency_ms", value=50, source="b", min_ratio=0.9)]
    for text in ("name: x\n", "", "reference: [1, {metric: m}]\n", "- a list\n", "reference: [unclosed\n"):
        assert references_of(text) == [], text


def test_each_reference_applies_to_the_trials_its_where_matches_in_trial_order() -> None:
    every = Reference(metric="images_per_sec", value=100, source="a")
    only95 = Reference(metric="images_per_sec", value=100, source="b", where={"rate": 95})
    checks = check_references(runs(), [every, only95], GOALS.__getitem__)
    assert [(c.params, c.reference.source, c.goal, c.values.n) for c in checks] == [
        ({"rate": 88}, "a", "maximize", 3), ({"rate": 95}, "a", "maximize", 3), ({"rate": 95}, "b", "maximize", 3)]
    assert [c.fraction for c in checks] == pytest.approx([0.89, 0.96, 0.96])
    assert check_references(runs(), [Reference(metric="images_per_sec", value=1, source="c", where={"rate": 1})],
                            GOALS.__getitem__) == []


def test_a_metric_to_maximize_is_median_over_reference_with_the_median_s_ci() -> None:
    ref = Reference(metric="images_per_sec", value=100, source="a", where={"rate": 95})
    [check] = check_references(runs(), [ref], GOALS.__getitem__)
    assert (check.params, check.reference, check.goal) == ({"rate": 95}, ref, "maximize")
    assert (check.values.n, check.values.median, check.values.failed) == (3, 96.0, 0)
    assert check.fraction == pytest.approx(0.96)
    assert check.ci == pytest.approx((0.95, 0.97))  # bootstrap of the median of 95, 96, 97
    assert check.passed() and check.passed(0.96) and not check.passed(0.97)


def test_a_metric_to_minimize_is_reference_over_median_and_its_ci_turned_over() -> None:
    ref = Reference(metric="latency_ms", value=45, source="a")
    check, unmeasured = check_references(runs(), [ref], GOALS.__getitem__)
    assert unmeasured.params == {"rate": 95} and unmeasured.values.n == 0 and not unmeasured.passed()
    assert (check.params, check.reference, check.goal, check.values.median) == ({"rate": 88}, ref, "minimize", 50.0)
    assert check.fraction == pytest.approx(0.9)  # 45 ms published, 50 ms measured
    assert check.ci == pytest.approx((45 / 60, 45 / 40))  # the median's CI is 40 … 60 ms
    assert not check.passed() and check.passed(0.9)


def test_the_gate_passes_a_fraction_exactly_at_its_limit_and_fails_one_below() -> None:
    exact = [run("t", i, {}, {"images_per_sec": 95.0}) for i in range(3)]
    [check] = check_references(exact, [Reference(metric="images_per_sec", value=100, source="a")], GOALS.__getitem__)
    assert check.fraction == 0.95 and check.passed() and check.passed(0.95) and not check.passed(0.951)
    low = [run("t", i, {}, {"images_per_sec": 50.0}) for i in range(3)]
    [check] = check_references(low, [Reference(metric="images_per_sec", value=100, source="a")], GOALS.__getitem__)
    assert not check.passed() and check.passed(0.5)


@pytest.mark.parametrize("values", [[], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
def test_a_trial_without_a_positive_median_has_no_fraction_and_fails_the_gate(values: list[float]) -> None:
    ref = Reference(metric="images_per_sec", value=100, source="a")
    records = [run("t", i, {"rate": 1}, {"images_per_sec": v}) for i, v in enumerate(values)]
    records.append(run("t", len(values), {"rate": 1}, {}, status="failed"))
    [check] = check_references(records, [ref], GOALS.__getitem__)
    assert (check.params, check.reference, check.goal, check.values.n) == ({"rate": 1}, ref, "maximize", len(values))
    assert math.isnan(check.fraction) and all(math.isnan(x) for x in check.ci) and len(check.ci) == 2
    assert not check.passed() and not check.passed(0.0001)


def test_one_value_or_a_median_below_one_still_has_a_fraction() -> None:
    one = check_references([run("t", 0, {}, {"images_per_sec": 95.0})],
                           [Reference(metric="images_per_sec", value=100, source="a")], GOALS.__getitem__)
    assert one[0].fraction == pytest.approx(0.95) and one[0].values.n == 1
    small = check_references([run("t", i, {}, {"images_per_sec": 0.5}) for i in range(3)],
                             [Reference(metric="images_per_sec", value=1, source="a")], GOALS.__getitem__)
    assert small[0].fraction == pytest.approx(0.5) and small[0].ci == pytest.approx((0.5, 0.5))


@pytest.mark.parametrize("text, ratio", [
    ("reference", None), (" reference ", None), ("reference:97%", 0.97), ("reference: 97.5 %", 0.975),
    ("reference:.5%", 0.005), ("reference:120%", 1.2),
])
def test_a_fail_on_rule_gives_the_least_fraction_that_passes(text: str, ratio: float | None) -> None:
    assert parse_reference_rule(text) == (None if ratio is None else pytest.approx(ratio))


@pytest.mark.parametrize("text", ["images:95%", "reference:", "reference:95", "reference:-5%", "references"])
def test_a_bad_fail_on_rule_is_one_clear_error(text: str) -> None:
    with pytest.raises(SpecError) as raised:
        parse_reference_rule(text)
    assert str(raised.value) == (f"invalid --fail-on rule {text!r}: expected 'reference' or 'reference:N%' "
                                 "(for example reference:95%, the least fraction of the reference that passes)")
