"""The plan: trials × repeats = runs, in rounds, with stable content-hash ids; experiment ids."""

from __future__ import annotations

import calendar
import re

import pytest

from kubebench.errors import PlanError
from kubebench.plan.plan import Plan, Run, Trial, digest, make_plan, new_experiment_id
from kubebench.spec.model import BenchmarkSpec

EXP = "bench-202401010000-abcd"
FP = "fingerprint-1"


def spec(**fields: object) -> BenchmarkSpec:
    data: dict[str, object] = {
        "name": "bench",
        "job": {"command": ["echo"]},
        "parameters": {"batch": [16, 32], "workers": [1, 2]},
    }
    data.update(fields)
    return BenchmarkSpec.model_validate(data)


def run_ids(plan: Plan) -> list[str]:
    return [r.id for r in plan.runs]


# --- counts and order ------------------------------------------------------------------------


def test_one_trial_per_parameter_point_in_sweep_order() -> None:
    plan = make_plan(spec(), EXP, FP)
    assert [t.params for t in plan.trials] == [
        {"batch": 16, "workers": 1},
        {"batch": 16, "workers": 2},
        {"batch": 32, "workers": 1},
        {"batch": 32, "workers": 2},
    ]
    assert [t.index for t in plan.trials] == [0, 1, 2, 3]
    assert plan.experiment_id == EXP and plan.job_fingerprint == FP


def test_runs_are_trials_times_repeats() -> None:
    plan = make_plan(spec(repeats=3), EXP, FP)
    assert len(plan.trials) == 4
    assert len(plan.runs) == 12
    assert all(not r.warmup for r in plan.runs)
    assert len(set(run_ids(plan))) == 12


def test_runs_go_in_rounds() -> None:
    plan = make_plan(spec(repeats=3), EXP, FP)
    assert [r.repeat for r in plan.runs] == [0] * 4 + [1] * 4 + [2] * 4
    assert [r.trial.index for r in plan.runs] == [0, 1, 2, 3] * 3


def test_warmup_runs_come_first_and_are_flagged() -> None:
    plan = make_plan(spec(repeats=2, warmup_runs=1), EXP, FP)
    assert len(plan.runs) == 4 * 3
    warm, counted = plan.runs[:4], plan.runs[4:]
    assert all(r.warmup for r in warm) and [r.repeat for r in warm] == [0] * 4
    assert not any(r.warmup for r in counted)
    assert [r.repeat for r in counted] == [0] * 4 + [1] * 4
    assert len(set(run_ids(plan))) == 12


def test_several_warmups_also_go_in_rounds() -> None:
    plan = make_plan(spec(parameters={"a": [1, 2]}, warmup_runs=2), EXP, FP)
    assert [(r.warmup, r.repeat, r.trial.index) for r in plan.runs] == [
        (True, 0, 0),
        (True, 0, 1),
        (True, 1, 0),
        (True, 1, 1),
        (False, 0, 0),
        (False, 0, 1),
    ]


def test_warmup_and_counted_runs_of_the_same_repeat_have_different_ids() -> None:
    plan = make_plan(spec(parameters={}, warmup_runs=1), EXP, FP)
    warm, counted = plan.runs
    assert (warm.repeat, counted.repeat) == (0, 0)
    assert warm.id != counted.id


def test_repeats_argument_overrides_the_spec() -> None:
    plan = make_plan(spec(repeats=3), EXP, FP, repeats=1)
    assert len(plan.runs) == 4
    assert {r.repeat for r in plan.runs} == {0}


def test_spec_without_parameters_gives_one_trial() -> None:
    plan = make_plan(spec(parameters={}, repeats=2), EXP, FP)
    assert len(plan.trials) == 1 and plan.trials[0].params == {}
    assert len(plan.runs) == 2


def test_include_and_exclude_reach_the_plan() -> None:
    plan = make_plan(spec(exclude=[{"workers": 2}], include=[{"batch": 64, "workers": 4}]), EXP, FP)
    assert [t.params for t in plan.trials] == [
        {"batch": 16, "workers": 1},
        {"batch": 32, "workers": 1},
        {"batch": 64, "workers": 4},
    ]


def test_zip_mode_reaches_the_plan() -> None:
    plan = make_plan(spec(sweep="zip"), EXP, FP)
    assert [t.params for t in plan.trials] == [{"batch": 16, "workers": 1}, {"batch": 32, "workers": 2}]


def test_sweep_errors_propagate() -> None:
    with pytest.raises(PlanError):
        make_plan(spec(parameters={"a": [1, 2], "b": [1]}, sweep="zip"), EXP, FP)


def test_plan_values_are_frozen() -> None:
    plan = make_plan(spec(), EXP, FP)
    with pytest.raises(AttributeError):
        plan.runs[0].repeat = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        plan.trials[0].id = "x"  # type: ignore[misc]


# --- ids -------------------------------------------------------------------------------------


def test_ids_are_short_hex() -> None:
    plan = make_plan(spec(), EXP, FP)
    assert all(re.fullmatch(r"[0-9a-f]{10}", t.id) for t in plan.trials)
    assert all(re.fullmatch(r"[0-9a-f]{12}", r.id) for r in plan.runs)


def test_ids_are_stable_across_calls() -> None:
    first = make_plan(spec(repeats=2, warmup_runs=1), EXP, FP)
    second = make_plan(spec(repeats=2, warmup_runs=1), EXP, FP)
    assert [t.id for t in first.trials] == [t.id for t in second.trials]
    assert run_ids(first) == run_ids(second)
    assert first == second


