"""Rendering a run: Jinja2 in the shorthand, .j2 and .jsonnet templates, and their errors."""

from __future__ import annotations

import textwrap
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from kubebench.errors import SpecError, TemplateError
from kubebench.paths import RunPaths
from kubebench.plan.plan import Run, make_plan
from kubebench.render.job import RenderedJob, job_fingerprint, job_name, labels, render_run, template_context
from kubebench.render.templating import render_string
from kubebench.spec.load import load_spec
from kubebench.spec.model import LoadedSpec

EXP = "bench-202401010000-abcd"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytorch-cnn" / "benchmark.yaml"


def load(tmp_path: Path, spec_text: str, files: dict[str, str] | None = None) -> LoadedSpec:
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(spec_text), encoding="utf-8")
    return load_spec(path)


def env_for(run: Run) -> dict[str, str]:
    return RunPaths(PurePosixPath("/exp"), PurePosixPath("/data"), EXP, run.id).env(run.trial.id, run.repeat)


def render_all(loaded: LoadedSpec) -> list[tuple[RenderedJob, Run, dict[str, str]]]:
    """Render every run of the spec's plan."""
    out = []
    for run in make_plan(loaded.spec, EXP, job_fingerprint(loaded)).runs:
        env = env_for(run)
        out.append((render_run(loaded, run, EXP, env), run, env))
    return out


def render(tmp_path: Path, spec_text: str, files: dict[str, str] | None = None) -> tuple[RenderedJob, Run, dict]:
    return render_all(load(tmp_path, spec_text, files))[0]


def render_error(tmp_path: Path, spec_text: str, files: dict[str, str] | None = None) -> SpecError:
    loaded = load(tmp_path, spec_text, files)
    with pytest.raises(SpecError) as info:
        render_all(loaded)
    return info.value


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container["env"]}


# --- Jinja2 in the shorthand -----------------------------------------------------------------

SWEPT = """\
name: bench
job:
  kind: PyTorchJob
  workers: "{{ workers }}"
  command: [python, train.py, --batch-size, "{{ batch_size }}", --tag, "bs{{ batch_size }}-w{{ workers }}"]
  env: {BS: "{{ batch_size }}"}
parameters:
  batch_size: [16, 32]
  workers: [1, 3]
"""


def test_shorthand_fields_take_each_trials_parameters(tmp_path: Path) -> None:
    rendered = render_all(load(tmp_path, SWEPT))
    assert len(rendered) == 4
    for job, run, _ in rendered:
        bs, w = run.trial.params["batch_size"], run.trial.params["workers"]
        replicas = job.manifest["spec"]["pytorchReplicaSpecs"]
        assert sum(r["replicas"] for r in replicas.values()) == w
        for r in replicas.values():
            (container,) = r["template"]["spec"]["containers"]
            assert container["command"] == ["python", "train.py", "--batch-size", str(bs), "--tag", f"bs{bs}-w{w}"]
            assert env_of(container)["BS"] == str(bs)


