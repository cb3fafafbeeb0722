"""Fields of a job that only some Kubernetes versions have (pure).

kubebench's own objects use only fields every version it supports has (1.31 on, as Kubeflow's
operators). A job template may set newer ones. An API server of an older version refuses such a
field when it does not know it (an unknown field under ``fieldValidation=Strict``). When it knows the
field but its feature gate is off by default, it drops the field without a word, and the job then
runs as if it were not there. :data:`FEATURES` lists those fields with the first minor version that
has each one on by default (``pkg/features/kube_features.go``). :func:`too_new` finds the ones a job
uses that a version lacks. The backend reads the cluster's version once and refuses such a job
before it is created; ``kubebench render --kubernetes-version`` checks for another version, and
``kubebench doctor`` says what needs a newer Kubernetes. Each feature is a row of
docs/kubernetes-conformance.md.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import SpecError
from . import kinds

Version = tuple[int, int]
#: The oldest Kubernetes the Kubeflow operators, and so kubebench, support.
OLDEST: Version = (1, 31)
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:[.+-].*)?$")


@dataclass(frozen=True)
class Feature:
    """A field that exists, or is on, only from Kubernetes ``since`` on."""

    field: str
    since: Version
    gate: str
    #: ``where(manifest)``: the places in a manifest that use the field.
    where: Callable[[dict[str, Any]], list[str]]


def parse(text: str) -> Version:
    """``1.31`` (also ``v1.31.4``, ``1.31+``) as ``(1, 31)``; a SpecError for anything else."""
    match = _VERSION.match(str(text).strip())
    if not match:
        raise SpecError(f"Kubernetes version {text!r}: expected MAJOR.MINOR, e.g. 1.31")
    return int(match[1]), int(match[2])


def show(version: Version) -> str:
    """``(1, 31)`` as ``1.31``."""
    return f"{version[0]}.{version[1]}"


def of_server(info: dict[str, Any] | None) -> Version | None:
    """The version in an API server's ``/version`` answer (``gitVersion``, else ``major``/``minor``,
    whose minor reads ``31+`` on some managed clusters); None when it says none."""
    info = info or {}
    for text in (info.get("gitVersion"), f"{info.get('major', '')}.{info.get('minor', '')}"):
        try:
            return parse(str(text or ""))
        except SpecError:
            continue
    return None


def _job_field(name: str) -> Callable[[dict[str, Any]], list[str]]:
    def where(manifest: dict[str, Any]) -> list[str]:
        return ["spec." + name] if manifest.get("kind") == "Job" and (manifest.get("spec") or {}).get(name) is not None else []
    return where


def _sidecars(manifest: dict[str, Any]) -> list[str]:
    return [f"pod template {i}: initContainers[{j}].restartPolicy"
            for i, pod in enumerate(_templates(manifest))
            for j, c in enumerate((pod.get("spec") or {}).get("initContainers") or []) if c.get("restartPolicy") == "Always"]


def _pod_resources(manifest: dict[str, Any]) -> list[str]:
    return [f"pod template {i}: spec.resources" for i, pod in enumerate(_templates(manifest))
            if (pod.get("spec") or {}).get("resources")]


def _templates(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    # pod_templates makes a TrainJob's runtime patch when there is none: read a copy.
    return kinds.pod_templates(copy.deepcopy(manifest))


FEATURES: tuple[Feature, ...] = (
    Feature("Job spec.managedBy", (1, 32), "JobManagedBy", _job_field("managedBy")),
    Feature("Job spec.successPolicy", (1, 31), "JobSuccessPolicy", _job_field("successPolicy")),
    Feature("Job spec.backoffLimitPerIndex", (1, 29), "JobBackoffLimitPerIndex", _job_field("backoffLimitPerIndex")),
    Feature("Job spec.podReplacementPolicy", (1, 29), "JobPodReplacementPolicy", _job_field("podReplacementPolicy")),
    Feature("sidecar containers (an init container's restartPolicy: Always)", (1, 29), "SidecarContainers", _sidecars),
    Feature("pod-level resources (a pod template's spec.resources)", (1, 34), "PodLevelResources", _pod_resources),
)


def uses(manifests: Iterable[dict[str, Any]]) -> list[tuple[Feature, str]]:
    """Every version-dependent field the manifests set: ``(feature, where)``."""
    return [(feature, f"{m.get('kind')} {(m.get('metadata') or {}).get('name', '')}: {place}")
            for m in manifests for feature in FEATURES for place in feature.where(m)]


def too_new(manifests: Iterable[dict[str, Any]], version: Version) -> list[str]:
    """What the manifests use that Kubernetes ``version`` does not have, one line each."""
    return [f"{where} ({feature.field}) needs Kubernetes {show(feature.since)} or later ({feature.gate}); "
            f"Kubernetes {show(version)} refuses the field or drops it without a word"
            for feature, where in uses(manifests) if version < feature.since]


def require(manifests: Iterable[dict[str, Any]], version: Version | None) -> None:
    """A SpecError when the manifests use a field that Kubernetes ``version`` lacks (nothing to
    check when the version is not known)."""
    if version is None:
        return
    missing = too_new(manifests, version)
    if missing:
        raise SpecError("the job cannot run as written on this cluster: " + "; ".join(missing))
