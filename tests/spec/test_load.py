"""Loading specs and parameter files: merging, overrides, and file:line:col in every error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubebench.errors import KubebenchError, SpecError
from kubebench.spec.load import load_params_file, load_spec, parse_override, parse_yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch-cnn"

MINIMAL = """\
name: bench
job:
  command: [echo, hi]
"""


def write(folder: Path, text: str, name: str = "spec.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(path: Path, **kwargs: object) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(path, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


def allowed(message: str) -> list[str]:
    return message.split("allowed keys: ", 1)[1].splitlines()[0].split(", ")


# --- valid specs -----------------------------------------------------------------------------


@pytest.mark.skipif(not (EXAMPLE / "benchmark.yaml").exists(), reason="example not in this checkout")
def test_example_spec_loads() -> None:
    loaded = load_spec(EXAMPLE / "benchmark.yaml")
    s = loaded.spec
    assert s.name == "pytorch-cnn"
    assert s.job.kind == "PyTorchJob"
    assert s.job.workers == "{{ workers }}"
    assert "{{ batch_size }}" in s.job.command
    assert s.parameters == {"batch_size": [16, 32], "workers": [1, 2], "threads": 1}
    assert s.repeats == 3
    assert s.timeout == 300.0
    assert s.backend.kind == "local"
    assert s.primary_metric is not None and s.primary_metric.name == "images_per_sec"
    assert [p.kind for p in s.postprocess] == ["regex"]
    assert loaded.base_dir == EXAMPLE
    assert loaded.source == str(EXAMPLE / "benchmark.yaml")
    assert loaded.text == (EXAMPLE / "benchmark.yaml").read_text(encoding="utf-8")
    assert loaded.template_text is None


@pytest.mark.skipif(not (EXAMPLE / "params-large.yaml").exists(), reason="example not in this checkout")
def test_example_parameter_file_overrides_the_spec() -> None:
    loaded = load_spec(EXAMPLE / "benchmark.yaml", params_file=EXAMPLE / "params-large.yaml")
    assert loaded.spec.parameters == {"batch_size": [64, 128], "workers": 2, "threads": 1}


def test_minimal_spec_loads_with_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    loaded = load_spec(path)
    s = loaded.spec
    assert (s.backend.kind, s.repeats, s.timeout, s.sweep) == ("local", 1, 3600.0, "grid")
    assert s.job.command == ["echo", "hi"]
    assert loaded.base_dir == tmp_path.resolve()
    assert loaded.source == str(path)
    assert loaded.text == MINIMAL


def test_full_spec_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        apiVersion: kubebench/v1
        kind: Benchmark
        name: mine
        job:
          kind: TFJob
          workers: 2
          command: [python, train.py, --steps, 10]
          env: {A: 1}
          resources: {gpu: 1}
        parameters:
          lr: [0.1, 0.01]
          batch: 32
        sweep: zip
        repeats: 4
        warmup_runs: 1
        timeout: 1h30m
        metrics:
          - {name: loss, goal: minimize}
        backend: {kind: local, kill_grace: 1.5}
        """,
    )
    s = load_spec(path).spec
    assert s.job.kind == "TFJob" and s.job.workers == 2
    assert s.job.command == ["python", "train.py", "--steps", "10"]
    assert s.job.env == {"A": 1} and s.job.resources == {"gpu": 1}
    assert s.parameters == {"lr": [0.1, 0.01], "batch": 32}
    assert (s.sweep, s.repeats, s.warmup_runs, s.timeout) == ("zip", 4, 1, 5400.0)
    assert s.backend.kill_grace == 1.5
    assert s.primary_metric is not None and s.primary_metric.goal == "minimize"


