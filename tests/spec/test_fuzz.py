"""Property-based: malformed specs, parameter files and templates never escape as anything but a
clear SpecError (exit code 2 at the CLI), whatever the input.
"""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubebench.errors import SpecError
from kubebench.plan.plan import make_plan
from kubebench.render.job import render_run
from kubebench.spec.load import load_spec

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=8)
KEYS = ["apiVersion", "kind", "name", "job", "parameters", "sweep", "include", "exclude", "repeats",
        "warmup_runs", "timeout", "metrics", "postprocess", "backend", "data_root", "bogus"]
JOB_KEYS = ["kind", "workers", "image", "command", "env", "resources", "template", "working_dir", "extra"]


def _check(path: Path, **kwargs) -> None:
    """Loading and planning/rendering either work or raise SpecError — nothing else."""
    try:
        loaded = load_spec(path, **kwargs)
        plan = make_plan(loaded.spec, "fuzz", "fp")
        for run in plan.runs[:4]:
            render_run(loaded, run, "fuzz", {"KUBEBENCH_EXP_ID": "fuzz"})
    except SpecError as e:
        assert str(e).strip(), "an error must say something"


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=8),
       st.dictionaries(st.sampled_from(JOB_KEYS), values, max_size=5))
def test_random_specs_fail_only_with_spec_errors(tmp_path: Path, top: dict, job: dict) -> None:
    spec = {"name": "fuzz", **top, "job": {"command": ["python", "-c", "pass"], **job}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    _check(path)


@FUZZ
@given(st.text(alphabet=string.printable, max_size=200))
def test_random_text_fails_only_with_spec_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    _check(path)


@FUZZ
@given(st.text(alphabet=string.printable, max_size=80), st.lists(st.text(max_size=20), max_size=3))
def test_random_parameter_files_and_overrides(tmp_path: Path, params_text: str, overrides: list[str]) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: fuzz\njob:\n  command: [python, -c, 'print({{ a | default(1) }})']\nparameters: {a: [1, 2]}\n")
    params = tmp_path / "params.yaml"
    params.write_text(params_text)
    _check(spec, params_file=params, overrides=overrides)


@FUZZ
@given(st.text(alphabet=string.printable + "{}%#", max_size=120), st.sampled_from(["job.yaml.j2", "job.jsonnet"]))
def test_random_templates_fail_only_with_spec_errors(tmp_path: Path, template: str, name: str) -> None:
    (tmp_path / name).write_text(template)
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: fuzz\njob:\n  template: {name}\nparameters: {{a: [1, 2]}}\n")
    _check(spec)


@pytest.mark.parametrize("text", ["name: x\njob: {command: [a]}\nparameters: {a: [1, 1]}\n",
                                  "name: x\njob: {command: [a], workers: '{{ 1/0 }}'}\n",
                                  "name: x\njob: {command: [a], kind: '{{ \"Nope\" }}'}\n"])
def test_cli_exit_code_2_for_bad_input(text: str, tmp_path: Path, home: Path) -> None:
    from typer.testing import CliRunner

    from kubebench.cli import app

    path = tmp_path / "spec.yaml"
    path.write_text(text)
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.startswith("error:")
