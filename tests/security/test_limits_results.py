"""Finding 11: what a run reports is bounded (result.json size, metrics per run, info length); a
result.json key is a metric only when it is a metric name and its value a finite number."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st
from limits_support import run_cli
from security_support import without_energy

from kubebench.collect.metrics import read_result_json
from kubebench.errors import PostprocessError
from kubebench.store.store import open_store

JOB = "import json, os, sys; out = os.environ['KUBEBENCH_EXP_RESULT_PATH']; "


def _run(tmp_path: Path, code: str, name: str = "res") -> list:
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump({
        "name": name, "telemetry": {"enabled": False}, "job": {"command": ["python", "-c", JOB + code]},
    }), encoding="utf-8")
    home = tmp_path / "home"
    done = run_cli("run", "spec.yaml", "--id", name, cwd=tmp_path, env={"KUBEBENCH_HOME": str(home)})
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return open_store(f"sqlite:///{home / 'kubebench.db'}").runs(name)


@pytest.mark.slow
def test_a_huge_result_json_fails_the_run_and_stays_out_of_the_store(tmp_path: Path) -> None:
    runs = _run(tmp_path, "json.dump({'x': 1, 'blob': 'A' * 5_000_000}, open(out + '/result.json', 'w'))")
    assert runs[0].status == "failed"
    assert runs[0].reason == ("result/result.json is larger than 1,048,576 bytes (the limit; "
                              "KUBEBENCH_MAX_RESULT_BYTES changes it)")
    assert not without_energy(runs[0].info) and not runs[0].metrics
    assert (tmp_path / "home" / "kubebench.db").stat().st_size < 1_000_000


@pytest.mark.slow
def test_too_many_metrics_fail_the_run_with_the_count(tmp_path: Path) -> None:
    runs = _run(tmp_path, "json.dump({f'm{i}': i for i in range(5000)}, open(out + '/result.json', 'w'))")
    assert runs[0].status == "failed"
    assert runs[0].reason.startswith("result/result.json has 5,000 fields, more than the limit of 1,000 metrics")


@pytest.mark.slow
def test_too_many_metric_lines_fail_the_run_too(tmp_path: Path) -> None:
    runs = _run(tmp_path, "print('KUBEBENCH_METRIC ' + ' '.join(f'm{i}={i}' for i in range(1500)))")
    assert runs[0].status == "failed"
    assert runs[0].reason.startswith("the run reported 1,500 metrics, more than the limit of 1,000")


def test_a_long_info_value_is_cut_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"x": 1, "note": "n" * 10_000}), encoding="utf-8")
    numbers, info = read_result_json(path)
    assert numbers == {"x": 1.0}
    assert info["note"] == "n" * 4096 + "… (5,904 more characters not kept)"


def test_limits_can_be_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({f"m{i}": i for i in range(1500)}), encoding="utf-8")
    with pytest.raises(PostprocessError, match="1,500 fields"):
        read_result_json(path)
    monkeypatch.setenv("KUBEBENCH_MAX_METRICS", "2000")
    assert len(read_result_json(path)[0]) == 1500


def test_deeply_nested_result_json_is_the_runs_failure_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(PostprocessError, match="nested too deeply"):
        read_result_json(path)


METRIC_NAME = r"[A-Za-z_][A-Za-z0-9_.:/-]*"  # the rule of the metric protocol and the spec's metrics
values = st.one_of(st.booleans(), st.none(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                   st.text(max_size=20), st.lists(st.integers(), max_size=3), st.just(1e308))
keys = st.one_of(st.from_regex(re.compile(f"{METRIC_NAME}"), fullmatch=True), st.text(min_size=1, max_size=12))


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(keys, values, max_size=12))
def test_only_metric_names_with_finite_numbers_become_metrics(tmp_path_factory, data: dict) -> None:
    path = tmp_path_factory.getbasetemp() / "names-result.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    numbers, info = read_result_json(path)
    assert set(numbers) | set(info) == set(data) and not set(numbers) & set(info)
    for key, value in data.items():
        number = _numeric(value)
        if number is not None and re.fullmatch(METRIC_NAME, key):
            assert numbers[key] == number
        else:  # booleans, nulls, text, lists, and numbers under names that are not metric names
            assert key in info and info[key] == (value if isinstance(value, str) else json.dumps(value))


def _numeric(value: object) -> float | None:
    # numbers and numeric strings (the original Kubebench wrote strings), finite, never booleans
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def test_booleans_and_nulls_are_info_not_metrics(tmp_path: Path) -> None:
    # this held before the limits (the review checked it); kept so that it goes on holding
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"ok": True, "off": False, "none": None, "n": 3}), encoding="utf-8")
    assert read_result_json(path) == ({"n": 3.0}, {"ok": "true", "off": "false", "none": "null"})


def test_a_number_under_a_name_that_is_no_metric_name_is_info(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"n": 3, "bad name": 2, "\x1b]0;x": 1, "9lives": 9}), encoding="utf-8")
    assert read_result_json(path) == ({"n": 3.0}, {"bad name": "2", "\x1b]0;x": "1", "9lives": "9"})


def test_a_python_post_processor_must_name_its_metrics_by_the_rule(tmp_path: Path) -> None:
    from kubebench.collect.context import RunContext
    from kubebench.collect.postprocess import PythonConfig, PythonPostprocessor
    from kubebench.paths import RunPaths

    (tmp_path / "post_bad_name.py").write_text("def parse(ctx):\n    return {'a b': 1}\n", encoding="utf-8")
    ctx = RunContext("e", "t", "r", 0, {}, RunPaths(tmp_path, tmp_path, "e", "r"), tmp_path)
    with pytest.raises(PostprocessError, match="'a b' is not a metric name"):
        PythonPostprocessor(PythonConfig(function="post_bad_name:parse")).run(ctx)
