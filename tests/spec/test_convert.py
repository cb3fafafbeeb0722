"""``kubebench convert kubebenchjob``: the original Kubebench's KubebenchJob (v1alpha1 and v1alpha2,
kubeflow/kubebench ``controller/pkg/apis/kubebenchjob/*/types.go``) becomes a spec that loads and
renders; what has no equivalent is refused by field, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.errors import SpecError
from kubebench.runner import make_backend, plan_experiment
from kubebench.settings import settings
from kubebench.spec.convert import convert
from kubebench.spec.load import load_spec

MANIFEST = """apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: tf-cnn}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: {{inputs.parameters.num-workers}}
      template:
        spec:
          containers:
          - name: tensorflow
            image: gcr.io/kubeflow/tf-benchmarks-cpu:v20171202-bdab599-dirty-284af3
            args: [--batch_size={{workflow.parameters.batch-size}}, --model=resnet50]
"""
V1ALPHA2 = {"apiVersion": "kubeflow.org/v1alpha2", "kind": "KubebenchJob", "metadata": {"name": "tf-cnn"}, "spec": {
    "serviceAccountName": "kubebench-user", "arguments": {"parameters": [{"name": "num-workers", "value": "2"},
                                                                          {"name": "batch-size", "value": "32"}]},
    "managedVolumes": {"experimentVolume": {"name": "exp", "persistentVolumeClaim": {"claimName": "kubebench-exp"}},
                       "workflowVolume": {"name": "wf", "emptyDir": {}}},
    "workflowAgent": {"container": {"name": "agent", "image": "gcr.io/kubeflow-images-public/kubebench/workflow-agent:v0.5.0"}},
    "tasks": [{"name": "run-tf-job", "resource": {"manifest": MANIFEST, "options": {
        "autoWatch": {"timeout": "10m"}, "numCopies": 3, "mountManagedVolumes": True, "autoDelete": True}}},
              {"name": "post", "dependencies": ["run-tf-job"], "container": {
                  "name": "post", "image": "python:3.11", "command": ["python", "post.py"], "args": ["--x"]}}]}}
V1ALPHA1 = {"apiVersion": "kubeflow.org/v1alpha1", "kind": "KubebenchJob", "metadata": {"name": "legacy"}, "spec": {
    "serviceAccount": "default", "volumeSpecs": {
        "configVolume": {"name": "cfg", "persistentVolumeClaim": {"claimName": "kubebench-config"}},
        "experimentVolume": {"name": "exp", "persistentVolumeClaim": {"claimName": "kubebench-exp"}}},
    "jobSpecs": {"mainJob": {"resource": {
        "manifestTemplate": {"valueFrom": {"ksonnet": {"registry": "github.com/kubeflow/kubebench/tree/master/kubebench",
                                                       "package": "kubebench-examples", "prototype": "kubebench-example-tfcnn"}}},
        "manifestParameters": {"valueFrom": {"path": "/kubebench/config/tf-cnn/cpu.yaml"}},
        "createSuccessCondition": "createSuccess", "runSuccessCondition": "status.completionTime"}},
        "postJob": {"container": {"name": "post", "image": "p", "command": ["python3", "/kubebench/post.py"]}}},
    "reportSpecs": {"csv": [{"inputPath": "result.json", "outputPath": "report.csv"}]}}}


def write(tmp_path: Path, converted) -> Path:
    for name, text in converted.files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "benchmark.yaml").write_text(yaml.safe_dump(converted.spec))
    return tmp_path / "benchmark.yaml"


def test_a_v1alpha2_kubebenchjob_becomes_a_spec_that_renders_its_job(tmp_path: Path) -> None:
    converted = convert(V1ALPHA2)
    spec = converted.spec
    assert spec["job"] == {"kind": "TFJob", "template": "job.yaml.j2"} and spec["parameters"] == {"num_workers": "2", "batch_size": "32"}
    assert spec["timeout"] == "10m" and spec["repeats"] == 3
    assert spec["postprocess"] == [{"kind": "command", "command": ["python", "post.py", "--x"]}]
    assert spec["backend"] == {"kind": "kubernetes", "service_account": "kubebench-user", "storage": {"claim": "kubebench-exp"}}
    assert any("workflowAgent" in n for n in converted.notes) and any("workflowVolume" in n for n in converted.notes)
    loaded = load_spec(write(tmp_path, converted))
    experiment = plan_experiment(loaded, settings(home=tmp_path / "home"), "converted")
    manifest = experiment.render(experiment.plan.runs[0], make_backend(loaded)).manifest
    worker = manifest["spec"]["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2 and worker["template"]["spec"]["containers"][0]["args"][0] == "--batch_size=32"


def test_a_v1alpha1_kubebenchjob_needs_its_rendered_manifest_and_maps_the_rest(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="ksonnet prototype .* --manifest FILE"):
        convert(V1ALPHA1)
    converted = convert(V1ALPHA1, MANIFEST)
    assert converted.spec["backend"] == {"kind": "kubernetes", "service_account": "default", "storage": {"claim": "kubebench-exp"}}
    assert converted.spec["postprocess"] == [{"kind": "command", "command": ["python3", "/kubebench/post.py"]}]
    notes = " ".join(converted.notes)
    assert "--params cpu.yaml" in notes and "kubebench results ID -f csv" in notes and "runSuccessCondition" in notes
    assert load_spec(write(tmp_path, converted)).spec.job.kind == "TFJob"


def test_what_has_no_equivalent_is_refused_by_field_all_at_once() -> None:
    bad = {**V1ALPHA2, "spec": {**V1ALPHA2["spec"], "colour": 1, "arguments": {"artifacts": [{"name": "a"}]},
                                "tasks": [*V1ALPHA2["spec"]["tasks"], {"name": "pre", "container": {"command": ["x"]}},
                                          {"name": "in", "resource": {"manifest": MANIFEST}, "inputs": {"parameters": []}}]}}
    with pytest.raises(SpecError) as e:
        convert(bad)
    text = str(e.value)
    assert "spec.colour: not a field" in text and "spec.arguments.artifacts" in text and "2 resource tasks" in text
    unknown_kind = {**V1ALPHA2, "spec": {**V1ALPHA2["spec"], "tasks": [{"name": "t", "resource": {"manifest": "kind: Pod\n"}}]}}
    with pytest.raises(SpecError, match="kind 'Pod' is not a job kubebench runs"):
        convert(unknown_kind)
    with pytest.raises(SpecError, match="expected kubeflow.org/v1alpha1 or v1alpha2"):
        convert({**V1ALPHA2, "apiVersion": "kubeflow.org/v9"})


def test_the_command_writes_the_spec_and_its_template(tmp_path: Path) -> None:
    source = tmp_path / "kbjob.yaml"
    source.write_text(yaml.safe_dump(V1ALPHA2))
    result = CliRunner().invoke(app, ["convert", "kubebenchjob", str(source), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "job.yaml.j2").read_text().count("{{ num_workers }}") == 1
    assert load_spec(tmp_path / "out" / "benchmark.yaml").spec.name == "tf-cnn"
    again = CliRunner().invoke(app, ["convert", "kubebenchjob", str(source), "-o", str(tmp_path / "out")])
    assert again.exit_code == 2 and "already there" in again.output
