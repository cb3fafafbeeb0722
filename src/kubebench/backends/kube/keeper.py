"""A deadline of kubebench's own for the jobs whose operator gives them none before they run: an
MPIJob of mpi-operator (``kubeflow.org/v2beta1``).

mpi-operator v0.8 uses ``runPolicy.activeDeadlineSeconds`` only on the launcher Job
(``mpi_job_controller.go``, ``newLauncherJob``), which it creates once every worker is Ready under
``launcherCreationPolicy: WaitForWorkersReady``. An MPIJob whose workers never get Ready (Pending on a
GPU pool, an image that cannot be pulled, an SSH server that fails) has no deadline at all: while the
runner lives, its stuck check and its timeout end it; once the runner is killed, nothing did, and the
workers held their GPUs until someone deleted the MPIJob.

The keeper is a batch/v1 Job ``<job>-deadline`` that runs no pod (``parallelism: 0``), created just
before the MPIJob, which it owns (an owner reference on the MPIJob). The Job controller fails it
with ``DeadlineExceeded`` once its ``activeDeadlineSeconds`` pass (it sets ``startTime`` when the Job is
not suspended, with or without pods), the TTL-after-finished controller deletes it at once
(``ttlSecondsAfterFinished: 0``), and the garbage collector then deletes the MPIJob and its pods. Its
deadline is the MPIJob's plus what may pass before the launcher exists (the scale-up grace) and, with a
queue, the queue timeout; with a queue and no queue timeout there is no bound, and no keeper. A run
that ends deletes its keeper with its job. kubebench's own Jobs carry no queue label, so Kueue leaves
the keeper alone (unless it is configured with ``manageJobsWithoutQueueName``).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .handle import SUBMISSION_ANNOTATION

if TYPE_CHECKING:
    from .config import KubernetesConfig

SUFFIX = "-deadline"


def name_of(job: str) -> str:
    """The keeper's name for the job ``job``."""
    return job[: 253 - len(SUFFIX)] + SUFFIX


def seconds(manifest: dict[str, Any], config: KubernetesConfig) -> int | None:
    """The keeper's deadline for ``manifest``; None when the job needs no keeper (its operator gives
    it a deadline from its start) or none can be set (a queue without a queue timeout)."""
    spec = manifest.get("spec") or {}
    deadline = (spec.get("runPolicy") or {}).get("activeDeadlineSeconds")
    if manifest.get("kind") != "MPIJob" or manifest.get("apiVersion") != "kubeflow.org/v2beta1" or not deadline:
        return None
    if config.queue and config.queue_timeout is None:
        return None
    waits = max(config.unschedulable_grace, config.scale_up_grace) + ((config.queue_timeout or 0) if config.queue else 0)
    return int(deadline) + int(waits) + 1


def keeper(manifest: dict[str, Any], config: KubernetesConfig, deadline: int, token: str) -> dict[str, Any]:
    """The keeper Job of the job ``manifest`` (labelled as it is, so that its experiment finds it;
    ``token``: the submission's)."""
    meta = manifest.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k.startswith("kubebench.io/")}
    container: dict[str, Any] = {"name": "deadline", "image": config.probe_image, "command": ["true"]}
    if config.container_security_context:
        container["securityContext"] = copy.deepcopy(config.container_security_context)
    pod: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if config.pod_security_context:
        pod["securityContext"] = copy.deepcopy(config.pod_security_context)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name_of(str(meta["name"])), "namespace": meta.get("namespace"), "labels": labels,
                         "annotations": {"kubebench.io/keeps": f"{manifest['kind']}/{meta['name']}",
                                         SUBMISSION_ANNOTATION: token}},
            "spec": {"parallelism": 0, "completions": 1, "backoffLimit": 0, "activeDeadlineSeconds": deadline,
                     "ttlSecondsAfterFinished": 0, "template": {"spec": pod}}}


def owned_by(manifest: dict[str, Any], created: dict[str, Any]) -> None:
    """Make the job ``manifest`` a dependent of its keeper ``created`` (in place)."""
    meta = created["metadata"]
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta["uid"]}
    refs = manifest.setdefault("metadata", {}).setdefault("ownerReferences", [])
    refs[:] = [r for r in refs if r.get("uid") != meta["uid"]] + [ref]