def test_template_text_is_read_relative_to_the_spec(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    write(tmp_path, "kind: Job\n", "jobs/job.yaml.j2")
    path = write(tmp_path, "name: t\njob:\n  template: jobs/job.yaml.j2\n")
    loaded = load_spec(path)
    assert loaded.template_text == "kind: Job\n"


# --- parameter files and --set ---------------------------------------------------------------


SPEC_WITH_PARAMS = """\
name: bench
job:
  command: [echo]
parameters:
  batch_size: 16
  lr: 0.5
  model: resnet
"""


def test_flat_parameter_file_overrides_spec_parameters(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC_WITH_PARAMS)
    params = write(tmp_path, "batch_size: [32, 64]\nworkers: 2\n", "params.yaml")
    s = load_spec(spec, params_file=params).spec
    assert s.parameters == {"batch_size": [32, 64], "lr": 0.5, "model": "resnet", "workers": 2}


def test_nested_parameter_file_form(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC_WITH_PARAMS)
    params = write(tmp_path, "parameters:\n  lr: [0.1, 0.2]\n", "params.yaml")
    s = load_spec(spec, params_file=params).spec
    assert s.parameters == {"batch_size": 16, "lr": [0.1, 0.2], "model": "resnet"}


def test_empty_parameter_file_changes_nothing(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC_WITH_PARAMS)
    params = write(tmp_path, "# nothing\n", "params.yaml")
    assert load_params_file(params) == ({}, {})
    assert load_spec(spec, params_file=params).spec.parameters == {"batch_size": 16, "lr": 0.5, "model": "resnet"}


def test_parameter_file_gives_parameters_to_a_spec_without_any(tmp_path: Path) -> None:
    spec = write(tmp_path, MINIMAL)
    params = write(tmp_path, "a: [1, 2]\n", "params.yaml")
    assert load_spec(spec, params_file=params).spec.parameters == {"a": [1, 2]}


def test_set_overrides_are_yaml_values(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC_WITH_PARAMS)
    s = load_spec(spec, overrides=["batch_size=[8,16]", "lr=0.1", "model=vit", "fast=true"]).spec
    assert s.parameters == {"batch_size": [8, 16], "lr": 0.1, "model": "vit", "fast": True}
    assert type(s.parameters["lr"]) is float


def test_set_wins_over_the_parameter_file(tmp_path: Path) -> None:
    spec = write(tmp_path, SPEC_WITH_PARAMS)
    params = write(tmp_path, "batch_size: 32\n", "params.yaml")
    s = load_spec(spec, params_file=params, overrides=["batch_size=128"]).spec
    assert s.parameters["batch_size"] == 128


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("batch_size=[8,16]", ("batch_size", [8, 16])),
        ("lr=0.1", ("lr", 0.1)),
        ("n=8", ("n", 8)),
        (" name = resnet ", ("name", "resnet")),
        ("empty=", ("empty", "")),
        ("expr=a=b", ("expr", "a=b")),
    ],
)
def test_parse_override(text: str, expected: tuple[str, object]) -> None:
    assert parse_override(text) == expected


@pytest.mark.parametrize("text", ["foo", "=5", " =x"])
def test_override_without_key_value_is_an_error(text: str) -> None:
    with pytest.raises(SpecError, match="expected key=value"):
        parse_override(text)


def test_override_with_bad_yaml_is_an_error() -> None:
    with pytest.raises(SpecError, match=r"--set 'x=\[1,': value is not valid YAML"):
        parse_override("x=[1,")


def test_bad_set_reaches_the_user_through_load_spec(tmp_path: Path) -> None:
    message = load_error(write(tmp_path, MINIMAL), overrides=["foo"])
    assert message.startswith("--set 'foo': expected key=value")


# --- bad inputs: files -----------------------------------------------------------------------


def test_missing_spec_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    assert load_error(path) == f"{path}: spec file not found"


def test_folder_instead_of_spec_file(tmp_path: Path) -> None:
    assert load_error(tmp_path) == f"{tmp_path}: is a folder, expected a spec file"


def test_spec_errors_are_kubebench_errors_with_exit_code_2(tmp_path: Path) -> None:
    with pytest.raises(KubebenchError) as info:
        load_spec(tmp_path / "nope.yaml")
    assert info.value.exit_code == 2


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  command: [echo]\nrepeats: 1: 2\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:11: YAML syntax error")
    assert "mapping values are not allowed here" in message


def test_yaml_tab_indentation_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  command: [echo]\n\timage: x\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:1: YAML syntax error: found character '\\t'")


def test_parse_yaml_maps_keys_to_their_positions() -> None:
    data, locations = parse_yaml("a: 1\nb:\n  c: [x, y]\n", "s.yaml")
    assert data == {"a": 1, "b": {"c": ["x", "y"]}}
    assert locations[("a",)] == (1, 1)
    assert locations[("b",)] == (2, 1)
    assert locations[("b", "c")] == (3, 3)
    assert locations[("b", "c", 1)] == (3, 10)


