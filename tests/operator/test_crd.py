"""The Benchmark CRD is generated from the spec model: structural, installable, and it accepts every
example spec and refuses what the loader refuses (types, enums, required keys) for the fields it types."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cluster.crdschema import field_check, validator

from kubebench.errors import SpecError
from kubebench.operator import API_VERSION, CRD_NAME, GROUP, KIND, PLURAL
from kubebench.operator.crd import PRINTER_COLUMNS, crd, openapi_schema
from kubebench.operator.resource import BenchmarkResourceSpec, BenchmarkStatus
from kubebench.spec.load import validate_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPECS = sorted(p for p in EXAMPLES.glob("*/*.yaml") if (yaml.safe_load(p.read_text()) or {}).get("apiVersion") == "kubebench/v1")
CHECK = validator(openapi_schema())


def resource(body: dict, **spec: Any) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "b"}, "spec": {"benchmark": body, **spec}}


def crd_refuses(doc: dict) -> list[str]:
    unknown, errors = field_check(CHECK, doc)
    return errors + [f"unknown field {u}" for u in unknown]


def loader_refuses(body: dict) -> str | None:
    try:
        validate_spec(body, "spec.benchmark", {})
    except SpecError as e:
        return str(e)
    return None


def walk(node: Any, path: str = "") -> list[tuple[str, dict]]:
    out = []
    if isinstance(node, dict):
        out.append((path, node))
        for key in ("properties", "oneOf", "anyOf", "items", "additionalProperties"):
            value = node.get(key)
            if isinstance(value, dict) and key == "properties":
                out += [n for k, v in value.items() for n in walk(v, f"{path}.{k}")]
            elif isinstance(value, dict):
                out += walk(value, f"{path}[{key}]")
            elif isinstance(value, list):
                out += [n for i, v in enumerate(value) for n in walk(v, f"{path}[{key}{i}]")]
    return out


def test_the_crd_names_come_from_one_place_and_it_installs() -> None:
    doc = crd()
    assert doc["metadata"]["name"] == CRD_NAME == f"{PLURAL}.{GROUP}"
    names = doc["spec"]["names"]
    assert (names["kind"], names["plural"], names["categories"]) == (KIND, PLURAL, ["kubebench"]) and names["shortNames"]
    (version,) = doc["spec"]["versions"]
    assert version["subresources"] == {"status": {}} and version["served"] and version["storage"]
    import kubernetes_validate

    kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)


def test_the_schema_is_structural() -> None:
    for path, node in walk(openapi_schema()):
        junctor = "[oneOf" in path.rsplit(".", 1)[-1] or "[anyOf" in path.rsplit(".", 1)[-1]
        assert "$ref" not in node and "uniqueItems" not in node and "default" not in node, path
        assert not ("properties" in node and "additionalProperties" in node), path
        if "[oneOf" in path or "[anyOf" in path:
            assert not {"type", "description", "nullable", "x-kubernetes-preserve-unknown-fields"} & set(node), path
        elif not junctor:
            assert node.get("type") or node.get("x-kubernetes-int-or-string") \
                or node.get("x-kubernetes-preserve-unknown-fields"), f"{path}: no type"
        assert not isinstance(node.get("exclusiveMinimum"), (int, float)) or isinstance(node["exclusiveMinimum"], bool)


@pytest.mark.parametrize("path", SPECS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_example_spec_is_accepted_as_a_benchmark_resource(path: Path) -> None:
    body = yaml.safe_load(path.read_text())
    assert crd_refuses(resource(body)) == []
    BenchmarkResourceSpec.model_validate({"benchmark": body})


def test_the_example_benchmark_resource_is_accepted() -> None:
    doc = yaml.safe_load((EXAMPLES / "kubebench-v1-compat" / "benchmark-cr.yaml").read_text())
    assert doc["apiVersion"] == API_VERSION and crd_refuses(doc) == []


BASE = {"name": "b", "job": {"command": ["python", "-c", "pass"]}, "metrics": [{"name": "m"}],
        "postprocess": [{"kind": "regex", "file": "x.log", "pattern": "(?P<m>.*)"}]}
#: Changes of a valid spec that the loader refuses, and the CRD must refuse too.
BAD = {
    "name of the wrong type": {"name": ["b"]},
    "name missing": {"name": None},
    "job missing": {"job": None},
    "integer field given a string": {"parallelism": "many"},
    "below a minimum": {"warmup_runs": -1},
    "enum": {"sweep": "random"},
    "enum inside a list": {"metrics": [{"name": "m", "goal": "up"}]},
    "required key inside a list": {"metrics": [{"unit": "s"}]},
    "metric name pattern": {"metrics": [{"name": "1bad"}]},
    "unknown plugin kind": {"postprocess": [{"kind": "magic"}]},
    "a plugin's required key": {"postprocess": [{"kind": "regex", "file": "x.log"}]},
    "nested enum": {"job": {"command": ["x"], "mpi_api_version": "kubeflow.org/v9"}},
    "unknown key": {"colour": "blue"},
    "boolean given a list": {"telemetry": {"enabled": [1]}},
}


@pytest.mark.parametrize("change", sorted(BAD))
def test_the_crd_refuses_what_the_loader_refuses(change: str) -> None:
    body = {k: v for k, v in {**BASE, **BAD[change]}.items() if v is not None}
    assert loader_refuses(BASE) is None and crd_refuses(resource(BASE)) == []
    assert loader_refuses(body) is not None
    assert crd_refuses(resource(body)), f"the CRD accepts what the loader refuses: {change}"


def test_the_resource_spec_refuses_bad_fields_at_both() -> None:
    for bad in ({"suspend": "maybe"}, {"gate": {"correction": "bonferroni"}}, {"experimentId": "Not_An_Id"},
                {"schedule": {"cron": "every day"}}, {"runner": {"storeSecretRef": {"key": "url"}}},
                {"ttlSecondsAfterFinished": -5}):
        doc = resource(BASE, **bad)
        assert crd_refuses(doc), bad
        with pytest.raises(ValueError):
            BenchmarkResourceSpec.model_validate(doc["spec"])


def test_every_printer_column_resolves_on_a_sample_status() -> None:
    status = sample_status(24)
    obj = {"metadata": {"creationTimestamp": "2026-12-02T02:15:04Z"}, "status": status}
    for column in PRINTER_COLUMNS:
        assert jsonpath(obj, column["jsonPath"]) not in (None, ""), column


def jsonpath(obj: dict, path: str) -> Any:
    """The few JSONPath forms the columns use: ``.a.b`` and ``.a[?(@.k=="v")].f``."""
    node: Any = obj
    for part in re.findall(r"\.([A-Za-z]+)(?:\[\?\(@\.(\w+)==(\"[^\"]*\")\)\])?", path):
        name, key, value = part
        node = node.get(name) if isinstance(node, dict) else None
        if key:
            node = next((x for x in node or [] if x.get(key) == json.loads(value)), None)
        if node is None:
            return None
    return node


def sample_status(runs: int) -> dict:
    conditions = [{"type": t, "status": "True" if t in ("Accepted", "Failed") else "False", "reason": "RunsFailed",
                   "message": "x" * 1000, "observedGeneration": 1, "lastTransitionTime": "2026-12-02T02:41:40Z"}
                  for t in ("Accepted", "Suspended", "Complete", "Failed", "Regressed")]
    status = {"observedGeneration": 1, "state": "Failed", "conditions": conditions, "runnerJob": "kb-runner-b-1234",
              "startTime": "2026-12-02T02:15:04Z", "completionTime": "2026-12-02T02:41:40Z",
              "experimentId": "pytorch-cnn-202612020215-x7k2", "progress": f"{runs}/{runs}",
              "runs": {"planned": runs, "succeeded": runs - 1, "failed": 1},
              "primary": {"metric": "images_per_sec", "unit": "images/s", "trial": "batch_size=32 " * 18,
                          "median": "812.5", "ciLow": "808.1", "ciHigh": "816.9", "cv": "0.4%", "n": 3},
              "gate": {"against": "pytorch-cnn", "verdict": "regressed", "regressed": 1, "tests": 8, "detail": "y" * 1000},
              "dashboardPath": "/experiments/pytorch-cnn-202612020215-x7k2"}
    return BenchmarkStatus.model_validate(status).model_dump(by_alias=True, exclude_none=True)


def test_a_status_is_bounded_whatever_the_number_of_runs() -> None:
    big = sample_status(10_000)
    assert len(json.dumps(big)) < 16 * 1024
    assert crd_refuses({**resource(BASE), "status": big}) == []
    with pytest.raises(ValueError):  # no room for a ninth condition or an unbounded message
        BenchmarkStatus.model_validate({**big, "conditions": big["conditions"] * 2})


def test_kubebench_deploy_crd_prints_the_generated_crd() -> None:
    from typer.testing import CliRunner

    from kubebench.cli import app

    result = CliRunner().invoke(app, ["deploy", "crd"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.output) == crd()


def test_deploy_manifests_operator_adds_the_crd_and_controller_instead_of_a_runner() -> None:
    from typer.testing import CliRunner

    from kubebench.cli import app

    result = CliRunner().invoke(app, ["deploy", "manifests", "--operator", "-n", "bench"])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    kinds = [d["kind"] for d in docs]
    assert "CustomResourceDefinition" in kinds and "CronJob" not in kinds
    # no runner: the one Job makes the store's Secret (deploy manifests' PostgreSQL)
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Job"] == ["kubebench-store-secret"]
    (deployment,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "kubebench-operator"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["command"] == ["kubebench", "operator", "--leader-elect"]
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Role"}
    status_rule = {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["patch"]}
    assert status_rule in roles["kubebench-benchmark-status"]["rules"]
