"""Every bad input: one clear message, exit code 2, no traceback, and the store untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

GOOD = """
name: good
job:
  command: [python, -c, "import kubebench; kubebench.report(v={{ n }})"]
parameters:
  n: [1, 2]
"""

BAD = {
    "yaml-syntax": ("name: x\njob: {command: [a\n", r"spec.yaml:3:1: YAML syntax error"),
    "unknown-key": (
        "name: x\njob: {command: [a]}\nrepeat: 3\n",
        "spec.yaml:3:1: repeat: unknown key; did you mean 'repeats'?; allowed keys: apiVersion, backend, data, data_root",
    ),
    "unknown-job-key": (
        "name: x\njob:\n  command: [a]\n  replicas: 2\n",
        "spec.yaml:4:3: job.replicas: unknown key; allowed keys: command, env, gang, image, kind",
    ),
    "wrong-type": ("name: x\njob: {command: [a]}\nrepeats: many\n", "spec.yaml:3:1: repeats: Input should be a valid integer"),
    "missing-key": ("name: x\n", "spec.yaml:1:1: job: required key is missing"),
    "unknown-backend": (
        "name: x\njob: {command: [a]}\nbackend: slurm\n",
        "spec.yaml:3:1: backend: unknown backend 'slurm'; valid: kubernetes, local",
    ),
    "unknown-job-kind": (
        "name: x\njob: {kind: SparkJob, command: [a]}\n",
        "job.kind: Value error, unknown job kind 'SparkJob'; valid: Process, PyTorchJob, TFJob, MPIJob, JAXJob, XGBoostJob, TrainJob, Job, Serving",
    ),
    "unknown-postprocessor": (
        "name: x\njob: {command: [a]}\npostprocess:\n  - {kind: magic}\n",
        "postprocess.0: Input tag 'magic' found using 'kind' does not match any of the expected tags: 'regex', "
        "'command', 'python'",
    ),
    "empty-sweep": ("name: x\njob: {command: [a]}\nparameters: {n: []}\n", "parameter 'n' is an empty list"),
    "template-error": (
        "name: x\njob: {command: [a, '{{ nope }}']}\n",
        "job.command[1] (trial no parameters): undefined variable: 'nope' is undefined",
    ),
    "missing-template": ("name: x\njob: {template: job.yaml.j2}\n", "spec.yaml:2:7: job.template: "),
}


def test_good_experiment_first(home: Path, write) -> None:
    assert runner.invoke(app, ["run", str(write("spec.yaml", GOOD)), "--id", "keep"]).exit_code == 0


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_spec(case: str, home: Path, write) -> None:
    assert runner.invoke(app, ["run", str(write("good.yaml", GOOD)), "--id", "keep"]).exit_code == 0
    before = runner.invoke(app, ["results", "keep", "-f", "json"]).output
    text, expected = BAD[case]
    spec = write("spec.yaml", text)
    for command in (["run", str(spec), "--id", "keep"], ["render", str(spec)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2, result.output
        assert expected.replace("Value error, ", "") in result.output.replace("\n", "")
        assert "Traceback" not in result.output
        assert isinstance(result.exception, SystemExit)
    assert runner.invoke(app, ["results", "keep", "-f", "json"]).output == before


def test_missing_spec_file(home: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(tmp_path / "absent.yaml")])
    assert result.exit_code == 2
    assert "absent.yaml: spec file not found" in result.output


def test_missing_params_file_and_bad_set(home: Path, write) -> None:
    spec = write("spec.yaml", GOOD)
    result = runner.invoke(app, ["run", str(spec), "--params", "nope.yaml"])
    assert result.exit_code == 2 and "nope.yaml: parameter file not found" in result.output
    result = runner.invoke(app, ["run", str(spec), "--set", "novalue"])
    assert result.exit_code == 2 and "expected key=value" in result.output


def test_unknown_experiment_id(home: Path) -> None:
    for command in (["show", "nope"], ["results", "nope"], ["results", "nope", "-f", "csv"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2
        assert "no experiment 'nope' in the store" in result.output


def test_resume_with_another_job_is_refused(home: Path, write) -> None:
    assert runner.invoke(app, ["run", str(write("a.yaml", GOOD)), "--id", "same"]).exit_code == 0
    before = runner.invoke(app, ["results", "same", "-f", "json"]).output
    changed = GOOD.replace("v={{ n }}", "v={{ n }} * 2")
    result = runner.invoke(app, ["run", str(write("b.yaml", changed)), "--id", "same"])
    assert result.exit_code == 2
    assert "different job definition" in result.output
    assert runner.invoke(app, ["results", "same", "-f", "json"]).output == before


def test_usage_errors_exit_2(home: Path) -> None:
    assert runner.invoke(app, ["run"]).exit_code == 2
    assert runner.invoke(app, ["results", "x", "--format", "xml"]).exit_code == 2
