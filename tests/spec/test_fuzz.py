"""Property-based: malformed specs, parameter files and templates never escape as anything but a
clear SpecError (exit code 2 at the CLI), whatever the input.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

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


# --- through the CLI: exit code 2 and one clear line, whatever the input -----------------------

CLI_FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
MANIFEST = ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: fuzz}\nspec:\n  template:\n    spec:\n"
            "      containers:\n      - name: main\n        command: [python, -c, \"print({{ a }})\"]\n")
identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda n: n not in ("a", "params", "kubebench"))
#: Jinja constructs that cannot render: unclosed or unknown tags and filters, undefined names, failing expressions.
JINJA_BREAKERS = [
    "{{ a ", "{% if a %}", "{% endfor %}", "{{ a | no_such_filter }}", "{% for %}", "{{ }}", "{{ 1/0 }}",
    "{{ a.b.c }}", "{% include 'absent.j2' %}", "{#", "{{ a(1) }}", "{{ [1][5] }}",
]
#: Jsonnet that cannot evaluate: syntax errors, unknown names, an explicit error, type errors.
JSONNET_BREAKERS = ["{", "local x = 1; y", "1 + 'a'", "{ a: }", "[1, 2", "std.nope(1)", "{ a: 1 }.b",
                    "std.extVar('absent')", "function(x) x", "'a manifest is an object'", "[1, 2]"]


def _cli(args: list[str]):
    from typer.testing import CliRunner

    from kubebench.cli import app

    return CliRunner().invoke(app, args)


def _assert_clear(result, allow_success: bool = False) -> None:
    """Exit 2 with one `error:` message (or 0, where the input may well be valid); never a traceback."""
    assert isinstance(result.exception, (SystemExit, type(None))), repr(result.exception)
    assert "Traceback" not in result.output
    if allow_success and result.exit_code == 0:
        return
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and len(result.output.strip()) > len("error: ")


@CLI_FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), values, max_size=6),
       st.dictionaries(st.sampled_from(JOB_KEYS), values, max_size=4))
def test_cli_random_specs(tmp_path: Path, home: Path, top: dict, job: dict) -> None:
    spec = {"name": "fuzz", **top, "job": {"command": ["python", "-c", "pass"], **job}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    _assert_clear(_cli(["render", str(path)]), allow_success=True)


@CLI_FUZZ
@given(st.one_of(st.lists(scalars, min_size=1, max_size=4).map(yaml.safe_dump),
                 scalars.filter(lambda v: v is not None and v != "").map(yaml.safe_dump),
                 st.dictionaries(st.text(max_size=6), values, min_size=1, max_size=3).map(yaml.safe_dump),
                 st.text(alphabet=string.printable, max_size=60)))
def test_cli_malformed_parameter_files(tmp_path: Path, home: Path, params_text: str) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: fuzz\njob:\n  command: [python, -c, 'print({{ a | default(1) }})']\nparameters: {a: [1, 2]}\n")
    params = tmp_path / "params.yaml"
    params.write_text(params_text)
    parsed = _yaml_or_none(params_text)
    always_bad = parsed is not None and not isinstance(parsed, dict)
    _assert_clear(_cli(["render", str(spec), "--params", str(params)]), allow_success=not always_bad)


def _yaml_or_none(text: str):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


@CLI_FUZZ
@given(st.sampled_from(JINJA_BREAKERS) | identifiers.map(lambda n: "{{ " + n + " }}"),
       st.integers(0, MANIFEST.count("\n")))
def test_cli_broken_jinja_templates(tmp_path: Path, home: Path, breaker: str, line: int) -> None:
    lines = MANIFEST.splitlines(keepends=True)
    lines.insert(line, f"# {breaker}\n")  # a comment to YAML, but Jinja renders it first
    (tmp_path / "job.yaml.j2").write_text("".join(lines))
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: fuzz\njob:\n  template: job.yaml.j2\nparameters: {a: [1, 2]}\n")
    for command in (["render", str(spec)], ["run", str(spec)]):
        result = _cli(command)
        _assert_clear(result)
        assert "job.yaml.j2" in result.output


@CLI_FUZZ
@given(st.sampled_from(JSONNET_BREAKERS) | st.text(max_size=30).map(lambda text: f"error {json.dumps(text)}"))
def test_cli_broken_jsonnet_templates(tmp_path: Path, home: Path, program: str) -> None:
    (tmp_path / "job.jsonnet").write_text(program)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: fuzz\njob:\n  template: job.jsonnet\nparameters: {a: [1, 2]}\n")
    result = _cli(["render", str(spec)])
    _assert_clear(result)
    assert "job.jsonnet" in result.output
