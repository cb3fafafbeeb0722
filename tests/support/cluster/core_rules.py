"""What the API server does with a core object beyond its published schema, for the fields kubebench's
objects touch: defaulting before validation, fields of feature gates off by default dropped on write
(both depend on the version), and rules of the Go validation. Each rule names its upstream source
(kubernetes/kubernetes) and is a row of docs/kubernetes-conformance.md.

Feature-gate defaults per version: ``pkg/features/kube_features.go`` (the versioned specs).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from packaging.version import Version

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CONDITION_STATUS = ("True", "False", "Unknown")
#: Workload kinds whose ``spec.template`` is a pod template (``pkg/apis/apps/validation``, ``batch``).
_TEMPLATED = ("Job", "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet")


def _at_least(version: str, minimum: str) -> bool:
    return Version(version) >= Version(minimum)


def job_specs(doc: dict) -> Iterator[tuple[str, dict]]:
    """``(path, JobSpec)`` of a Job and of a CronJob's job template."""
    spec = doc.get("spec") or {}
    if doc.get("kind") == "Job":
        yield "spec", spec
    elif doc.get("kind") == "CronJob":
        yield "spec.jobTemplate.spec", (spec.get("jobTemplate") or {}).get("spec") or {}


def pod_specs(doc: dict) -> Iterator[tuple[str, dict]]:
    """``(path, PodSpec)`` of a Pod, of a workload's pod template and of a CronJob's."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    if kind == "Pod":
        yield "spec", spec
    elif kind in _TEMPLATED:
        yield "spec.template.spec", (spec.get("template") or {}).get("spec") or {}
    elif kind == "CronJob":
        for path, job in job_specs(doc):
            yield f"{path}.template.spec", (job.get("template") or {}).get("spec") or {}


def default_and_drop(doc: dict, version: str) -> None:
    """Defaults and drops of the API server of ``version``, in place, before validation."""
    for _, job in job_specs(doc):
        # pkg/apis/batch/v1/defaults.go: SetDefaults_Job defaults an empty onPodConditions status to
        # True for a Job; a CronJob's template was left undefaulted (so refused) until the defaulter
        # moved to the pattern type (kubernetes#131525, in 1.34).
        if doc["kind"] == "Job" or _at_least(version, "1.34"):
            for rule in (job.get("podFailurePolicy") or {}).get("rules") or []:
                for pattern in rule.get("onPodConditions") or []:
                    if isinstance(pattern, dict) and not pattern.get("status"):
                        pattern["status"] = "True"
        # pkg/registry/batch/job/strategy.go (PrepareForCreate): JobManagedBy is alpha, off, before 1.32.
        if doc["kind"] == "Job" and not _at_least(version, "1.32"):
            job.pop("managedBy", None)
    # pkg/api/pod/util.go (dropDisabledPodLevelResources): PodLevelResources is alpha, off, in 1.32
    # and 1.33 (in 1.31 the field does not exist: the schema makes it an unknown field).
    if _at_least(version, "1.32") and not _at_least(version, "1.34"):
        for _, pod in pod_specs(doc):
            pod.pop("resources", None)


def errors(doc: dict, version: str) -> list[str]:
    """The Go validation's errors of ``doc`` that its schema does not catch."""
    found: list[str] = []
    for path, job in job_specs(doc):
        found += _job(path, job, doc["kind"] == "CronJob")
    # A StatefulSet's pods also get a volume per claim template (pkg/controller/statefulset/stateful_set_utils.go).
    claims = [(c.get("metadata") or {}).get("name") for c in (doc.get("spec") or {}).get("volumeClaimTemplates") or []] \
        if doc.get("kind") == "StatefulSet" else []
    for path, pod in pod_specs(doc):
        found += _pod(path, pod, claims)
    if doc.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"):
        found += _workload(doc)
    return found


def _job(path: str, spec: dict, in_cron_job: bool) -> list[str]:
    """``pkg/apis/batch/validation/validation.go`` (validateJobSpec, validatePodFailurePolicy…)."""
    found: list[str] = []
    restart = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    where = f"{path}.template.spec.restartPolicy"
    if restart in (None, "", "Always"):
        found.append(f'{where}: Required value: valid values: "OnFailure", "Never"')
    elif spec.get("podFailurePolicy") and restart != "Never":
        found.append(f'{where}: Invalid value: "{restart}": only "Never" is supported when podFailurePolicy is specified')
    indexed = spec.get("completionMode") == "Indexed"
    if indexed and spec.get("completions") is None:
        found.append(f"{path}.completions: Required value: when completion mode is Indexed")
    for field in ("successPolicy", "backoffLimitPerIndex", "maxFailedIndexes"):
        if spec.get(field) is not None and not indexed:
            found.append(f"{path}.{field}: Invalid value: requires indexed completion mode")
    if spec.get("podFailurePolicy") and spec.get("podReplacementPolicy") not in (None, "Failed"):
        found.append(f'{path}.podReplacementPolicy: Unsupported value: "{spec["podReplacementPolicy"]}": '
                     'supported values: "Failed"')
    if spec.get("manualSelector") and not in_cron_job:
        found += _selector(path, spec)
    containers = {c.get("name") for key in ("containers", "initContainers")
                  for c in ((spec.get("template") or {}).get("spec") or {}).get(key) or []}
    for i, rule in enumerate((spec.get("podFailurePolicy") or {}).get("rules") or []):
        found += _failure_rule(f"{path}.podFailurePolicy.rules[{i}]", rule, spec, containers)
    return found