def test_spec_that_is_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, "- name: bench\n- job: {}\n")
    assert load_error(path) == f"{path}: a spec must be a YAML mapping (apiVersion, kind, name, job, …)"


def test_empty_spec_file(tmp_path: Path) -> None:
    assert "a spec must be a YAML mapping" in load_error(write(tmp_path, ""))


# --- bad inputs: validation with file:line:col -----------------------------------------------


def test_unknown_top_level_key_lists_allowed_keys(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "repeat: 3\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:1: repeat: unknown key; did you mean 'repeats'?; allowed keys: ")
    keys = allowed(message)
    assert {"repeats", "job", "parameters", "apiVersion", "timeout"} <= set(keys)
    assert "api_version" not in keys


def test_near_misses_get_a_did_you_mean_and_problems_come_in_the_file_s_order(tmp_path: Path) -> None:
    """Review 2026-12-02 #24: `repeat:`, `comand:` and `goal: maximise` listed 25 keys with no
    suggestion; a union gave five lines for one value; errors came out of line order."""
    path = write(tmp_path, "name: bench\njob:\n  comand: [echo]\nmetrics:\n  - {name: v, goal: maximise}\n"
                           "repeat: 3\nparameters:\n  slow: {a: {b: 1}}\n")
    lines = load_error(path).splitlines()
    assert [line.split(": ")[0] for line in lines] == [f"{path}:3:3", f"{path}:5:15", f"{path}:6:1", f"{path}:8:3"]
    assert "job.comand: unknown key; did you mean 'command'?" in lines[0]
    assert lines[1].endswith("metrics.0.goal: Input should be 'maximize' or 'minimize'; did you mean 'maximize'?")
    assert "repeat: unknown key; did you mean 'repeats'?" in lines[2]
    assert lines[3].count("Input should be") == 1  # one line for the value that fits no form of a parameter
    assert "did you mean" not in load_error(write(tmp_path, MINIMAL + "zzzz: 3\n"))  # nothing near: no guess


def test_unknown_job_key_lists_job_keys(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  command: [echo]\n  replicas: 2\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:3: job.replicas: unknown key")
    assert allowed(message) == ["command", "env", "gang", "image", "kind", "mpi_api_version", "node_selector",
                                "processes_per_replica",
                                "resources", "runtime", "server", "template", "tolerations", "topology", "workers",
                                "working_dir"]


def test_unknown_postprocess_key_lists_that_kinds_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        MINIMAL + "postprocess:\n  - kind: regex\n    file: a.log\n    pattern: '(?P<x>[0-9]+)'\n    group: 1\n",
    )
    message = load_error(path)
    assert message.startswith(f"{path}:8:5: postprocess.0.group: unknown key")
    assert allowed(message) == ["file", "kind", "pattern", "select"]


def test_unknown_key_in_a_command_postprocessor_lists_its_keys(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "postprocess:\n  - {kind: command, command: [a], bogus: 1}\n")
    message = load_error(path)
    assert "postprocess.0.bogus: unknown key" in message
    assert allowed(message) == ["command", "kind", "timeout"]


def test_unknown_backend_option_lists_backend_keys(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "backend: {kind: local, grace: 1}\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:")
    assert "backend.grace: unknown key" in message
    assert allowed(message) == ["kill_grace", "kind"]


def test_unknown_metric_key_lists_metric_keys(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "metrics:\n  - name: ips\n    higher_is_better: true\n")
    message = load_error(path)
    assert message.startswith(f"{path}:6:5: metrics.0.higher_is_better: unknown key")
    assert allowed(message) == ["goal", "name", "primary", "required", "unit"]


def test_wrong_type_names_field_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "sweep: grid\nrepeats: many\n")
    message = load_error(path)
    assert message.startswith(f"{path}:5:1: repeats: ")
    assert "valid integer" in message


def test_missing_required_key(tmp_path: Path) -> None:
    path = write(tmp_path, "job:\n  command: [echo]\n")
    message = load_error(path)
    assert message.startswith(f"{path}:")
    assert message.endswith(": name: required key is missing")


def test_bad_timeout_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "timeout: abc\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:1: timeout: 'abc' is not a duration")


def test_zero_timeout_names_its_line(tmp_path: Path) -> None:
    message = load_error(write(tmp_path, MINIMAL + "timeout: 0\n"))
    assert ":4:1: timeout: duration must be positive" in message


