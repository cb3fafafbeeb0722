"""The typed spec model: defaults, durations, the job shorthand's rules and the primary metric."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from kubebench.durations import parse_duration
from kubebench.spec.base import Model
from kubebench.spec.model import JOB_KINDS, BenchmarkSpec, JobSpec, MetricSpec


def spec(**fields: object) -> BenchmarkSpec:
    """A minimal valid spec with ``fields`` on top."""
    data: dict[str, object] = {"name": "bench", "job": {"command": ["echo", "hi"]}}
    data.update(fields)
    return BenchmarkSpec.model_validate(data)


# --- durations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90.0),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1h 30m 15s", 5415.0),
        ("1.5h", 5400.0),
        ("0.5s", 0.5),
        (" 2m ", 120.0),
        (45, 45.0),
        (2.5, 2.5),
        ("90", 90.0),
        ("100ms", 0.1),
        ("250us", 250e-6),
        ("1m30.5s", 90.5),
    ],
)
def test_parse_duration_accepts_seconds_and_units(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["abc", "", "10 minutes", "5d", "m", "-5s", "1s1h", "30m1h", "5s5s", True])
def test_parse_duration_rejects_text_that_is_not_a_duration(value: object) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(value)


@pytest.mark.parametrize("value", [0, 0.0, -3, "0s", "0h0m"])
def test_parse_duration_rejects_zero_and_negative(value: object) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        parse_duration(value)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_parse_duration_rejects_nan_and_infinity(value: float) -> None:
    with pytest.raises(ValueError):
        parse_duration(value)


def test_spec_timeout_is_parsed_as_a_duration() -> None:
    assert spec(timeout="1h30m").timeout == 5400.0
    assert spec(timeout=45).timeout == 45.0


@pytest.mark.parametrize(("value", "message"), [("abc", "is not a duration"), (0, "must be positive")])
def test_spec_timeout_rejects_bad_durations(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(timeout=value)


# --- defaults --------------------------------------------------------------------------------


def test_minimal_spec_gets_the_documented_defaults() -> None:
    s = spec()
    assert s.api_version == "kubebench/v1"
    assert s.kind == "Benchmark"
    assert s.backend.kind == "local"
    assert s.repeats == 1
    assert s.warmup_runs == 0
    assert s.timeout == 3600.0
    assert s.sweep == "grid"
    assert s.parameters == {}
    assert s.include == [] and s.exclude == []
    assert s.metrics == [] and s.postprocess == []
    assert s.primary_metric is None
    assert s.job.kind == "Process"
    assert s.job.workers == 1
    assert s.job.image == "python:3.11-slim"


def test_backend_given_by_name_becomes_its_config() -> None:
    s = spec(backend="local")
    assert s.backend.kind == "local"
    assert s.backend.kill_grace == 3.0


def test_unknown_backend_name_is_rejected_naming_local() -> None:
    with pytest.raises(ValidationError, match="local"):
        spec(backend="kubernetes-nope")


def test_api_version_alias_and_kind_are_checked() -> None:
    assert spec(apiVersion="kubebench/v1").api_version == "kubebench/v1"
    with pytest.raises(ValidationError, match="kubebench/v1"):
        spec(apiVersion="kubebench/v2")
    with pytest.raises(ValidationError, match="Benchmark"):
        spec(kind="Experiment")


@pytest.mark.parametrize("name", ["", "x" * 64])
def test_name_length_is_bounded(name: str) -> None:
    with pytest.raises(ValidationError):
        spec(name=name)


@pytest.mark.parametrize(("field", "value"), [("repeats", 0), ("repeats", 10_001), ("warmup_runs", -1)])
def test_repeat_counts_are_bounded(field: str, value: int) -> None:
    with pytest.raises(ValidationError):
        spec(**{field: value})


def test_unknown_top_level_key_is_rejected() -> None:
    with pytest.raises(ValidationError, match="extra"):
        spec(repeat=3)


def test_spec_is_frozen() -> None:
    s = spec()
    with pytest.raises(ValidationError):
        s.repeats = 5  # type: ignore[misc]


def test_model_base_forbids_extra_keys() -> None:
    class Small(Model):
        a: int

    assert Small(a=1).a == 1
    with pytest.raises(ValidationError):
        Small.model_validate({"a": 1, "b": 2})


def test_parameters_keep_their_yaml_types() -> None:
    s = spec(parameters={"lr": 0.1, "n": 1, "flag": True, "s": "1", "grid": [1, "a", None]})
    assert s.parameters == {"lr": 0.1, "n": 1, "flag": True, "s": "1", "grid": [1, "a", None]}
    assert type(s.parameters["n"]) is int
    assert type(s.parameters["flag"]) is bool
    assert type(s.parameters["s"]) is str


def test_sweep_mode_must_be_grid_or_zip() -> None:
    assert spec(sweep="zip").sweep == "zip"
    with pytest.raises(ValidationError):
        spec(sweep="random")


# --- the job ---------------------------------------------------------------------------------


def test_job_needs_command_or_template() -> None:
    with pytest.raises(ValidationError, match="give `command`"):
        JobSpec.model_validate({})


def test_job_rejects_command_and_template_together() -> None:
    with pytest.raises(ValidationError, match="not both"):
        JobSpec.model_validate({"command": ["echo"], "template": "job.yaml.j2"})


@pytest.mark.parametrize("template", ["job.j2", "job.yaml.jinja2", "job.jinja", "job.jsonnet"])
def test_job_template_with_a_known_suffix_is_accepted(template: str) -> None:
    assert JobSpec.model_validate({"template": template}).template == template


@pytest.mark.parametrize("template", ["job.yaml", "job.json", "job.j2.txt", "jsonnet"])
def test_job_template_with_another_suffix_is_rejected(template: str) -> None:
    with pytest.raises(ValidationError, match=r"must end with \.j2 / \.jinja2 \(Jinja2\) or \.jsonnet"):
        JobSpec.model_validate({"template": template})


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_every_job_kind_is_accepted(kind: str) -> None:
    server = {"server": {"command": ["serve"]}} if kind == "Serving" else {}
    assert JobSpec.model_validate({"kind": kind, "command": ["x"], **server}).kind == kind


def test_unknown_job_kind_lists_the_valid_kinds() -> None:
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate({"kind": "SparkJob", "command": ["x"]})
    message = str(info.value)
    assert "unknown job kind 'SparkJob'" in message
    for kind in JOB_KINDS:
        assert kind in message


def test_job_kind_may_be_a_jinja_expression() -> None:
    assert JobSpec.model_validate({"kind": "{{ kind }}", "command": ["x"]}).kind == "{{ kind }}"


def test_command_items_become_strings_and_booleans_lowercase() -> None:
    job = JobSpec.model_validate({"command": ["train", "--steps", 20, "--lr", 0.5, "--fast", True]})
    assert job.command == ["train", "--steps", "20", "--lr", "0.5", "--fast", "true"]


def test_workers_may_be_int_or_template_text() -> None:
    assert JobSpec.model_validate({"command": ["x"], "workers": 4}).workers == 4
    assert JobSpec.model_validate({"command": ["x"], "workers": "{{ w }}"}).workers == "{{ w }}"


def test_unknown_job_key_is_rejected() -> None:
    with pytest.raises(ValidationError, match="extra"):
        JobSpec.model_validate({"command": ["x"], "replicas": 2})


# --- metrics ---------------------------------------------------------------------------------


def test_primary_metric_is_the_one_marked_primary() -> None:
    s = spec(metrics=[{"name": "a"}, {"name": "b", "primary": True}, {"name": "c"}])
    assert s.primary_metric is not None and s.primary_metric.name == "b"


def test_primary_metric_defaults_to_the_first() -> None:
    s = spec(metrics=[{"name": "latency", "goal": "minimize"}, {"name": "b"}])
    assert s.primary_metric == MetricSpec(name="latency", goal="minimize")


def test_metric_defaults() -> None:
    m = MetricSpec(name="images_per_sec")
    assert (m.unit, m.goal, m.primary, m.required) == ("", "maximize", False, True)


def test_two_primary_metrics_are_rejected() -> None:
    with pytest.raises(ValidationError, match="at most one metric"):
        spec(metrics=[{"name": "a", "primary": True}, {"name": "b", "primary": True}])


def test_duplicate_metric_names_are_rejected() -> None:
    with pytest.raises(ValidationError, match="metric names must be unique"):
        spec(metrics=[{"name": "a"}, {"name": "a"}])


@pytest.mark.parametrize("name", ["1abc", "has space", ""])
def test_metric_name_must_be_an_identifier(name: str) -> None:
    with pytest.raises(ValidationError):
        MetricSpec(name=name)


def test_metric_goal_is_maximize_or_minimize() -> None:
    with pytest.raises(ValidationError):
        MetricSpec(name="a", goal="up")  # type: ignore[arg-type]


# --- post-processors -------------------------------------------------------------------------


def test_postprocess_entries_are_chosen_by_kind() -> None:
    s = spec(
        postprocess=[
            {"kind": "regex", "file": "worker-0.log", "pattern": r"ips: (?P<ips>[0-9.]+)"},
            {"kind": "command", "command": "python post.py --x 1"},
            {"kind": "python", "function": "mod:parse"},
        ]
    )
    regex, command, python = s.postprocess
    assert (regex.kind, regex.select) == ("regex", "last")
    assert command.kind == "command"
    assert command.command == ["python", "post.py", "--x", "1"]
    assert python.function == "mod:parse"


def test_unknown_postprocess_kind_lists_the_valid_ones() -> None:
    with pytest.raises(ValidationError) as info:
        spec(postprocess=[{"kind": "xml"}])
    message = str(info.value)
    assert "'xml'" in message
    for kind in ("regex", "command", "python"):
        assert f"'{kind}'" in message


@pytest.mark.parametrize(
    ("pattern", "message"),
    [("(?P<a", "invalid regular expression"), (r"ips: ([0-9.]+)", "pattern needs named groups")],
)
def test_regex_pattern_must_compile_and_name_its_groups(pattern: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(postprocess=[{"kind": "regex", "file": "a.log", "pattern": pattern}])


@pytest.mark.parametrize("file", ["/etc/passwd", "../a.log", " "])
def test_regex_file_must_stay_inside_output(file: str) -> None:
    with pytest.raises(ValidationError, match="must be a relative path"):
        spec(postprocess=[{"kind": "regex", "file": file, "pattern": "(?P<a>x)"}])


@pytest.mark.parametrize("text", ["100ms", "1m30s", "250us", "2"])
def test_a_timeout_and_a_latency_bound_read_one_grammar(text: str) -> None:
    from kubebench.serving.slo import parse_request_slo

    assert spec(timeout=text).timeout == parse_request_slo(f"ttft={text}")["ttft"] == parse_duration(text)
