"""A run's objects on the cluster: is their kind served here, create each once (a retried create
finds its own object; one left over by an earlier attempt is replaced), wait for one to be gone."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from ...errors import BackendError, InfrastructureError
from .api import Api, Resource, backoff
from .handle import SUBMISSION_ANNOTATION

GONE_WAIT_SECONDS = 60.0
#: Set by the Benchmark controller in its runner's pod: the owner reference (JSON) of every job the
#: runner makes, so that deleting the Benchmark deletes them (``kubebench operator``).
OWNER_ENV = "KUBEBENCH_JOB_OWNER"


def with_owner(manifest: dict[str, Any]) -> dict[str, Any]:
    """``manifest`` owned by the runner's Benchmark, when the runner has one."""
    text = os.environ.get(OWNER_ENV)
    if not text:
        return manifest
    owner = json.loads(text)
    meta = manifest.setdefault("metadata", {})
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner.get("uid")]
    meta["ownerReferences"] = [*refs, owner]
    return manifest


def not_served(api: Api, resource: Resource) -> str | None:
    """Why jobs of ``resource`` cannot be created here (its operator and CRD are not installed, or
    not at that version), from API discovery; None when they can."""
    plurals = api.served(resource.group, resource.version)
    if plurals is not None and resource.plural in plurals:
        return None
    hint = "; set job.mpi_api_version to the MPIJob version it serves" if resource.kind == "MPIJob" else ""
    return (f"{resource.kind} of {resource.api_version} is not served by the cluster at {api.host}: "
            f"its operator (and CRD) is not installed{hint}")


def create(api: Api, resource: Resource, namespace: str, manifest: dict[str, Any], token: str) -> dict:
    """Create the object ``manifest``; a create retried after its answer was lost finds its own
    object (by ``token``), an object of the same name left by an earlier attempt is deleted and replaced."""
    manifest = with_owner(manifest)
    name = manifest["metadata"]["name"]
    for _ in range(3):
        try:
            created = api.create(resource, namespace, manifest)
        except BackendError as e:
            raise _explain_unknown_fields(resource, e) from e
        if created is not None:
            return created
        existing = api.get(resource, namespace, name)
        if existing is None:
            continue
        if (existing["metadata"].get("annotations") or {}).get(SUBMISSION_ANNOTATION) == token:
            return existing  # a retried create whose first attempt went through
        # Left over from an earlier attempt at this run (kept, or its runner was killed): replace it.
        api.delete(resource, namespace, name, "Foreground")
        wait_gone(api, resource, namespace, name)
    raise BackendError(f"create {resource.kind} {namespace}/{name}: the name stays taken by another object")


def wait_gone(api: Api, resource: Resource, namespace: str, name: str) -> None:
    """Wait until the object is gone (with Foreground deletion: its pods too)."""
    deadline, attempt = time.monotonic() + GONE_WAIT_SECONDS, 0
    while api.get(resource, namespace, name) is not None:
        attempt += 1
        if time.monotonic() > deadline:
            raise InfrastructureError(f"{resource.kind} {namespace}/{name} left over from an earlier attempt "
                                      "is not going away")
        time.sleep(backoff(attempt))


def _explain_unknown_fields(resource: Resource, error: BackendError) -> BackendError:
    """A strict create refused for fields the cluster's CRD does not have: say which operator is too old."""
    if getattr(error, "http_status", None) != 400 or "unknown field" not in str(error):
        return error
    hint = ""
    if resource.kind == "TrainJob":
        hint = ("; kubebench's TrainJobs need Kubeflow Trainer v2.2 or later (spec.runtimePatches, "
                "spec.activeDeadlineSeconds)")
    explained = BackendError(f"{error} — the cluster's {resource.kind} CRD is older than the fields "
                             f"kubebench sets{hint}")
    explained.http_status = 400  # type: ignore[attr-defined]
    return explained
