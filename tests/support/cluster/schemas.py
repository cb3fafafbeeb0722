"""The schemas manifests are checked against: the real Kubeflow CRDs in ``tests/data/crds/`` and, for
the built-in kinds (batch/v1 Job, RBAC, PVC …), the Kubernetes OpenAPI schema of each version
(:mod:`.core_schemas`).

CRD schemas are applied as a server does with ``fieldValidation=Strict``: an object schema that
lists its properties (and does not preserve unknown fields) accepts no other keys. CEL rules
(``x-kubernetes-validations``) are not evaluated. :func:`field_check` splits what a server does
with an object: unknown fields (pruned with a warning under the default ``Warn``, a 400 under
``Strict``) apart from invalid values (always a 422).

Trainer v2.1 is served from the v2.3 CRD less the fields v2.2 added (``runtimePatches``,
``activeDeadlineSeconds``) plus v2.1's ``podTemplateOverrides``: ``trainjob_types.go`` at v2.1.0.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from . import core_schemas

# Vendored with the tests (upstream files byte for byte; SOURCES.md there records repository, tag and sha256).
CRDS = Path(os.environ.get("KUBEBENCH_CRDS") or Path(__file__).resolve().parents[2] / "data" / "crds")
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
def crd_validator(group: str, version: str, kind: str, trainer: str = "2.3") -> jsonschema.protocols.Validator:
    """A validator for ``kind`` of ``group/version``: the served version's openAPIV3Schema, strict
    (``trainer``: the Trainer release serving TrainJob, see the module's docstring)."""
    crd = yaml.load((CRDS / CRD_FILES[(group, version, kind)]).read_text(), Loader=Loader)
    assert crd["spec"]["names"]["kind"] == kind and crd["spec"]["group"] == group
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v.get("served")]
    schema = served["schema"]["openAPIV3Schema"]
    if kind == "TrainJob" and trainer < "2.2":
        spec = schema["properties"]["spec"]["properties"]
        for added in ("runtimePatches", "activeDeadlineSeconds"):
            spec.pop(added)
        spec["podTemplateOverrides"] = {"type": "array", "items": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}
    return jsonschema.Draft7Validator(strict(schema))


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


def field_check(doc: dict, trainer: str = "2.3") -> tuple[list[str], list[str]]:
    """``(unknown fields, invalid values)`` of an object, as the API server sorts them: unknown
    fields as dotted paths (``spec.runtimePatches``), the rest as messages."""
    group, _, version = doc["apiVersion"].rpartition("/")
    key = (group, version, doc["kind"])
    if key not in CRD_FILES:
        return [], []  # a core object: the emulator checks it itself (core_schemas)
    validator = crd_validator(*key, trainer)
    unknown, errors = [], []
    for e in validator.iter_errors(doc):
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            known = e.schema.get("properties") or {}
            unknown += [".".join(map(str, [*e.absolute_path, k])) for k in e.instance if k not in known]
        else:
            errors.append(f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}")
    return unknown, errors


def prune(doc: dict, paths: list[str]) -> dict:
    """``doc`` without the fields at ``paths`` (what a server does with unknown fields)."""
    for path in paths:
        *parents, last = path.split(".")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node.pop(last, None)
    return doc


def errors_of(doc: dict) -> list[str]:
    """Every schema violation of a manifest: a Kubeflow CR against its CRD, a core object against the
    published schema of every Kubernetes version from 1.31 to the newest (prefixed by the version)."""
    group, _, version = doc["apiVersion"].rpartition("/")
    key = (group, version, doc["kind"])
    if key in CRD_FILES:
        return [f"{'.'.join(map(str, e.path)) or '(root)'}: {e.message}"
                for e in crd_validator(*key).iter_errors(doc)]
    if not core_schemas.is_builtin(doc):
        raise AssertionError(f"no schema for {doc['kind']} of {doc['apiVersion']}")
    return [f"{v}: {e}" for v in core_schemas.VERSIONS for e in core_schemas.published_errors(doc, v)]
