"""Core Kubernetes objects (Pod, Job, CronJob, Deployment, StatefulSet, Service, ConfigMap, Secret,
RBAC, NetworkPolicy, PVC, Lease …) checked as the API server of one minor version checks them.

The published schema of each minor version comes from ``kubernetes-validate`` (pinned in the dev
extra): strict JSON schemas generated from that release's OpenAPI document, with types, required
fields and, on every object, no property its type does not list. The OpenAPI v2 document they come
from leaves out the enums of the ``+enum`` types, which the v3 document and the API server's Go
validation have: :data:`ENUMS` adds those of the fields kubebench's objects set.

Two views of an object:

- :func:`published_errors`: the object as written against the published schema, as client-side
  validators see it (Helm's install, kubeconform, kubectl against a server without field
  validation). kubebench's objects must pass it on every version in :data:`VERSIONS`;
- :func:`admit`: what the API server does on create. It defaults and drops fields in place (see
  :mod:`.core_rules`), then checks the schema and the rules of the Go validation that the schema
  cannot express. It returns ``(unknown field paths, invalid values)``, as the emulator's
  checkers do.

The version is the emulator's ``kubernetes_version`` (1.31 by default, the oldest Kubernetes the
Kubeflow operators support); :func:`checkers` reads it on every create.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

import jsonschema
import kubernetes_validate.utils as kv
from packaging.version import Version
from referencing import Registry, Resource

from . import core_rules
from .store import KINDS, Key

#: The oldest minor version the Kubeflow operators (and kubebench) support.
OLDEST = "1.31"
#: Every minor version whose schemas ``kubernetes-validate`` ships (an emulator may be any of them) …
SHIPPED = tuple(dict.fromkeys(kv.major_minor(v) for v in kv.all_versions()))
#: … and those kubebench's objects must be valid on: from :data:`OLDEST` to the newest.
VERSIONS = tuple(v for v in SHIPPED if Version(v) >= Version(OLDEST))
NEWEST = VERSIONS[-1]
_DEFS = "https://kubernetes.io/api/_definitions.json#/$defs/"

#: Enum values of fields kubebench's objects set, from the ``+enum`` types of k8s.io/api
#: (``core/v1``, ``batch/v1``, ``apps/v1``, ``networking/v1`` ``types.go``), as the Go validation in
#: ``pkg/apis/*/validation/validation.go`` enforces them. ``name[]`` is an array's items.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("io.k8s.api.core.v1.PodSpec", "restartPolicy"): ("Always", "OnFailure", "Never"),
    ("io.k8s.api.core.v1.PodSpec", "dnsPolicy"): ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"),
    ("io.k8s.api.core.v1.Container", "imagePullPolicy"): ("Always", "IfNotPresent", "Never"),
    ("io.k8s.api.core.v1.Container", "terminationMessagePolicy"): ("File", "FallbackToLogsOnError"),
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): ("TCP", "UDP", "SCTP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol"): ("TCP", "UDP", "SCTP"),
    ("io.k8s.api.core.v1.ServiceSpec", "type"): ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"),
    ("io.k8s.api.core.v1.SeccompProfile", "type"): ("RuntimeDefault", "Unconfined", "Localhost"),
    ("io.k8s.api.core.v1.Toleration", "operator"): ("Equal", "Exists"),
    ("io.k8s.api.core.v1.Toleration", "effect"): ("NoSchedule", "PreferNoSchedule", "NoExecute"),
    ("io.k8s.api.core.v1.PersistentVolumeClaimSpec", "accessModes[]"):
        ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"),
    ("io.k8s.api.networking.v1.NetworkPolicySpec", "policyTypes[]"): ("Ingress", "Egress"),
    ("io.k8s.api.batch.v1.CronJobSpec", "concurrencyPolicy"): ("Allow", "Forbid", "Replace"),
    ("io.k8s.api.batch.v1.JobSpec", "completionMode"): ("NonIndexed", "Indexed"),
    ("io.k8s.api.batch.v1.JobSpec", "podReplacementPolicy"): ("TerminatingOrFailed", "Failed"),
    ("io.k8s.api.batch.v1.PodFailurePolicyRule", "action"): ("FailJob", "FailIndex", "Ignore", "Count"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement", "operator"): ("In", "NotIn"),
    ("io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern", "status"): ("True", "False", "Unknown"),
    ("io.k8s.api.apps.v1.DeploymentStrategy", "type"): ("Recreate", "RollingUpdate"),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "podManagementPolicy"): ("OrderedReady", "Parallel"),
}


def _folder(version: str) -> str:
    if version not in SHIPPED:
        raise ValueError(f"Kubernetes {version}: not one of {', '.join(SHIPPED)}")
    return f"kubernetes-json-schema/v{version}.0-local-strict"


@functools.cache
def _registry(version: str) -> Registry:
    """The version's definitions (read once per session), with :data:`ENUMS` added."""
    contents = kv.schema_contents(f"{_folder(version)}/_definitions.json", version)
    definitions = contents["$defs"]
    for (name, field), values in ENUMS.items():
        prop = (definitions.get(name) or {}).get("properties", {}).get(field.removesuffix("[]"))
        if prop is not None:
            (prop["items"] if field.endswith("[]") else prop)["enum"] = [*values, None]
    return Resource.from_contents(contents) @ Registry()