def test_ids_are_stable_against_a_known_value() -> None:
    trial = make_plan(spec(parameters={"a": 1}), "exp", "fp").trials[0]
    assert trial.id == digest("exp", "fp", {"a": 1}, length=10)
    run = make_plan(spec(parameters={"a": 1}), "exp", "fp").runs[0]
    assert run.id == digest(trial.id, 0, False)


def test_trial_ids_do_not_depend_on_parameter_order() -> None:
    a = make_plan(spec(parameters={"x": [1, 2], "y": 3}), EXP, FP)
    b = make_plan(spec(parameters={"y": 3, "x": [1, 2]}), EXP, FP)
    assert [t.id for t in a.trials] == [t.id for t in b.trials]


def test_another_experiment_id_gives_other_ids() -> None:
    a, b = make_plan(spec(), EXP, FP), make_plan(spec(), EXP + "x", FP)
    assert not {t.id for t in a.trials} & {t.id for t in b.trials}
    assert not set(run_ids(a)) & set(run_ids(b))


def test_another_job_fingerprint_gives_other_ids() -> None:
    a, b = make_plan(spec(), EXP, FP), make_plan(spec(), EXP, "fingerprint-2")
    assert not {t.id for t in a.trials} & {t.id for t in b.trials}
    assert not set(run_ids(a)) & set(run_ids(b))


def test_a_trial_keeps_its_id_when_the_sweep_grows() -> None:
    small = make_plan(spec(parameters={"a": [1, 2]}), EXP, FP)
    large = make_plan(spec(parameters={"a": [0, 1, 2, 3]}), EXP, FP)
    by_params = {t.params["a"]: t.id for t in large.trials}
    assert [t.id for t in small.trials] == [by_params[1], by_params[2]]


def test_more_repeats_keep_the_ids_of_the_first_ones_for_resume() -> None:
    first = make_plan(spec(repeats=2), EXP, FP)
    more = make_plan(spec(repeats=2), EXP, FP, repeats=5)
    assert len(more.runs) == 4 * 5
    earlier = [r.id for r in more.runs if r.repeat < 2]
    assert earlier == run_ids(first)
    assert [r.id for r in more.runs[: len(first.runs)]] == run_ids(first)
    assert len(set(run_ids(more))) == 20


def test_duplicate_parameter_values_are_refused_rather_than_giving_duplicate_run_ids() -> None:
    with pytest.raises(PlanError, match=r"repeats the parameter point \{'batch': 16\}; list each value once"):
        make_plan(spec(parameters={"batch": [16, 16]}), EXP, FP)


def test_digest_is_stable_and_sized() -> None:
    assert digest("a", 1, {"b": 2}) == digest("a", 1, {"b": 2})
    assert len(digest("a")) == 12 and len(digest("a", length=20)) == 20
    assert digest({"x": 1, "y": 2}) == digest({"y": 2, "x": 1})
    assert digest("a") != digest("b")


# --- run labels ------------------------------------------------------------------------------


def test_run_label_shows_parameters_and_repeat() -> None:
    trial = Trial(id="t", index=0, params={"batch": 16, "lr": 0.1})
    assert Run(id="r", trial=trial, repeat=0).label == "batch=16, lr=0.1 (repeat 0)"
    assert Run(id="r", trial=trial, repeat=1, warmup=True).label == "batch=16, lr=0.1 (warm-up 1)"
    assert Run(id="r", trial=Trial("t", 0, {}), repeat=2).label == "no parameters (repeat 2)"


# --- experiment ids --------------------------------------------------------------------------

STAMP_TIME = calendar.timegm((2024, 3, 5, 14, 7, 59, 0, 0, 0))


def test_experiment_id_format() -> None:
    eid = new_experiment_id("PyTorch CNN_v2!", now=STAMP_TIME)
    assert re.fullmatch(r"pytorch-cnn-v2-202403051407-[a-z0-9]{4}", eid), eid


def test_experiment_id_uses_utc_minutes() -> None:
    assert new_experiment_id("x", now=0).startswith("x-197001010000-")


def test_experiment_id_uses_the_current_time_by_default() -> None:
    assert re.fullmatch(r"bench-\d{12}-[a-z0-9]{4}", new_experiment_id("bench"))


def test_experiment_id_suffix_is_random() -> None:
    ids = {new_experiment_id("x", now=STAMP_TIME) for _ in range(300)}
    assert len(ids) > 1
    assert all(re.fullmatch(r"x-\d{12}-[a-z0-9]{4}", i) for i in ids)  # DNS-1123 characters only


@pytest.mark.parametrize(
    ("name", "slug"), [("", "benchmark"), ("!!!", "benchmark"), ("--a--b--", "a-b"), ("Café", "caf")]
)
def test_experiment_id_slug_edge_cases(name: str, slug: str) -> None:
    assert new_experiment_id(name, now=0).startswith(f"{slug}-197001010000-")


def test_experiment_id_slug_is_cut_to_40_characters() -> None:
    eid = new_experiment_id("a" * 100, now=0)
    assert eid.startswith("a" * 40 + "-197001010000-")
    assert len(eid) == 40 + 1 + 12 + 1 + 4


def test_cut_slug_does_not_end_with_a_dash() -> None:
    eid = new_experiment_id("a" * 39 + " b", now=0)
    assert "--" not in eid
