"""Kueue as clusters install it (v0.19): which job kinds it manages, and why a queued job waits.

- Its integrations: Kueue suspends a job that names a queue only when the job's framework is in its
  Configuration's ``integrations.frameworks`` (the ConfigMap ``kueue-system/kueue-manager-config``
  of its manifests and Helm chart). The default configuration of v0.19.2 leaves
  ``kubeflow.org/pytorchjob``, ``tfjob``, ``jaxjob``, ``xgboostjob`` and ``paddlejob`` out: such a job
  starts at once, as if it named no queue, and oversubscribes the pool it was meant to wait for.
  kubebench reads the configuration where it may (:func:`frameworks`), and checks every job it
  creates with a queue came back suspended (Kueue's webhook is synchronous: :func:`unmanaged`).
- Why a job waits: Kueue makes a Workload of each job (owned by it, labelled
  ``kueue.x-k8s.io/job-uid``) and says on it why it is not admitted (``QuotaReserved=False``). A
  workload that can never be admitted (more than the ClusterQueue's maximum capacity, a resource the
  queue does not cover, a LocalQueue or ClusterQueue that does not exist) would wait forever; its
  condition says so (:func:`never_admitted`), and the run fails with Kueue's own words once that has
  lasted ``unschedulable_grace``.

Sources (kubernetes-sigs/kueue v0.19.2): ``config/components/manager/controller_manager_config.yaml``
and ``charts/kueue/values.yaml`` (the frameworks), ``apis/config/v1beta1/defaults.go`` (no
``integrations``: ``batch/job`` only), ``pkg/controller/jobframework/reconciler.go`` and
``workload_names.go`` (the Workload's label and name), ``pkg/scheduler/scheduler.go``
(``requeueAndUpdate``: the reason ``Pending``, or the granular one under the feature gate
``UnadmittedWorkloadsObservability``, off by default), ``pkg/scheduler/flavorassigner/flavorassigner.go``
(the messages), ``pkg/controller/core/workload_controller.go`` (``Inadmissible``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from ...errors import BackendError
from .api import Resource

if TYPE_CHECKING:
    from .api import Api

GROUP = "kueue.x-k8s.io"
#: Kueue's API versions, newest first: v1beta2 is the storage version from v0.15 on, v1beta1 deprecated.
VERSIONS = ("v1beta2", "v1beta1")
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
CONFIG_NAMESPACE, CONFIG_MAP, CONFIG_KEY = "kueue-system", "kueue-manager-config", "controller_manager_config.yaml"
#: The integration (``integrations.frameworks`` entry) of each kind kubebench runs.
FRAMEWORKS = {"Job": "batch/job", "PyTorchJob": "kubeflow.org/pytorchjob", "TFJob": "kubeflow.org/tfjob",
              "JAXJob": "kubeflow.org/jaxjob", "XGBoostJob": "kubeflow.org/xgboostjob",
              "PaddleJob": "kubeflow.org/paddlejob", "MPIJob": "kubeflow.org/mpijob",
              "TrainJob": "trainer.kubeflow.org/trainjob"}
#: The frameworks when the configuration names none (``defaults.go``).
UNCONFIGURED = ("batch/job",)
#: Reasons of ``QuotaReserved=False`` that no waiting mends (the granular ones under
#: ``UnadmittedWorkloadsObservability``; ``Inadmissible`` without it).
NEVER_REASONS = frozenset({"Inadmissible", "Misconfigured", "ExceedsMaxQuota", "NoMatchingFlavor"})
#: What the scheduler's message says of a workload that never fits, under the default reason ``Pending``.
NEVER_MESSAGES = ("> maximum capacity", "unavailable in ClusterQueue", "doesn't exist")
#: Seconds between two reads of a queued job's Workload (each second at first: Kueue says at once
#: why a new workload cannot be admitted).
READ_EVERY, READ_FIRST, FIRST_READS = 5.0, 1.0, 5


def framework_of(manifest: dict[str, Any]) -> str | None:
    """The Kueue integration of a manifest's kind (None for a kind Kueue has none for)."""
    return FRAMEWORKS.get(str(manifest.get("kind")))


