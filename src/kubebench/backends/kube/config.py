"""Options of ``backend: {kind: kubernetes, …}`` (kept free of the ``kubernetes`` client's import)."""

from __future__ import annotations

import copy
import os
from typing import Any, Literal

from pydantic import Field, field_validator

from ...durations import parse_duration
from ...spec.base import Model, PluginConfig

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: ``queue_timeout`` unless the spec says: a day in the queue (a queued job never waits forever).
DEFAULT_QUEUE_TIMEOUT = 24 * 3600.0
#: What PodSecurity's ``restricted`` profile asks of a pod (``pod-security-admission/policy``: a
#: non-root user, the runtime's default seccomp profile) and of each container (no privilege
#: escalation, every capability dropped). A fixed uid, so that images whose user is root run: on
#: OpenShift, whose SCC assigns the uid, leave ``runAsUser`` out.
RESTRICTED_POD: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
RESTRICTED_CONTAINER: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


class StorageConfig(Model):
    """The shared storage: a PersistentVolumeClaim mounted into every replica of every job."""

    #: Name of the PersistentVolumeClaim (ReadWriteMany where replicas run on several nodes).
    claim: str = Field("kubebench", pattern=_DNS_LABEL, max_length=253)
    #: Where the claim is mounted inside the pods; the experiments are in its ``experiments/``.
    mount_path: str = Field("/kubebench", pattern=r"^/")
    #: Where kubebench itself sees the claim's root; default: ``$KUBEBENCH_HOME`` (the same claim
    #: mounted into the kubebench pod, or a local mount of it).
    local_path: str | None = None
    #: Name of the volume in the pod specs.
    volume: str = Field("kubebench-storage", pattern=_DNS_LABEL, max_length=63)
    #: Mount into a job's pods only its run's folder and the data folder, by subPath,
    #: not the whole claim (where other runs, and a SQLite store, may live).
    isolate: bool = True


class KubernetesConfig(PluginConfig):
    """Options of ``backend: {kind: kubernetes}``."""

    kind: Literal["kubernetes"] = "kubernetes"
    #: Namespace of the jobs; unset: the pod's own inside a cluster, else the kubeconfig context's.
    namespace: str | None = Field(None, pattern=_DNS_LABEL, max_length=63)
    #: ServiceAccount of the job's pods (unset: the namespace's default, or what a template sets).
    service_account: str | None = None
    storage: StorageConfig = Field(default_factory=StorageConfig)
    #: Kubeconfig file and context; unset: in-cluster config inside a pod, else $KUBECONFIG / ~/.kube/config.
    kubeconfig: str | None = None
    context: str | None = None
    #: Kueue LocalQueue: sets the ``kueue.x-k8s.io/queue-name`` label on every job. Time in the queue
    #: does not count against the run's timeout; it is recorded as the run's ``queue_seconds``.
    queue: str | None = None
    #: How long a job may wait in the queue before its run times out (null: as long as it takes). A job
    #: whose Kueue Workload says it can never be admitted (more than the queue's quota, a resource or a
    #: LocalQueue it does not have) fails after ``unschedulable_grace`` instead, with Kueue's reason.
    queue_timeout: float | None = DEFAULT_QUEUE_TIMEOUT
    #: Keep finished jobs (and their finished pods) instead of deleting them once their logs are
    #: copied; pods still running or pending are deleted all the same, so that none holds GPUs.
    keep_jobs: bool = False
    #: How long a pod may stay unschedulable or unable to start its container (and a job without
    #: pods) before the run fails.
    unschedulable_grace: float = 120.0
    #: The same while nodes are being added for a pod: a pod asking for GPUs, or one whose events
    #: show the cluster-autoscaler or Karpenter scaling up (GPU nodes take minutes to come up).
    scale_up_grace: float = 900.0
    #: The ``securityContext`` of every pod of a job (and of ``kubebench doctor``'s probe pod) that sets
    #: none: by default one that PodSecurity ``restricted`` admits; ``{}``: none (the image's user, root for
    #: most, and whatever the namespace allows).
    pod_security_context: dict[str, Any] = Field(default_factory=lambda: copy.deepcopy(RESTRICTED_POD))
    #: The same for each of their containers (init containers too) that sets none.
    container_security_context: dict[str, Any] = Field(default_factory=lambda: copy.deepcopy(RESTRICTED_CONTAINER))
    #: Size of the ``/dev/shm`` (a memory-backed emptyDir) given to every pod that has none: the
    #: container runtime's 64 MiB breaks NCCL and DataLoader workers; unset: no limit but the pod's memory.
    shm_size: str | None = None
    #: How dependents (pods) go when kubebench deletes a job.
    propagation: Literal["Foreground", "Background"] = "Background"
    #: A ConfigMap holding the spec's folder (``kubebench deploy manifests`` makes one and sets
    #: $KUBEBENCH_SPEC_CONFIGMAP in the runner): mounted into every job pod at ``spec_mount``, the working
    #: directory of containers that set none, so that commands run from the spec's folder as locally.
    spec_configmap: str | None = Field(default_factory=lambda: os.environ.get("KUBEBENCH_SPEC_CONFIGMAP") or None)
    spec_mount: str = Field(default_factory=lambda: os.environ.get("KUBEBENCH_SPEC_DIR") or "/etc/kubebench/spec",
                            pattern=r"^/")
    #: Without ``spec_configmap``: ship the spec's folder (the spec and every text file beside it) as a
    #: ConfigMap ``kb-spec-<experiment>`` made before the first job and deleted when the runner ends (kept
    #: with ``keep_jobs``), mounted the same way; false: the pods run in their image's working directory.
    ship_spec: bool = True
    #: The Kubernetes version (MAJOR.MINOR) the jobs are checked for: a job that sets a field this
    #: version lacks is refused before it is created. Unset: the API server's, read once when the
    #: runs start (``kubebench render --kubernetes-version`` sets it to render for another).
    kubernetes_version: str | None = Field(None, pattern=r"^v?\d+\.\d+")
    #: Image of the pod ``kubebench doctor`` starts to check that it sees the claim as kubebench does.
    probe_image: str = "busybox:1.36"
    #: Attempts of an API call that fails transiently (429, 5xx, connection reset), with backoff.
    api_retries: int = Field(8, ge=1, le=50)
    #: Seconds one API request may take.
    request_timeout: float = Field(30.0, gt=0)

    @field_validator("unschedulable_grace", "scale_up_grace", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)

    @field_validator("queue_timeout", mode="before")
    @classmethod
    def _optional_duration(cls, value: object) -> float | None:
        return None if value is None else parse_duration(value)
