"""Finding 5a and 14: YAML alias bombs, deep nesting and unbounded reads are refused with a located
error (exit 2 on the CLI, 422 on the dashboard) before they cost memory or a traceback."""

from __future__ import annotations

import os
import re
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import assume, given, settings, strategies as st

from kubebench.errors import KubebenchError, SpecError
from kubebench.spec.load import load_spec, parse_yaml
from limits_support import alias_bomb, bomb_values, dashboard, launch, run_cli

SPEC_HEAD = "apiVersion: kubebench/v1\nkind: Benchmark\nname: bomb\njob: {command: [echo, hi]}\n"


@settings(max_examples=60, deadline=None)
@given(levels=st.integers(1, 7), width=st.integers(1, 12))
def test_alias_expansion_is_counted_and_bounded(levels: int, width: int) -> None:
    assume(bomb_values(levels, width) <= 100_000)  # code without the limit expands them all
    limit = 5_000
    with mock.patch.dict(os.environ, {"KUBEBENCH_MAX_YAML_VALUES": str(limit)}):
        text = alias_bomb(levels, width)
        if bomb_values(levels, width) <= limit:
            data, _ = parse_yaml(text, "bomb.yaml")
            assert data["a0"] == ["lol"]
        else:
            with pytest.raises(SpecError, match=r"^bomb\.yaml:\d+:\d+: .*more than 5000 values") as info:
                parse_yaml(text, "bomb.yaml")
            assert "KUBEBENCH_MAX_YAML_VALUES" in str(info.value)


@pytest.mark.slow
def test_the_reviewed_bomb_is_refused_at_once_on_the_cli(tmp_path: Path) -> None:
    # 9 levels of 9 aliases: past 2.4 GB and a MemoryError before; the child is capped at 1.5 GB
    spec = tmp_path / "bomb9.yaml"
    spec.write_text(SPEC_HEAD + "x-anchors:\n" + alias_bomb(9, indent="  "), encoding="utf-8")
    assert len(spec.read_bytes()) < 700
    for command in (["render", str(spec)], ["run", "--dry-run", str(spec)]):
        done = run_cli(*command, cwd=tmp_path, env={"KUBEBENCH_HOME": str(tmp_path / "home")})
        assert done.returncode == 2, done.stderr[-2000:]
        assert re.search(r"bomb9\.yaml:\d+:\d+: YAML document over a limit: .*more than 200000 values", done.stderr)
        assert "Traceback" not in done.stderr


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 2_000), flow=st.booleans())
def test_nesting_deeper_than_the_limit_is_a_located_spec_error(depth: int, flow: bool) -> None:
    if flow:
        text = "parameters: " + "[" * depth + "1" + "]" * depth + "\n"
    else:
        text = "parameters:\n" + "".join(" " * (i + 1) + "- \n" for i in range(depth - 1)) + " " * depth + "- 1\n"
    if depth + 1 <= 64:  # the mapping holds the lists
        parse_yaml(text, "deep.yaml")
    else:
        with pytest.raises(SpecError, match=r"^deep\.yaml:\d+:\d+: .*nested deeper than 64 levels"):
            parse_yaml(text, "deep.yaml")


@pytest.mark.slow
def test_deep_nesting_is_exit_2_not_a_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "deep.yaml"
    spec.write_text("[" * 100_000, encoding="utf-8")
    done = run_cli("run", "--dry-run", str(spec), cwd=tmp_path, env={"KUBEBENCH_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "deep.yaml:1:65: YAML document over a limit: nested deeper than 64 levels" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_params_from_an_endless_device_is_a_bounded_read(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_HEAD, encoding="utf-8")
    done = run_cli("render", str(spec), "--params", "/dev/zero", cwd=tmp_path, timeout=60,
                   env={"KUBEBENCH_HOME": str(tmp_path / "home")})
    assert done.returncode == 2, done.stderr[-2000:]
    assert "/dev/zero: parameter file is larger than 1000000 bytes" in done.stderr


def test_the_size_limit_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_HEAD + "description: " + "x" * 2_000 + "\n", encoding="utf-8")
    monkeypatch.setenv("KUBEBENCH_MAX_SPEC_BYTES", "1000")
    with pytest.raises(SpecError, match="larger than 1000 bytes"):
        load_spec(spec)
    monkeypatch.setenv("KUBEBENCH_MAX_SPEC_BYTES", "3000")
    assert load_spec(spec).spec.description == "x" * 2_000
    monkeypatch.setenv("KUBEBENCH_MAX_SPEC_BYTES", "lots")
    with pytest.raises(KubebenchError, match="KUBEBENCH_MAX_SPEC_BYTES='lots': expected a whole number"):
        load_spec(spec)


def test_anchors_still_work_and_errors_inside_them_are_located() -> None:
    text = "base: &b {x: 1, y: [1, 2]}\nfirst: *b\nsecond: *b\n"
    data, where = parse_yaml(text, "ok.yaml")
    assert data["first"] == data["second"] == {"x": 1, "y": [1, 2]}
    assert where[("second",)] == (3, 1)  # a repeated node is located where it is used
    assert where[("base", "y", 1)] == (1, 24)


@pytest.mark.parametrize("body", [
    SPEC_HEAD + "x-anchors:\n" + alias_bomb(6, indent="  "),  # 600,000 values: 250 MB in-process before
    "[" * 20_000,
])
def test_the_dashboard_answers_422_with_the_line(tmp_path: Path, body: str) -> None:
    with dashboard(tmp_path / "home") as client:
        answer = launch(client, body)
    assert answer.status_code == 422, answer.text[:500]
    problems = answer.json()["errors"]
    assert problems and problems[0]["line"] is not None
    assert "limit" in problems[0]["message"]
    assert not list((tmp_path / "home" / "launched").glob("*"))  # nothing kept, nothing started