def resource(api: Api, plural: str, kind: str) -> Resource | None:
    """Kueue's ``plural`` at the newest version the cluster serves (discovery); None without Kueue."""
    for version in VERSIONS:
        if plural in (api.served(GROUP, version) or []):
            return Resource(GROUP, version, plural, kind)
    return None


def frameworks(api: Api) -> tuple[str, ...] | None:
    """The integrations the cluster's Kueue manages, from its configuration; None when kubebench may not
    read it (or Kueue keeps it elsewhere)."""
    try:
        found = api.config_map(CONFIG_NAMESPACE, CONFIG_MAP)
    except BackendError:
        return None
    text = ((found or {}).get("data") or {}).get(CONFIG_KEY)
    if not text:
        return None
    try:
        config = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return None
    listed = (config.get("integrations") or {}).get("frameworks") if isinstance(config, dict) else None
    return tuple(str(f) for f in listed) if listed else UNCONFIGURED


def not_managed(kind: str, framework: str, queue: str) -> str:
    """Why a job of ``kind`` cannot wait in ``queue``: Kueue does not manage it."""
    return (f"Kueue does not manage {kind} (integrations.frameworks has no {framework!r}): a {kind} naming "
            f"queue {queue} would start at once, without waiting for its quota. Add {framework} to "
            f"integrations.frameworks in the ConfigMap {CONFIG_NAMESPACE}/{CONFIG_MAP} (or the Helm value "
            "managerConfig.controllerManagerConfigYaml) and restart Kueue, or drop backend.queue")


def unmanaged(manifest: dict[str, Any], created: dict[str, Any], queue: str) -> str | None:
    """The reason a job created with a queue came back not suspended (Kueue's webhook would have
    suspended it: it does not manage the kind); None when it waits as it should."""
    spec = created.get("spec") or {}
    if spec.get("suspend") or (spec.get("runPolicy") or {}).get("suspend"):
        return None
    kind = str(manifest.get("kind"))
    return not_managed(kind, framework_of(manifest) or kind.lower(), queue)


def condition(workload: dict[str, Any] | None) -> tuple[str, str] | None:
    """``(reason, message)`` of the Workload's ``QuotaReserved=False`` condition, if it has one."""
    for found in ((workload or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == "QuotaReserved" and found.get("status") == "False":
            return str(found.get("reason") or "Pending"), " ".join(str(found.get("message") or "").split())
    return None


def never_admitted(workload: dict[str, Any] | None) -> str | None:
    """``<reason>: <message>`` when the Workload says it can never be admitted as things are; None else."""
    found = condition(workload)
    if found is None:
        return None
    reason, message = found
    if reason in NEVER_REASONS or any(m in message for m in NEVER_MESSAGES):
        return f"{reason}: {message}" if message else reason
    return None


@dataclass
class QueueWatch:
    """What kubebench knows of one queued job's Workload: read every ``READ_EVERY`` seconds."""

    read_at: float = -1e9
    #: ``reason: message`` of its latest QuotaReserved=False condition ("" before any).
    why: str = ""
    #: When it was first seen never to be admitted (monotonic), and why.
    never_since: float | None = None
    never: str = ""
    missing: bool = False  # kubebench may not read Workloads (or Kueue has none)
    reads: int = 0

    def update(self, api: Api, workloads: Resource | None, namespace: str, uid: str) -> None:
        """Read the job's Workload again when it is due."""
        now = time.monotonic()
        every = READ_FIRST if self.reads < FIRST_READS else READ_EVERY
        if workloads is None or self.missing or now - self.read_at < every:
            return
        self.read_at, self.reads = now, self.reads + 1
        try:
            items = api.list(workloads, namespace, f"{JOB_UID_LABEL}={uid}").get("items") or []
        except BackendError:
            self.missing = True  # not allowed to read them: the queue timeout still ends the wait
            return
        workload = items[0] if items else None
        found = condition(workload)
        self.why = f"{found[0]}: {found[1]}" if found else ""
        never = never_admitted(workload)
        if never is None:
            self.never_since, self.never = None, ""
        elif self.never_since is None:
            self.never_since, self.never = now, never

    def stuck_for(self) -> float:
        """Seconds the Workload has said it can never be admitted (0 when it does not)."""
        return 0.0 if self.never_since is None else time.monotonic() - self.never_since
