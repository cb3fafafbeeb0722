"""The ``benchmarks.kubebench.io`` CustomResourceDefinition, generated from the resource's models
(``kubebench deploy crd``; also part of ``deploy manifests --operator``): never written by hand.

It has a structural schema (:mod:`.schema`), the status subresource (so that the controller and the
runner write status through ``/status`` and a spec change bumps ``metadata.generation``), printer
columns that make ``kubectl get benchmarks`` informative on its own, a short name and the
``kubebench`` category (``kubectl get kubebench``).
"""

from __future__ import annotations

from typing import Any

from .. import __version__
from . import CATEGORIES, CRD_NAME, GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION
from .resource import BenchmarkResourceSpec, BenchmarkStatus
from .schema import structural

#: ``kubectl get benchmarks`` (``-o wide`` adds the columns of priority 1).
PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "State", "type": "string", "jsonPath": ".status.state", "description": "Derived from the conditions"},
    {"name": "Runs", "type": "string", "jsonPath": ".status.progress", "description": "Runs finished / planned"},
    {"name": "Primary", "type": "string", "jsonPath": ".status.primary.median",
     "description": "Median of the primary metric (best trial)"},
    {"name": "Unit", "type": "string", "jsonPath": ".status.primary.unit"},
    {"name": "Verdict", "type": "string", "jsonPath": ".status.gate.verdict", "description": "The gate's verdict"},
    {"name": "Experiment", "type": "string", "jsonPath": ".status.experimentId", "priority": 1},
    {"name": "Metric", "type": "string", "jsonPath": ".status.primary.metric", "priority": 1},
    {"name": "Reason", "type": "string", "priority": 1,
     "jsonPath": ".status.conditions[?(@.type==\"Failed\")].reason"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]
#: CEL rules on the spec (evaluated by API servers 1.25+; kubebench's tests check their text only).
SPEC_RULES = [
    {"rule": "!has(oldSelf.experimentId) || (has(self.experimentId) && self.experimentId == oldSelf.experimentId)",
     "message": "spec.experimentId is immutable once set"},
]


def openapi_schema(describe: bool = True) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of the served version."""
    spec = structural(BenchmarkResourceSpec, describe)
    spec["x-kubernetes-validations"] = SPEC_RULES
    return {"type": "object", "required": ["spec"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": spec, "status": structural(BenchmarkStatus, describe)}}


def crd(describe: bool = True) -> dict[str, Any]:
    """The CustomResourceDefinition (``apiextensions.k8s.io/v1``)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"app.kubernetes.io/name": "kubebench",
                                                  "app.kubernetes.io/version": __version__}},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": SINGULAR, "kind": KIND, "listKind": f"{KIND}List",
                      "shortNames": list(SHORT_NAMES), "categories": list(CATEGORIES)},
            "versions": [{"name": VERSION, "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": openapi_schema(describe)},
                          "subresources": {"status": {}}, "additionalPrinterColumns": PRINTER_COLUMNS}],
        },
    }