def test_templated_workers_become_an_int(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, SWEPT.replace("[1, 3]", "[3]"))
    assert job.manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2
    assert isinstance(job.manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"], int)


def test_templated_kind(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, "name: b\njob:\n  kind: '{{ kind }}'\n  command: [x]\nparameters: {kind: TFJob}\n")
    assert job.kind == "TFJob"


def test_templated_unknown_kind_lists_valid_kinds(tmp_path: Path) -> None:
    error = render_error(tmp_path, "name: b\njob:\n  kind: '{{ kind }}'\n  command: [x]\nparameters: {kind: Spark}\n")
    assert str(error) == (
        "job.kind (trial kind=Spark): unknown job kind 'Spark'; "
        "valid: Process, PyTorchJob, TFJob, MPIJob, JAXJob, XGBoostJob, TrainJob, Job, Serving"
    )


@pytest.mark.parametrize("value", ["2.5", "two", "''"])
def test_non_integer_workers_name_the_field_and_trial(tmp_path: Path, value: str) -> None:
    spec = f"name: b\njob:\n  workers: '{{{{ w }}}}'\n  command: [x]\nparameters: {{w: {value}, lr: 0.1}}\n"
    error = render_error(tmp_path, spec)
    message = str(error)
    assert message.startswith("job.workers (trial w=")
    assert "lr=0.1" in message
    assert "is not a whole number" in message


def test_zero_workers_is_an_error(tmp_path: Path) -> None:
    error = render_error(tmp_path, "name: b\njob:\n  workers: '{{ w }}'\n  command: [x]\nparameters: {w: 0}\n")
    assert str(error) == "job.workers (trial w=0): must be at least 1, got 0"


def test_undefined_variable_in_shorthand_names_field_and_trial(tmp_path: Path) -> None:
    error = render_error(tmp_path, "name: b\njob:\n  command: [x, '{{ batchsize }}']\nparameters: {batch_size: 8}\n")
    assert isinstance(error, TemplateError)
    message = str(error)
    assert message.startswith("job.command[1] (trial batch_size=8): undefined variable")
    assert "'batchsize' is undefined" in message
    assert "'{{ batchsize }}'" in message


def test_undefined_variable_in_shorthand_env(tmp_path: Path) -> None:
    error = render_error(tmp_path, "name: b\njob:\n  command: [x]\n  env: {A: '{{ nope }}'}\n")
    assert str(error).startswith("job.env.A (trial no parameters): undefined variable")


def test_jinja_syntax_error_in_shorthand(tmp_path: Path) -> None:
    error = render_error(tmp_path, "name: b\njob:\n  image: '{{ tag '\n  command: [x]\nparameters: {tag: 1}\n")
    assert isinstance(error, TemplateError)
    assert str(error).startswith("job.image (trial tag=1): template error")


def test_shorthand_can_read_kubebench_context(tmp_path: Path) -> None:
    command = "[x, '{{ kubebench.run_id }}', '{{ kubebench.env.KUBEBENCH_EXP_OUTPUT_PATH }}']"
    job, run, env = render(tmp_path, f"name: b\njob:\n  command: {command}\n")
    container = job.manifest["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["x", run.id, env["KUBEBENCH_EXP_OUTPUT_PATH"]]


def test_sandbox_blocks_unsafe_attribute_access() -> None:
    with pytest.raises(TemplateError):
        render_string("{{ x.__class__.__mro__ }}", {"x": 1}, "job.command[0]")


def test_plain_strings_are_not_rendered() -> None:
    assert render_string("100% {not jinja}", {}, "job.image") == "100% {not jinja}"


# --- the example -----------------------------------------------------------------------------


@pytest.mark.skipif(not EXAMPLE.exists(), reason="example not in this checkout")
def test_example_renders_every_trial() -> None:
    loaded = load_spec(EXAMPLE)
    rendered = render_all(loaded)
    assert len(rendered) == 12
    for job, run, _env in rendered:
        replicas = job.manifest["spec"]["pytorchReplicaSpecs"]
        assert sum(r["replicas"] for r in replicas.values()) == run.trial.params["workers"]
        container = replicas["Master"]["template"]["spec"]["containers"][0]
        command = container["command"]
        assert command[command.index("--batch-size") + 1] == str(run.trial.params["batch_size"])
        assert env_of(container)["KUBEBENCH_TRIAL_ID"] == run.trial.id
        assert job.manifest["spec"]["runPolicy"]["activeDeadlineSeconds"] == 360  # timeout 5m + 1m margin
        assert job.workdir == EXAMPLE.parent


# --- RenderedJob, names, labels, fingerprints ------------------------------------------------


def test_workdir_is_the_spec_folder_or_working_dir(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, "name: b\njob:\n  command: [x]\n")
    assert job.workdir == tmp_path.resolve()
    job, _, _ = render(tmp_path, "name: b\njob:\n  command: [x]\n  working_dir: sub/dir\n")
    assert job.workdir == tmp_path.resolve() / "sub" / "dir"


def test_job_name_and_labels_of_a_run(tmp_path: Path) -> None:
    loaded = load(tmp_path, "name: b\njob:\n  command: [x]\n")
    run = make_plan(loaded.spec, EXP, "fp").runs[0]
    assert job_name(run) == f"kb-{run.id}"
    assert labels("e" * 80, run) == {
        "kubebench.io/experiment": "e" * 63,
        "kubebench.io/trial": run.trial.id,
        "kubebench.io/run": run.id,
    }


def test_template_context_names(tmp_path: Path) -> None:
    loaded = load(tmp_path, "name: b\njob:\n  command: [x]\nparameters: {a: 1}\ntimeout: 2m\n")
    run = make_plan(loaded.spec, EXP, "fp").runs[0]
    env = env_for(run)
    context = template_context(loaded, run, EXP, env)
    assert context["a"] == 1 and context["params"] == {"a": 1}
    assert context["kubebench"] == {
        "experiment_id": EXP,
        "trial_id": run.trial.id,
        "run_id": run.id,
        "repeat": 0,
        "name": f"kb-{run.id}",
        "benchmark": "b",
        "timeout": 120.0,
        "env": env,
    }


def test_job_fingerprint_follows_the_job_and_template(tmp_path: Path) -> None:
    a = load(tmp_path, "name: a\njob:\n  command: [x]\nrepeats: 3\n")
    b = load(tmp_path, "name: b\njob:\n  command: [x]\nrepeats: 5\n")
    c = load(tmp_path, "name: a\njob:\n  command: [y]\n")
    assert job_fingerprint(a) == job_fingerprint(b)
    assert job_fingerprint(a) != job_fingerprint(c)
    t1 = load(tmp_path, "name: t\njob:\n  template: job.j2\n", {"job.j2": "kind: Job\n"})
    t2 = load(tmp_path, "name: t\njob:\n  template: job.j2\n", {"job.j2": "kind: Job # changed\n"})
    assert job_fingerprint(t1) != job_fingerprint(t2)


# --- template files --------------------------------------------------------------------------

PYTORCH_J2 = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {{ kubebench.name }}-custom
  labels: {team: ml}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: my/image:{{ tag }}
              command: [python, train.py, --batch-size, "{{ batch_size }}"]
              env:
                - {name: OUT, value: "{{ kubebench.env.KUBEBENCH_EXP_OUTPUT_PATH }}"}
{% if workers > 1 %}
    Worker:
      replicas: {{ workers - 1 }}
      template:
        spec:
          containers:
            - name: pytorch
              image: my/image:{{ tag }}
              command: [python, train.py, --batch-size, "{{ batch_size }}"]
{% endif %}
"""


def test_jinja_template_renders_a_pytorchjob_with_env_and_labels(tmp_path: Path) -> None:
    spec = "name: t\njob:\n  template: job.yaml.j2\nparameters: {batch_size: 64, workers: [1, 4], tag: v1}\n"
    rendered = render_all(load(tmp_path, spec, {"job.yaml.j2": PYTORCH_J2}))
    assert len(rendered) == 2
    for job, run, env in rendered:
        m = job.manifest
        assert (m["apiVersion"], m["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
        assert job.name == m["metadata"]["name"] == f"kb-{run.id}-custom"
        assert m["metadata"]["labels"] == {
            "team": "ml",
            "kubebench.io/experiment": EXP,
            "kubebench.io/trial": run.trial.id,
            "kubebench.io/run": run.id,
        }
        replicas = m["spec"]["pytorchReplicaSpecs"]
        expected_types = ["Master"] if run.trial.params["workers"] == 1 else ["Master", "Worker"]
        assert list(replicas) == expected_types
        for replica in replicas.values():
            assert replica["template"]["metadata"]["labels"]["kubebench.io/run"] == run.id
            (container,) = replica["template"]["spec"]["containers"]
            assert container["image"] == "my/image:v1"
            assert container["command"][-1] == "64"
            values = env_of(container)
            assert {k: values[k] for k in env} == env
        master_env = env_of(replicas["Master"]["template"]["spec"]["containers"][0])
        assert master_env["OUT"] == env["KUBEBENCH_EXP_OUTPUT_PATH"]
        if "Worker" in replicas:
            assert replicas["Worker"]["replicas"] == 3


def test_jinja_template_without_a_name_gets_the_run_name(tmp_path: Path) -> None:
    template = "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers: [{name: m}]\n"
    job, run, _ = render(tmp_path, "name: t\njob:\n  template: job.j2\n", {"job.j2": template})
    assert job.name == job.manifest["metadata"]["name"] == f"kb-{run.id}"
    (container,) = job.manifest["spec"]["template"]["spec"]["containers"]
    assert env_of(container)["KUBEBENCH_RUN_ID"] == run.id


JSONNET = """\
local p = std.extVar('params');
local kb = std.extVar('kubebench');
local container = {
  name: 'main',
  image: 'busybox',
  command: ['sh', '-c', 'echo ' + p.batch_size + ' ' + kb.run_id],
  env: [{ name: 'TRIAL', value: kb.trial_id }],
};
{
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: { name: kb.name, annotations: { benchmark: kb.benchmark } },
  spec: {
    completions: std.extVar('workers'),
    parallelism: p.workers,
    activeDeadlineSeconds: kb.timeout,
    template: { spec: { restartPolicy: 'Never', containers: [container] } },
  },
}
"""


def test_jsonnet_template_reads_params_and_kubebench(tmp_path: Path) -> None:
    spec = "name: jn\njob:\n  template: job.jsonnet\nparameters: {batch_size: [8, 16], workers: 2}\ntimeout: 90s\n"
    rendered = render_all(load(tmp_path, spec, {"job.jsonnet": JSONNET}))
    assert len(rendered) == 2
    for job, run, env in rendered:
        m = job.manifest
        assert (m["apiVersion"], m["kind"]) == ("batch/v1", "Job")
        assert job.name == f"kb-{run.id}"
        assert m["metadata"]["annotations"] == {"benchmark": "jn"}
        assert m["metadata"]["labels"]["kubebench.io/trial"] == run.trial.id
        assert m["spec"]["completions"] == m["spec"]["parallelism"] == 2
        assert m["spec"]["activeDeadlineSeconds"] == 90
        template = m["spec"]["template"]
        assert template["metadata"]["labels"]["kubebench.io/run"] == run.id
        (container,) = template["spec"]["containers"]
        assert container["command"] == ["sh", "-c", f"echo {run.trial.params['batch_size']} {run.id}"]
        values = env_of(container)
        assert values["TRIAL"] == run.trial.id
        assert {k: values[k] for k in env} == env


# --- template errors -------------------------------------------------------------------------


def template_error(tmp_path: Path, name: str, text: str, params: str = "{w: 2}") -> str:
    error = render_error(tmp_path, f"name: t\njob:\n  template: {name}\nparameters: {params}\n", {name: text})
    assert isinstance(error, TemplateError)
    return str(error)


def test_jinja_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    message = template_error(tmp_path, "job.j2", "apiVersion: v1\nkind: Job\nspec:\n  x: {% if %}\n")
    assert message.startswith(f"{tmp_path.resolve() / 'job.j2'}:4: template syntax error")


def test_undefined_variable_in_template_names_its_line(tmp_path: Path) -> None:
    message = template_error(tmp_path, "job.j2", "apiVersion: v1\nkind: Job\nspec:\n  x: {{ w }}\n  y: {{ nope }}\n")
    assert message.startswith(f"{tmp_path.resolve() / 'job.j2'}:5: undefined variable")
    assert "'nope' is undefined" in message


def test_template_output_that_is_not_yaml(tmp_path: Path) -> None:
    message = template_error(tmp_path, "job.j2", "apiVersion: v1\nkind: Job\nspec: [a\n  b: {{ w }}\n")
    assert message.startswith(f"{tmp_path.resolve() / 'job.j2'}:4: rendered template is not valid YAML")


@pytest.mark.parametrize("text", ["apiVersion: v1\nspec: {}\n", "- kind: Job\n", "just text\n", ""])
def test_template_output_without_kind(tmp_path: Path, text: str) -> None:
    message = template_error(tmp_path, "job.j2", text)
    assert message == f"{tmp_path.resolve() / 'job.j2'}: the template must produce one manifest (a mapping with `kind`)"


def test_jsonnet_error_keeps_the_jsonnet_location(tmp_path: Path) -> None:
    text = "local p = std.extVar('params');\n{\n  kind: 'Job',\n  x: p.nope,\n}\n"
    message = template_error(tmp_path, "job.jsonnet", text)
    path = tmp_path.resolve() / "job.jsonnet"
    assert message.startswith(f"{path}: jsonnet error:")
    assert f"{path}:4:" in message
    assert "field does not exist: nope" in message


def test_jsonnet_syntax_error(tmp_path: Path) -> None:
    message = template_error(tmp_path, "job.jsonnet", "{\n  kind: 'Job',\n  x: ,\n}\n")
    path = tmp_path.resolve() / "job.jsonnet"
    assert message.startswith(f"{path}: jsonnet error:")
    assert f"{path}:3:" in message


def test_jsonnet_output_without_kind(tmp_path: Path) -> None:
    message = template_error(tmp_path, "job.jsonnet", "[1, 2]\n")
    assert "the template must produce one manifest" in message
