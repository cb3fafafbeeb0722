"""The schemas manifests are checked against: the real Kubeflow CRDs in ``tests/data/crds/`` and, for
the built-in kinds (batch/v1 Job, RBAC, PVC …), the Kubernetes OpenAPI schema.

CRD schemas are applied as a server does with ``fieldValidation=Strict``: an object schema that
lists its properties (and does not preserve unknown fields) accepts no other keys. CEL rules
(``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Callable

import jsonschema
import yaml

# Vendored with the tests (upstream files byte for byte; SOURCES.md there records repository, tag and sha256).
CRDS = Path(os.environ.get("KUBEBENCH_CRDS") or Path(__file__).resolve().parents[1] / "data" / "crds")
CRD_FILES = {
    ("kubeflow.org", "v1", "PyTorchJob"): "kubeflow.org_pytorchjobs.yaml",
    ("kubeflow.org", "v1", "TFJob"): "kubeflow.org_tfjobs.yaml",
    ("kubeflow.org", "v1", "MPIJob"): "kubeflow.org_mpijobs.yaml",
    ("kubeflow.org", "v2beta1", "MPIJob"): "kubeflow.org_mpijobs.v2beta1.yaml",
    ("kubeflow.org", "v1", "XGBoostJob"): "kubeflow.org_xgboostjobs.yaml",
    ("kubeflow.org", "v1", "PaddleJob"): "kubeflow.org_paddlejobs.yaml",
    ("kubeflow.org", "v1", "JAXJob"): "kubeflow.org_jaxjobs.yaml",
    ("trainer.kubeflow.org", "v1alpha1", "TrainJob"): "trainer.kubeflow.org_trainjobs.yaml",
}
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def crds_available() -> bool:
    """Whether every CRD file is in the CRD folder (vendored in tests/data/crds)."""
    return all((CRDS / f).is_file() for f in CRD_FILES.values())


@functools.cache
def crd_validator(group: str, version: str, kind: str) -> jsonschema.protocols.Validator:
    """A validator for ``kind`` of ``group/version``: the served version's openAPIV3Schema, strict."""
    crd = yaml.load((CRDS / CRD_FILES[(group, version, kind)]).read_text(), Loader=Loader)
    assert crd["spec"]["names"]["kind"] == kind and crd["spec"]["group"] == group
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
    schema = strict(served["schema"]["openAPIV3Schema"])
    return jsonschema.Draft7Validator(schema)


def strict(schema: Any) -> Any:
    """The schema with ``additionalProperties: false`` on every object schema that lists properties."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (strict(v) if k != "properties" else {p: strict(s) for p, s in v.items()}) for k, v in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@functools.cache
def builtin_validator() -> tuple[str, Callable[[dict], list[str]]]:
    """Errors of a built-in object against the Kubernetes schema: ``kubernetes-validate``'s strict
    JSON schemas when installed, else the JSON schema of the official client's models."""
    try:
        import kubernetes_validate
    except ImportError:
        return "kubernetes client models", _client_model_errors
    version = kubernetes_validate.latest_version()

    def errors(doc: dict) -> list[str]:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            return [f"{'.'.join(map(str, e.path))}: {e.message}"]
        return []

    return f"kubernetes-validate {version} (strict)", errors


def _client_model_errors(doc: dict) -> list[str]:
    from kubernetes import client

    model = getattr(client, f"V1{doc['kind']}")
    validator = jsonschema.Draft202012Validator(model.model_json_schema(by_alias=True))
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def errors_of(doc: dict) -> list[str]:
    """Every schema violation of a manifest (a Kubeflow CR or a built-in kind)."""
    group, _, version = doc["apiVersion"].rpartition("/")
    key = (group, version, doc["kind"])
    if key in CRD_FILES:
        return [f"{'.'.join(map(str, e.path)) or '(root)'}: {e.message}"
                for e in crd_validator(*key).iter_errors(doc)]
    return builtin_validator()[1](doc)