def test_unknown_job_kind_lists_valid_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  kind: SparkJob\n  command: [echo]\n")
    message = load_error(path)
    assert message == (
        f"{path}:3:3: job.kind: unknown job kind 'SparkJob'; valid: Process, PyTorchJob, TFJob, MPIJob, JAXJob, XGBoostJob, TrainJob, Job, Serving"
    )


def test_unknown_backend_name_lists_local(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "backend: kubernetes-nope\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:1: backend")
    assert "kubernetes-nope" in message
    assert "local" in message.split("kubernetes-nope", 1)[1]


def test_unknown_postprocess_kind_lists_valid_kinds(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "postprocess:\n  - {kind: xml, file: a.xml}\n")
    message = load_error(path)
    assert message.startswith(f"{path}:5:5: postprocess.0: ")
    assert "'xml'" in message
    for kind in ("regex", "command", "python"):
        assert f"'{kind}'" in message


def test_invalid_regex_pattern_names_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "postprocess:\n  - kind: regex\n    file: a.log\n    pattern: '(?P<a'\n")
    message = load_error(path)
    assert message.startswith(f"{path}:7:5: postprocess.0.pattern: invalid regular expression")


def test_regex_pattern_without_named_groups(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "postprocess:\n  - kind: regex\n    file: a.log\n    pattern: 'ips: ([0-9.]+)'\n")
    message = load_error(path)
    assert message.startswith(f"{path}:7:5: postprocess.0.pattern: pattern needs named groups")


def test_command_and_template_together(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  command: [echo]\n  template: job.j2\n")
    assert load_error(path) == f"{path}:2:1: job: give either `command` (the shorthand) or `template`, not both"


def test_neither_command_nor_template(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  kind: TFJob\n")
    assert "2:1: job: give `command` (the shorthand) or `template`" in load_error(path)


def test_template_with_a_bad_suffix(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\njob:\n  template: job.yaml\n")
    assert "must end with .j2 / .jinja2 (Jinja2) or .jsonnet" in load_error(path)


def test_missing_template_file_names_the_job_template_line(tmp_path: Path) -> None:
    path = write(tmp_path, "name: bench\ndescription: x\njob:\n  template: missing.yaml.j2\n")
    message = load_error(path)
    assert message.startswith(f"{path}:4:3: job.template: ")
    assert "missing.yaml.j2: template file not found" in message


def test_several_problems_are_all_reported_one_per_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "repeats: many\nwarmup: 1\n")
    lines = load_error(path).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:4:1: repeats:")
    assert lines[1].startswith(f"{path}:5:1: warmup: unknown key")


def test_bad_parameter_value_names_the_spec_line(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL + "parameters:\n  a: {x: 1}\n")
    message = load_error(path)
    assert message.startswith(f"{path}:5:3: parameters.a")


# --- bad inputs: parameter files -------------------------------------------------------------


def test_parameter_file_that_is_a_list(tmp_path: Path) -> None:
    spec = write(tmp_path, MINIMAL)
    params = write(tmp_path, "- 1\n- 2\n", "params.yaml")
    message = load_error(spec, params_file=params)
    assert message == f"{params}: a parameter file must be a mapping of name: value (a list sweeps)"


def test_missing_parameter_file(tmp_path: Path) -> None:
    spec = write(tmp_path, MINIMAL)
    params = tmp_path / "params.yaml"
    assert load_error(spec, params_file=params) == f"{params}: parameter file not found"


def test_parameter_file_with_a_yaml_error(tmp_path: Path) -> None:
    spec = write(tmp_path, MINIMAL)
    params = write(tmp_path, "a: 1\nb: [1, 2\nc: 3\n", "params.yaml")
    message = load_error(spec, params_file=params)
    assert message.startswith(f"{params}:")
    assert "YAML syntax error" in message


def test_bad_value_in_parameter_file_names_the_parameter_file(tmp_path: Path) -> None:
    spec = write(tmp_path, MINIMAL + "parameters:\n  a: 1\n")
    params = write(tmp_path, "b: {x: 1}\n", "params.yaml")
    message = load_error(spec, params_file=params)
    assert f"{params}:1:" in message


def test_bad_set_value_names_the_override(tmp_path: Path) -> None:
    spec = write(tmp_path, MINIMAL + "parameters:\n  a: 1\n")
    message = load_error(spec, overrides=["a={x: 1}"])
    assert "--set" in message
