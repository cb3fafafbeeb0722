"""Finding 5b: the number of sweep points is counted before any point is made, and refused above a
limit (the number in the message); repeated points are found in linear time."""

from __future__ import annotations

import math
import os
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from kubebench.errors import PlanError
from kubebench.plan.plan import make_plan
from kubebench.plan.sweep import expand
from kubebench.spec.model import BenchmarkSpec
from limits_support import dashboard, launch, run_cli


@settings(max_examples=80, deadline=None)
@given(lengths=st.lists(st.integers(1, 12), min_size=1, max_size=4), included=st.integers(0, 3),
       zipped=st.booleans())
def test_points_are_counted_before_they_are_made(lengths: list[int], included: int, zipped: bool) -> None:
    if zipped:
        lengths = [lengths[0]] * len(lengths)
    params = {f"p{i}": list(range(n)) for i, n in enumerate(lengths)}
    include = [{"p0": 100 + i} for i in range(included)]
    count = (lengths[0] if zipped else math.prod(lengths)) + included
    limit = 200
    with mock.patch.dict(os.environ, {"KUBEBENCH_MAX_SWEEP_POINTS": str(limit)}):
        if count <= limit:
            assert len(expand(params, "zip" if zipped else "grid", include)) == count
        else:
            with pytest.raises(PlanError, match=rf"the sweep has {count:,} parameter points .*limit of {limit}"):
                expand(params, "zip" if zipped else "grid", include)


@pytest.mark.slow
def test_a_billion_points_are_refused_without_making_one(tmp_path: Path) -> None:
    # 254 bytes of YAML: 6 anchored lists of 32 values; a MemoryError at 3 GB before
    values = ", ".join(str(i) for i in range(32))
    spec = tmp_path / "sweep1e9.yaml"
    spec.write_text("name: sweep1e9\njob: {command: [echo, '{{ a }}']}\nparameters:\n"
                    f"  a: &v [{values}]\n  b: *v\n  c: *v\n  d: *v\n  e: *v\n  f: *v\n", encoding="utf-8")
    for command in (["render", str(spec)], ["run", "--dry-run", str(spec)]):
        done = run_cli(*command, cwd=tmp_path, timeout=60, env={"KUBEBENCH_HOME": str(tmp_path / "home")})
        assert done.returncode == 2, done.stderr[-2000:]
        assert "the sweep has 1,073,741,824 parameter points (32 (a) × 32 (b)" in done.stderr
        assert "KUBEBENCH_MAX_SWEEP_POINTS" in done.stderr


class Counted(int):
    """An int that counts the equality tests made on it."""

    tests = 0

    def __eq__(self, other: object) -> bool:
        Counted.tests += 1
        return int(self) == other

    __hash__ = int.__hash__


def test_repeated_points_are_found_in_linear_time() -> None:
    n = 3_000
    Counted.tests = 0
    points = expand({"a": [Counted(i) for i in range(n)]})
    assert len(points) == n
    assert Counted.tests < 10 * n  # the pairwise check made n²/2 = 4.5 million


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from([0.0, 1.0, 2.5, "a", "b"])),
                       min_size=1, max_size=8))
def test_a_repeated_point_is_still_refused(values: list) -> None:
    repeated = any(values[i] == values[j] for i in range(len(values)) for j in range(i))
    if repeated:
        with pytest.raises(PlanError, match="repeats the parameter point"):
            expand({"a": values})
    else:
        assert [p["a"] for p in expand({"a": values})] == values


def test_an_include_equal_to_a_point_in_any_key_order_is_not_added() -> None:
    points = expand({"a": [1, 2], "b": 0}, include=[{"x": 1, "y": 2}, {"y": 2, "x": 1}, {"a": 2, "b": 0}])
    assert points == [{"a": 1, "b": 0}, {"a": 2, "b": 0}, {"a": 1, "b": 0, "x": 1, "y": 2}]


def test_the_runs_of_a_plan_are_counted_before_they_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBEBENCH_MAX_RUNS", "50")
    spec = BenchmarkSpec(name="r", job={"command": ["echo"]}, parameters={"a": list(range(10))}, repeats=4,
                         warmup_runs=1)
    assert len(make_plan(spec, "e", "f").runs) == 50
    with pytest.raises(PlanError, match=r"the plan has 60 runs \(10 parameter points × \(5 repeats \+ 1 warm-up"):
        make_plan(spec.model_copy(update={"repeats": 5}), "e", "f")


def test_the_dashboard_refuses_a_big_sweep_with_422_at_the_parameters(tmp_path: Path) -> None:
    spec = ("name: big\njob: {command: [echo, '{{ a }}']}\ntelemetry: {enabled: false}\n"
            f"parameters:\n  a: [{', '.join(str(i) for i in range(150))}]\n")
    with mock.patch.dict(os.environ, {"KUBEBENCH_MAX_SWEEP_POINTS": "100"}), dashboard(tmp_path / "home") as client:
        answer = launch(client, spec)
    assert answer.status_code == 422, answer.text[:500]
    problem = answer.json()["errors"][0]
    assert "the sweep has 150 parameter points" in problem["message"] and "limit of 100" in problem["message"]
    assert (problem["field"], problem["line"]) == ("parameters", 4)
