"""Experiments compared trial by trial (their JSON form and the note on the family of trials), the platform
overhead per matched trial, and the worker parameter of a scaling study (analyse/experiments.py), in-process."""

from __future__ import annotations

import math

import pytest
from support.runs import runs

from kubebench.analyse.experiments import compare_experiments, family_note, overheads, workers_parameter
from kubebench.errors import SpecError
from kubebench.store.records import RunRecord

LEVEL = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]


BASE = runs("b", {"t8": ({"bs": 8}, LEVEL), "t16": ({"bs": 16}, [2 * v for v in LEVEL]),
                  "t32": ({"bs": 32}, [3 * v for v in LEVEL])}, failed={"t16": 2})
CANDIDATE = runs("c", {"t8": ({"bs": 8}, [0.8 * v for v in LEVEL]), "t16": ({"bs": 16}, [2 * v for v in LEVEL])},
                 failed={"t8": 1})


def test_the_json_form_of_a_comparison_names_the_metric_failed_runs_and_adjusted_p() -> None:
    rows = compare_experiments(BASE, CANDIDATE, "ips", "maximize")
    by_bs = {row.params["bs"]: row.to_dict() for row in rows}
    assert [by_bs[bs]["metric"] for bs in (8, 16, 32)] == ["ips"] * 3
    assert by_bs[8]["verdict"] == "regressed" and by_bs[8]["ratio"] == pytest.approx(0.8)
    assert (by_bs[8]["base"]["failed"], by_bs[8]["candidate"]["failed"]) == (0, 1)
    assert (by_bs[16]["base"]["failed"], by_bs[16]["candidate"]["failed"]) == (2, 0)
    assert by_bs[32]["missing"] and by_bs[32]["adjusted_p"] is None and by_bs[32]["correction"] == "holm"
    assert 0 < by_bs[8]["adjusted_p"] < 0.05


def test_the_family_note_counts_the_trials_tested_and_names_the_correction() -> None:
    rows = compare_experiments(BASE, CANDIDATE, "ips", "maximize")
    assert family_note(rows) == "the verdict's p adjusted over the 2 trials tested (Holm (family-wise error rate))"
    rows = compare_experiments(BASE, CANDIDATE, "ips", "maximize", correction="bh")
    assert family_note(rows) == ("the verdict's p adjusted over the 2 trials tested "
                                 "(Benjamini–Hochberg (false discovery rate))")
    assert family_note(compare_experiments(BASE, CANDIDATE, "ips", "maximize", correction=None)) == ""
    one = [r for r in BASE if r.trial_id == "t8"], [r for r in CANDIDATE if r.trial_id == "t8"]
    assert family_note(compare_experiments(*one, "ips", "maximize")) == ""


@pytest.mark.parametrize("goal, expected", [("maximize", 0.25), ("minimize", -0.2)])
def test_the_overhead_of_each_matched_trial_from_bare_to_platform(goal: str, expected: float) -> None:
    found = overheads(BASE, CANDIDATE, "ips", goal)
    assert [params for params, _ in found] == [{"bs": 8}, {"bs": 16}]  # bs=32 was not run on the platform
    [(_, slower), (_, same)] = found
    assert slower.goal == goal and slower.overhead == pytest.approx(expected)
    assert (slower.bare.median, slower.platform.median, slower.platform.n) == (100.0, 80.0, 7)
    assert slower.ci[0] <= slower.overhead <= slower.ci[1] and not math.isnan(slower.ci[0])
    assert same.overhead == pytest.approx(0.0)


def test_the_worker_parameter_is_the_one_swept_name_that_holds_a_count() -> None:
    def study(*params: dict) -> list[RunRecord]:
        return runs("s", {f"t{i}": (p, [1.0]) for i, p in enumerate(params)})

    assert workers_parameter(study({"gpus": 1, "lr": 0.1}, {"gpus": 2, "lr": 0.1}), "ips") == "gpus"
    with pytest.raises(SpecError) as several:
        workers_parameter(study({"nodes": 1, "gpus": 1}, {"nodes": 2, "gpus": 2}), "ips")
    assert str(several.value) == ("several swept parameters could be the number of workers (nodes, gpus): "
                                  "choose one with --workers-param")
    with pytest.raises(SpecError) as none_named:
        workers_parameter(study({"lr": 0.1, "bs": 8}, {"lr": 0.2, "bs": 16}), "ips")
    assert str(none_named.value) == ("no swept parameter holds a number of workers (workers, nodes, gpus, replicas …); "
                                     "swept: lr, bs; name it with --workers-param")
    with pytest.raises(SpecError) as nothing_swept:
        workers_parameter(study({"gpus": 1}), "ips")
    assert str(nothing_swept.value).endswith("swept: none; name it with --workers-param")
