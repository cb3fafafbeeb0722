"""A run's job object on the cluster: is its kind served here, create it once (a retried create
finds its own object; one left over by an earlier attempt is replaced), wait for it to be gone."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, InfrastructureError
from .api import Api, Resource, backoff

if TYPE_CHECKING:
    from .backend import KubeJob

#: Annotation telling kubebench's own create from an object of the same name left over earlier.
SUBMISSION_ANNOTATION = "kubebench.io/submission"
GONE_WAIT_SECONDS = 60.0


def not_served(api: Api, resource: Resource) -> str | None:
    """Why jobs of ``resource`` cannot be created here (its operator and CRD are not installed, or
    not at that version), from API discovery; None when they can."""
    plurals = api.served(resource.group, resource.version)
    if plurals is not None and resource.plural in plurals:
        return None
    hint = "; set job.mpi_api_version to the MPIJob version it serves" if resource.kind == "MPIJob" else ""
    return (f"{resource.kind} of {resource.api_version} is not served by the cluster at {api.host}: "
            f"its operator (and CRD) is not installed{hint}")


def create(api: Api, handle: KubeJob, manifest: dict[str, Any], token: str) -> dict:
    """Create the job; a create retried after its answer was lost finds its own object (by
    ``token``), an object of the same name left by an earlier attempt is deleted and replaced."""
    for _ in range(3):
        try:
            created = api.create(handle.resource, handle.namespace, manifest)
        except BackendError as e:
            raise _explain_unknown_fields(handle, e) from e
        if created is not None:
            return created
        existing = api.get(handle.resource, handle.namespace, handle.name)
        if existing is None:
            continue
        if (existing["metadata"].get("annotations") or {}).get(SUBMISSION_ANNOTATION) == token:
            return existing  # a retried create whose first attempt went through
        # Left over from an earlier attempt at this run (kept, or its runner was killed): replace it.
        api.delete(handle.resource, handle.namespace, handle.name, "Foreground")
        wait_gone(api, handle)
    raise BackendError(f"create {handle.title}: the name stays taken by another object")


def wait_gone(api: Api, handle: KubeJob) -> None:
    """Wait until the job object is gone (with Foreground deletion: its pods too)."""
    deadline, attempt = time.monotonic() + GONE_WAIT_SECONDS, 0
    while api.get(handle.resource, handle.namespace, handle.name) is not None:
        attempt += 1
        if time.monotonic() > deadline:
            raise InfrastructureError(f"{handle.title} left over from an earlier attempt is not going away")
        time.sleep(backoff(attempt))


def _explain_unknown_fields(handle: KubeJob, error: BackendError) -> BackendError:
    """A strict create refused for fields the cluster's CRD does not have: say which operator is too old."""
    if getattr(error, "http_status", None) != 400 or "unknown field" not in str(error):
        return error
    hint = ""
    if handle.resource.kind == "TrainJob":
        hint = ("; kubebench's TrainJobs need Kubeflow Trainer v2.2 or later (spec.runtimePatches, "
                "spec.activeDeadlineSeconds)")
    explained = BackendError(f"{error} — the cluster's {handle.resource.kind} CRD is older than the fields "
                             f"kubebench sets{hint}")
    explained.http_status = 400  # type: ignore[attr-defined]
    return explained