def _failure_rule(path: str, rule: dict, spec: dict, containers: set) -> list[str]:
    """validatePodFailurePolicyRule, …OnExitCodes, …OnPodConditions."""
    found = []
    if rule.get("action") == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
        found.append(f'{path}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set')
    codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
    if codes is not None and conditions:
        found.append(f"{path}: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported")
    if codes is None and not conditions:
        found.append(f"{path}: Invalid value: specifying one of OnExitCodes and OnPodConditions is required")
    for j, pattern in enumerate(conditions):
        if not (pattern or {}).get("status"):
            found.append(f'{path}.onPodConditions[{j}].status: Required value: valid values: "False", "True", "Unknown"')
    if codes is not None:
        found += _exit_codes(f"{path}.onExitCodes", codes, containers)
    return found


def _exit_codes(path: str, codes: dict, containers: set) -> list[str]:
    found = []
    name, values = codes.get("containerName"), list(codes.get("values") or [])
    if name is not None and name not in containers:
        found.append(f'{path}.containerName: Invalid value: "{name}": must be one of the container or '
                     "initContainer names in the pod template")
    if not values:
        found.append(f"{path}.values: Invalid value: at least one value is required")
    if codes.get("operator") == "In" and 0 in values:
        found.append(f"{path}.values: Invalid value: 0: must not be 0 for the In operator")
    if len(set(values)) != len(values):
        found.append(f"{path}.values: Duplicate value")
    if values != sorted(values):
        found.append(f"{path}.values: Invalid value: {values}: must be ordered")
    return found


def _pod(path: str, spec: dict, claims: list) -> list[str]:
    """``pkg/apis/core/validation/validation.go`` (ValidatePodSpec: validateContainers,
    validateInitContainers, validateVolumes)."""
    found = []
    volumes = [v.get("name") for v in spec.get("volumes") or []]
    if len(set(volumes)) != len(volumes):
        found.append(f"{path}.volumes: Duplicate value")
    names: list[Any] = []
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            where = f"{path}.{key}[{i}]"
            name = container.get("name") or ""
            if not _DNS_LABEL.match(name) or len(name) > 63:
                found.append(f'{where}.name: Invalid value: "{name}": a lowercase RFC 1123 label must consist of '
                             "lower case alphanumeric characters or '-'")
            elif name in names:
                found.append(f'{where}.name: Duplicate value: "{name}"')
            names.append(name)
            # validateInitContainers: an init container's only restart policy is Always (a sidecar).
            if key == "initContainers" and container.get("restartPolicy") not in (None, "Always"):
                found.append(f'{where}.restartPolicy: Unsupported value: "{container["restartPolicy"]}": '
                             'supported values: "Always"')
            for j, mount in enumerate(container.get("volumeMounts") or []):
                if mount.get("name") not in volumes + claims:
                    found.append(f'{where}.volumeMounts[{j}].name: Not found: "{mount.get("name")}"')
    return found


def _workload(doc: dict) -> list[str]:
    """``pkg/apis/apps/validation/validation.go``: a template's restart policy is Always, and the
    selector is required and matches the template's labels."""
    spec, found = doc.get("spec") or {}, []
    restart = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if restart not in (None, "Always"):
        found.append(f'spec.template.spec.restartPolicy: Unsupported value: "{restart}": supported values: "Always"')
    if not spec.get("selector"):
        found.append("spec.selector: Required value")
    return found + _selector("spec", spec)


def _selector(path: str, spec: dict) -> list[str]:
    """A selector that does not match the template's labels is invalid (the same rule in apps and batch)."""
    selector = spec.get("selector") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    wanted = selector.get("matchLabels") or {}
    unmet = [k for k, v in wanted.items() if labels.get(k) != v]
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        ok = {"In": labels.get(key) in values, "NotIn": labels.get(key) not in values,
              "Exists": key in labels, "DoesNotExist": key not in labels}.get(operator, False)
        if not ok:
            unmet.append(key)
    return [f"{path}.template.metadata.labels: Invalid value: `selector` does not match template `labels`"] if unmet else []
