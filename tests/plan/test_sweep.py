"""Sweep expansion: grid and zip, fixed scalars, include and exclude, and empty sweeps."""

from __future__ import annotations

import pytest

from kubebench.errors import PlanError, SpecError
from kubebench.plan.sweep import expand


def test_grid_is_the_cartesian_product_in_stable_order() -> None:
    points = expand({"batch": [16, 32], "workers": [1, 2, 4]})
    assert points == [
        {"batch": 16, "workers": 1},
        {"batch": 16, "workers": 2},
        {"batch": 16, "workers": 4},
        {"batch": 32, "workers": 1},
        {"batch": 32, "workers": 2},
        {"batch": 32, "workers": 4},
    ]


def test_grid_is_the_default_mode() -> None:
    assert expand({"a": [1, 2], "b": [3, 4]}) == expand({"a": [1, 2], "b": [3, 4]}, "grid")


def test_expansion_is_repeatable() -> None:
    params = {"a": [3, 1, 2], "b": ["x", "y"], "c": 0.5}
    assert expand(params) == expand(params)


def test_list_order_is_kept_not_sorted() -> None:
    assert [p["a"] for p in expand({"a": [3, 1, 2]})] == [3, 1, 2]


def test_scalars_are_fixed_in_every_point() -> None:
    points = expand({"lr": 0.1, "batch": [8, 16], "model": "resnet"})
    assert points == [
        {"lr": 0.1, "batch": 8, "model": "resnet"},
        {"lr": 0.1, "batch": 16, "model": "resnet"},
    ]


def test_points_keep_the_parameter_order_of_the_spec() -> None:
    points = expand({"lr": 0.1, "batch": [8, 16], "model": "resnet"})
    assert [list(p) for p in points] == [["lr", "batch", "model"]] * 2


def test_only_scalars_give_one_point() -> None:
    assert expand({"a": 1, "b": "x"}) == [{"a": 1, "b": "x"}]


def test_no_parameters_give_one_empty_point() -> None:
    assert expand({}) == [{}]


def test_points_are_independent_dicts() -> None:
    points = expand({"a": [1, 2], "b": 3})
    points[0]["b"] = 99
    assert points[1]["b"] == 3


def test_zip_pairs_values_by_position() -> None:
    points = expand({"batch": [16, 32, 64], "lr": [0.1, 0.2, 0.4], "model": "m"}, "zip")
    assert points == [
        {"batch": 16, "lr": 0.1, "model": "m"},
        {"batch": 32, "lr": 0.2, "model": "m"},
        {"batch": 64, "lr": 0.4, "model": "m"},
    ]


def test_zip_with_unequal_lengths_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="zip needs lists of equal length") as info:
        expand({"a": [1, 2], "b": [1, 2, 3]}, "zip")
    assert "'a': 2" in str(info.value) and "'b': 3" in str(info.value)


def test_plan_error_is_a_spec_error() -> None:
    assert issubclass(PlanError, SpecError)


@pytest.mark.parametrize("params", [{"a": 1, "b": "x"}, {}])
def test_zip_with_only_fixed_values_gives_one_point(params: dict) -> None:
    assert expand(params, "zip") == [params]


def test_empty_list_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="parameter 'b' is an empty list"):
        expand({"a": [1], "b": []})


def test_empty_list_is_a_plan_error_in_zip_mode_too() -> None:
    with pytest.raises(PlanError, match="empty list"):
        expand({"a": []}, "zip")


def test_exclude_removes_matching_points() -> None:
    points = expand({"batch": [16, 32], "workers": [1, 2]}, exclude=[{"batch": 32, "workers": 2}])
    assert points == [{"batch": 16, "workers": 1}, {"batch": 16, "workers": 2}, {"batch": 32, "workers": 1}]


def test_exclude_with_a_partial_pattern_removes_every_match() -> None:
    points = expand({"batch": [16, 32], "workers": [1, 2]}, exclude=[{"workers": 2}])
    assert points == [{"batch": 16, "workers": 1}, {"batch": 32, "workers": 1}]


def test_several_exclude_entries_each_remove_their_matches() -> None:
    points = expand({"a": [1, 2, 3]}, exclude=[{"a": 1}, {"a": 3}])
    assert points == [{"a": 2}]


def test_exclude_on_an_unknown_key_removes_nothing() -> None:
    assert expand({"a": [1, 2]}, exclude=[{"b": 1}]) == [{"a": 1}, {"a": 2}]


def test_exclude_everything_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="exclude` removed every parameter point"):
        expand({"a": [1, 2]}, exclude=[{"a": 1}, {"a": 2}])


def test_include_adds_a_point_with_defaults_for_missing_keys() -> None:
    points = expand({"batch": [16, 32], "workers": [1, 2], "lr": 0.1}, include=[{"batch": 128}])
    assert len(points) == 5
    assert points[-1] == {"batch": 128, "workers": 1, "lr": 0.1}


def test_include_may_add_new_keys() -> None:
    points = expand({"a": [1]}, include=[{"a": 2, "extra": "yes"}])
    assert points == [{"a": 1}, {"a": 2, "extra": "yes"}]


def test_include_does_not_duplicate_an_existing_point() -> None:
    params = {"batch": [16, 32], "workers": [1, 2]}
    assert expand(params, include=[{"batch": 32, "workers": 2}]) == expand(params)


def test_include_given_twice_is_added_once() -> None:
    points = expand({"a": [1]}, include=[{"a": 5}, {"a": 5}])
    assert points == [{"a": 1}, {"a": 5}]


def test_include_brings_back_an_excluded_point() -> None:
    points = expand({"a": [1, 2]}, include=[{"a": 2}], exclude=[{"a": 2}])
    assert points == [{"a": 1}, {"a": 2}]


def test_include_saves_a_sweep_that_exclude_emptied() -> None:
    assert expand({"a": [1]}, include=[{"a": 9}], exclude=[{"a": 1}]) == [{"a": 9}]


def test_include_in_zip_mode_uses_first_values_as_defaults() -> None:
    points = expand({"a": [1, 2], "b": [10, 20]}, "zip", include=[{"b": 99}])
    assert points == [{"a": 1, "b": 10}, {"a": 2, "b": 20}, {"a": 1, "b": 99}]


def test_expand_does_not_modify_its_inputs() -> None:
    params = {"a": [1, 2], "b": 3}
    include = [{"a": 7}]
    exclude = [{"a": 1}]
    expand(params, include=include, exclude=exclude)
    assert params == {"a": [1, 2], "b": 3}
    assert include == [{"a": 7}] and exclude == [{"a": 1}]