@functools.cache
def validator(api_version: str, kind: str, version: str) -> jsonschema.protocols.Validator | None:
    """The strict validator of a built-in kind at ``version``; None for a kind Kubernetes does not
    have (a custom resource)."""
    group = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv.schema_contents(f"{_folder(version)}/{kind.lower()}-{group}.json", version)
    except FileNotFoundError:
        return None
    return jsonschema.Draft202012Validator(schema, registry=_registry(version))


@functools.cache
def definition_validator(definition: str, version: str) -> jsonschema.protocols.Validator:
    """The strict validator of one definition (``io.k8s.api.core.v1.PodTemplateSpec``) at ``version``."""
    return jsonschema.Draft202012Validator({"$ref": _DEFS + definition}, registry=_registry(version))


def is_builtin(doc: dict) -> bool:
    """Whether ``doc`` is of a kind Kubernetes itself serves."""
    return validator(str(doc.get("apiVersion", "")), str(doc.get("kind", "")), NEWEST) is not None


def split(validator_: jsonschema.protocols.Validator, doc: Any, where: str = "") -> tuple[list[str], list[str]]:
    """``(unknown field paths, other errors)`` of ``doc``, as the API server sorts them: unknown
    fields as dotted paths (``spec.template.spec.resources``), the rest as messages."""
    unknown, errors = [], []
    prefix = [where] if where else []
    for e in validator_.iter_errors(doc):
        path = [*prefix, *map(str, e.absolute_path)]
        if e.validator == "additionalProperties" and isinstance(e.instance, dict):
            known = e.schema.get("properties") or {}
            unknown += [".".join([*path, k]) for k in e.instance if k not in known]
        else:
            errors.append(f"{'.'.join(path) or '(root)'}: {e.message}")
    return unknown, errors


def published_errors(doc: dict, version: str) -> list[str]:
    """Every violation of the published schema of ``version`` by ``doc`` as written (unknown fields
    included); [] for a kind Kubernetes does not have."""
    found = validator(doc["apiVersion"], doc["kind"], version)
    if found is None:
        return []
    unknown, errors = split(found, doc)
    return [f"{path}: unknown field" for path in unknown] + errors


def admit(doc: dict, version: str) -> tuple[list[str], list[str]]:
    """What the API server of ``version`` does with a created object: defaults and drops fields in
    ``doc`` (in place), then returns ``(unknown field paths, invalid values)``."""
    found = validator(doc["apiVersion"], doc["kind"], version)
    if found is None:
        return [], []
    core_rules.default_and_drop(doc, version)
    unknown, errors = split(found, doc)
    return unknown, errors + core_rules.errors(doc, version)


def checkers(version_of: Callable[[], str]) -> dict[Key, Callable[[dict], tuple[list[str], list[str]]]]:
    """The emulator's checker of every built-in resource, at the version ``version_of()`` says."""
    builtin = [key for key, kind in KINDS.items()
               if validator(f"{key[0]}/{key[1]}" if key[0] else key[1], kind, NEWEST) is not None]
    return {key: (lambda doc: admit(doc, version_of())) for key in builtin}


def version_info(version: str) -> dict[str, str]:
    """``GET /version`` of an API server of ``version`` (the ``version.Info`` of apimachinery)."""
    major, minor = version.split(".")
    return {"major": major, "minor": minor, "gitVersion": f"v{version}.0", "gitCommit": "emulator",
            "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.24",
            "compiler": "gc", "platform": "linux/amd64"}
