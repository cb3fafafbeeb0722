"""The Argo WorkflowTemplate and the Tekton Task of ``kubebench deploy argo-template | tekton-task``:
valid against their engines' CRD schemas (vendored in tests/data/pipelines, see SOURCES.md there),
checked as an API server with ``fieldValidation=Strict`` checks them, and every variable they use
declared (what Argo's controller and Tekton's webhook refuse otherwise)."""

from __future__ import annotations

import functools
import gzip
import hashlib
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from support.cluster.schemas import strict
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.pipelines.outputs import RunOutputs

runner = CliRunner()
VENDORED = Path(__file__).resolve().parents[1] / "data" / "pipelines"
#: file → (sha256 of the upstream bytes, the served version validated)
CRDS = {"argoproj.io_workflowtemplates.yaml.gz": ("e932631a04a0f3a226b2ca8c68d43214c071c5d8aa6961b23298b81cbea3d9a5", "v1alpha1"),
        "300-task.yaml.gz": ("7d5659628e9abc63050f3d5718aeba20d10c94a9e30201f0a818b7b0609f0274", "v1")}
RUN_FILES = set(RunOutputs("x").files())


@functools.cache
def validator(file: str) -> jsonschema.protocols.Validator:
    data = gzip.decompress((VENDORED / file).read_bytes())
    digest, version = CRDS[file]
    assert hashlib.sha256(data).hexdigest() == digest, f"{file} is not the upstream file SOURCES.md names"
    crd = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    return jsonschema.Draft7Validator(strict(served["schema"]["openAPIV3Schema"]))


def errors(file: str, doc: dict) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(file).iter_errors(doc)]


def emitted(command: str, *args: str) -> dict:
    result = runner.invoke(app, ["deploy", command, *args])
    assert result.exit_code == 0, result.output
    (doc,) = yaml.safe_load_all(result.output)
    return doc


@pytest.mark.parametrize("args", [(), ("--store-secret", "kb-store", "-n", "ml", "--image", "reg.example/kubebench:1.2")])
def test_the_workflow_template_is_valid_and_uses_only_what_it_declares(args: tuple[str, ...]) -> None:
    doc = emitted("argo-template", *args)
    assert (doc["apiVersion"], doc["kind"]) == ("argoproj.io/v1alpha1", "WorkflowTemplate")
    assert errors("argoproj.io_workflowtemplates.yaml.gz", doc) == []
    spec = doc["spec"]
    declared = {p["name"] for p in spec["arguments"]["parameters"]}
    text = yaml.safe_dump(doc)
    assert set(re.findall(r"\{\{workflow\.parameters\.([\w-]+)\}\}", text)) == declared == {"spec", "commit"}
    templates = {t["name"]: t for t in spec["templates"]}
    outputs = {name: {p["name"] for p in t.get("outputs", {}).get("parameters", [])} for name, t in templates.items()}
    for step, param in re.findall(r"\{\{steps\.([\w-]+)\.outputs\.parameters\.([\w-]+)\}\}", text):
        assert param in outputs[step], (step, param)
    # each output parameter is a file its step writes (kubebench run/check --outputs DIR)
    for name, written in (("run", RUN_FILES), ("gate", {"verdict"})):
        container = templates[name]["container"]
        folder = container["args"][container["args"].index("--outputs") + 1]
        assert {p["valueFrom"]["path"] for p in templates[name]["outputs"]["parameters"]} == {f"{folder}/{f}" for f in written}
    run_args = templates["run"]["container"]["args"]
    assert run_args[:6] == ["run", "{{workflow.parameters.spec}}", "--backend", "kubernetes", "--id", "{{workflow.uid}}"]
    assert templates["gate"]["container"]["args"][:3] == ["check", "{{workflow.uid}}", "--first-ok"]
    assert spec["podMetadata"]["labels"]["app.kubernetes.io/part-of"] == "kubebench"


def test_the_tekton_task_is_valid_and_uses_only_what_it_declares() -> None:
    doc = emitted("tekton-task", "--store-secret", "kb-store")
    assert (doc["apiVersion"], doc["kind"]) == ("tekton.dev/v1", "Task")
    assert errors("300-task.yaml.gz", doc) == []
    spec = doc["spec"]
    text = yaml.safe_dump(spec["steps"]) + yaml.safe_dump(spec["params"])
    assert set(re.findall(r"\$\(params\.([\w-]+)\)", text)) == {p["name"] for p in spec["params"]}
    assert {r["name"] for r in spec["results"]} == RUN_FILES | {"verdict"}
    for step in spec["steps"]:
        assert step["args"][step["args"].index("--outputs") + 1] == "/tekton/results"
        store = next(e for e in step["env"] if e["name"] == "KUBEBENCH_STORE")
        assert store["valueFrom"]["secretKeyRef"] == {"name": "kb-store", "key": "url"}
    assert [s["name"] for s in spec["steps"]] == ["run", "gate"]
    assert doc["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}


@pytest.mark.parametrize(("file", "command", "path", "field"), [
    ("argoproj.io_workflowtemplates.yaml.gz", "argo-template", ("spec", "templates", 1, "container"), "resource"),
    ("300-task.yaml.gz", "tekton-task", ("spec", "steps", 0), "resources"),  # v1 steps take computeResources
])
def test_the_schemas_refuse_a_field_their_engine_does_not_have(file: str, command: str, path: tuple, field: str) -> None:
    doc = emitted(command)
    node = doc
    for part in path:
        node = node[part]
    node[field] = {"limits": {"memory": "1Gi"}}
    assert any("Additional properties are not allowed" in e and repr(field) in e for e in errors(file, doc)), errors(file, doc)
