"""Kueue v0.19, as the stand-in plays it: the integrations its configuration turns on, one
ClusterQueue behind every LocalQueue with a quota per resource, and a Workload object per job.

- integrations (``integrations.frameworks`` of its Configuration, the ConfigMap
  ``kueue-system/kueue-manager-config``): by default those of v0.19.2's
  ``config/components/manager/controller_manager_config.yaml`` (the Helm chart's ``values.yaml``
  lists the same), where ``batch/job``, ``kubeflow.org/mpijob`` (mpi-operator's **v2beta1**) and
  ``trainer.kubeflow.org/trainjob`` are on and ``kubeflow.org/pytorchjob``, ``tfjob``, ``jaxjob``,
  ``xgboostjob`` and ``paddlejob`` are commented out. Its webhook creates a job that names a queue
  (label ``kueue.x-k8s.io/queue-name``) suspended only for a framework that is on; a job of another
  kind starts at once, as if no queue were named;
- a Workload (``kueue.x-k8s.io/v1beta2``) per queued job: named ``<kind>-<job>-<hash5>``, owned by
  the job and labelled ``kueue.x-k8s.io/job-uid`` (``jobframework/workload_names.go``,
  ``reconciler.go``), one pod set per replica type with its count and requests;
- admission in creation order (``suspend: false``) while at most ``capacity`` workloads are admitted
  and, with a ``quota`` (resource → nominal quota of the one flavor ``default-flavor``, no
  borrowing), their requests fit what the admitted ones leave. A workload that cannot be admitted
  gets ``QuotaReserved=False`` with the scheduler's message and, as the feature gate
  ``UnadmittedWorkloadsObservability`` is off by default in v0.19, the reason ``Pending``
  (``scheduler.go``, ``requeueAndUpdate``; ``flavorassigner.go``): ``couldn't assign flavors to pod
  set <ps>: insufficient quota for <r> in flavor default-flavor, previously considered podsets
  requests (0) + current podset request (<n>) > maximum capacity (<q>)`` for a workload that can never
  fit, ``… resource <r> unavailable in ClusterQueue`` for one asking for a resource the queue does
  not cover, ``… insufficient unused quota for <r> in flavor default-flavor, <n> more needed`` for one
  that waits; a LocalQueue that does not exist (``queues`` given and the name not in it) is
  ``Inadmissible``: ``LocalQueue <q> doesn't exist`` (``workload_controller.go``);
- ``preempt`` suspends an admitted job again, as preemption or a ``waitForPodsReady`` eviction does,
  and the job goes back to the queue.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import yaml

from .kubelet import quantity
from .scheduler import requests_of
from .store import ApiError, Key

if TYPE_CHECKING:
    from .standin import OperatorStandIn, Tracked

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
WORKLOADS: Key = ("kueue.x-k8s.io", "v1beta2", "workloads")
CONFIG_MAPS: Key = ("", "v1", "configmaps")
NAMESPACES: Key = ("", "v1", "namespaces")
KUEUE_NAMESPACE, CONFIG_MAP, CONFIG_KEY = "kueue-system", "kueue-manager-config", "controller_manager_config.yaml"
FLAVOR = "default-flavor"
#: Each job kind's integration, by the resource it is served at.
FRAMEWORKS: dict[Key, str] = {
    ("batch", "v1", "jobs"): "batch/job", ("kubeflow.org", "v1", "pytorchjobs"): "kubeflow.org/pytorchjob",
    ("kubeflow.org", "v1", "tfjobs"): "kubeflow.org/tfjob", ("kubeflow.org", "v1", "jaxjobs"): "kubeflow.org/jaxjob",
    ("kubeflow.org", "v1", "xgboostjobs"): "kubeflow.org/xgboostjob",
    ("kubeflow.org", "v2beta1", "mpijobs"): "kubeflow.org/mpijob",
    ("trainer.kubeflow.org", "v1alpha1", "trainjobs"): "trainer.kubeflow.org/trainjob",
}
#: ``integrations.frameworks`` of Kueue v0.19.2's default configuration (manifests and Helm chart).
DEFAULT_FRAMEWORKS = ("batch/job", "kubeflow.org/mpijob", "ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice",
                      "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "trainer.kubeflow.org/trainjob",
                      "pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")
_REPLICAS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs",
             "JAXJob": "jaxReplicaSpecs", "XGBoostJob": "xgbReplicaSpecs"}


def _in_run_policy(key: Key) -> bool:
    return key[0] == "kubeflow.org"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def pod_sets(obj: dict[str, Any]) -> list[tuple[str, int, dict[str, float]]]:
    """``(name, count, requests of one pod)`` of each pod set Kueue makes of a job."""
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind in _REPLICAS:
        return [(rtype.lower(), int(r.get("replicas", 1)), requests_of((r.get("template") or {}).get("spec") or {}, quantity))
                for rtype, r in (spec.get(_REPLICAS[str(kind)]) or {}).items()]
    if kind == "TrainJob":
        trainer = spec.get("trainer") or {}
        container = {"resources": trainer.get("resourcesPerNode") or {}}
        return [("node", int(trainer.get("numNodes", 1)), requests_of({"containers": [container]}, quantity))]
    template = (spec.get("template") or {}).get("spec") or {}
    return [("main", int(spec.get("parallelism") or 1), requests_of(template, quantity))]


def _show(resource: str, amount: float) -> str:
    """An amount as Kueue's messages write it (CPU in millicores below one core)."""
    if resource == "cpu" and amount != int(amount):
        return f"{int(round(amount * 1000))}m"
    return str(int(amount)) if amount == int(amount) else f"{amount:g}"


class Kueue:
    """Kueue's webhook, its Workloads and its admission (see the module's docstring)."""

    def __init__(self, capacity: int = 1, frameworks: tuple[str, ...] | list[str] = DEFAULT_FRAMEWORKS,
                 quota: dict[str, str] | None = None, queues: set[str] | None = None) -> None:
        self.capacity = capacity
        #: ``integrations.frameworks`` of its configuration.
        self.frameworks = tuple(frameworks)
        #: The ClusterQueue's nominal quota per resource (None: no quota, only ``capacity`` counts).
        self.quota = {k: quantity(v) for k, v in (quota or {}).items()} if quota is not None else None
        #: The LocalQueues that exist (None: every queue a job names).
        self.queues = queues
        self.admitted: set[tuple[str, str]] = set()
        self.held: set[tuple[str, str]] = set()  # not admitted again until released (a test's preemption)
        self.admissions: dict[str, int] = {}  # job name → how many times admitted
        self._lock = threading.Lock()

    def install(self, standin: OperatorStandIn) -> None:
        """What Kueue's manifests install that kubebench may read: its namespace and the ConfigMap of
        its configuration."""
        store = standin.store
        if store.find(NAMESPACES, "", KUEUE_NAMESPACE) is None:
            store.create(NAMESPACES, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KUEUE_NAMESPACE}})
        config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                  "integrations": {"frameworks": list(self.frameworks)}}
        store.create(CONFIG_MAPS, KUEUE_NAMESPACE, {"apiVersion": "v1", "kind": "ConfigMap",
                                                   "metadata": {"name": CONFIG_MAP},
                                                   "data": {CONFIG_KEY: yaml.safe_dump(config)}})

    def manages(self, key: Key) -> bool:
        """Whether the integration of the jobs at ``key`` is on."""
        return FRAMEWORKS.get(key) in self.frameworks

    def webhook(self, key: Key, obj: dict) -> dict:
        """Create a job that names a queue suspended, when its integration is on."""
        if self.manages(key) and ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
            spec = obj.setdefault("spec", {})
            (spec.setdefault("runPolicy", {}) if _in_run_policy(key) else spec)["suspend"] = True
        return obj

    def tick(self, standin: OperatorStandIn) -> None:
        """Free the quota of finished jobs, make the Workloads of new ones, then admit the oldest
        waiting ones while the quota allows, telling the others why they wait."""
        with self._lock:
            queued = [j for j in standin.jobs.values() if QUEUE_LABEL in (j.obj["metadata"].get("labels") or {})
                      and self.manages(j.key)]
            self.admitted &= {(j.namespace, j.name) for j in queued if j.finished is None}
            usage: Counter = Counter()
            for job in queued:
                if (job.namespace, job.name) in self.admitted:
                    usage.update(self._requests(job))
            for job in sorted(queued, key=lambda j: j.created):
                name = (job.namespace, job.name)
                if job.finished is not None or name in self.admitted:
                    continue
                self._workload(standin, job)
                if name in self.held:
                    continue
                why = self._why_not(job, usage)
                if why is not None:
                    self._condition(standin, job, [("QuotaReserved", "False", *why)])
                    continue
                self.admitted.add(name)
                usage.update(self._requests(job))
                self.admissions[job.name] = self.admissions.get(job.name, 0) + 1
                self._condition(standin, job, [
                    ("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue"),
                    ("Admitted", "True", "Admitted", "The workload is admitted")])
                standin.set_suspend(job, False)

    def _requests(self, job: Tracked) -> Counter:
        total: Counter = Counter()
        for _, count, requests in pod_sets(job.obj):
            total.update({k: v * count for k, v in requests.items()})
        return total

    def _why_not(self, job: Tracked, usage: Counter) -> tuple[str, str] | None:
        """``(reason, message)`` of the QuotaReserved=False condition of a workload not admitted now."""
        queue = job.obj["metadata"]["labels"][QUEUE_LABEL]
        if self.queues is not None and queue not in self.queues:
            return "Inadmissible", f"LocalQueue {queue} doesn't exist"
        if self.quota is not None:
            for ps, count, requests in pod_sets(job.obj):
                for resource, amount in sorted(requests.items()):
                    if resource not in self.quota:
                        return "Pending", f"couldn't assign flavors to pod set {ps}: resource {resource} unavailable in ClusterQueue"
                    if amount * count > self.quota[resource]:
                        return "Pending", (f"couldn't assign flavors to pod set {ps}: insufficient quota for {resource} "
                                           f"in flavor {FLAVOR}, previously considered podsets requests (0) + current "
                                           f"podset request ({_show(resource, amount * count)}) > maximum capacity "
                                           f"({_show(resource, self.quota[resource])})")
            for resource, amount in sorted(self._requests(job).items()):
                more = usage[resource] + amount - self.quota[resource]
                if more > 0:
                    return "Pending", (f"couldn't assign flavors to pod set {pod_sets(job.obj)[0][0]}: insufficient "
                                       f"unused quota for {resource} in flavor {FLAVOR}, {_show(resource, more)} more needed")
        if len(self.admitted) >= self.capacity:
            return "Pending", (f"couldn't assign flavors to pod set {pod_sets(job.obj)[0][0]}: insufficient unused "
                               f"quota for pods in flavor {FLAVOR}, 1 more needed")
        return None

    def _workload(self, standin: OperatorStandIn, job: Tracked) -> None:
        if job.data.get("workload") is not None:
            return
        digest = hashlib.sha256(f"{job.name}{job.uid}{job.kind}".encode()).hexdigest()[:5]
        name = f"{job.kind.lower()}-{job.name}"[:247] + f"-{digest}"
        owner = {"apiVersion": job.api_version, "kind": job.kind, "name": job.name, "uid": job.uid,
                 "controller": True, "blockOwnerDeletion": True}
        body = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": name, "labels": {JOB_UID_LABEL: job.uid}, "ownerReferences": [owner]},
                "spec": {"queueName": job.obj["metadata"]["labels"][QUEUE_LABEL], "podSets": [
                    {"name": ps, "count": count, "requests": {k: _show(k, v) for k, v in requests.items()}}
                    for ps, count, requests in pod_sets(job.obj)]}}
        try:
            standin.store.create(WORKLOADS, job.namespace, body)
        except ApiError:
            pass  # the job went meanwhile
        job.data["workload"] = name

    def _condition(self, standin: OperatorStandIn, job: Tracked, conditions: list[tuple[str, str, str, str]]) -> None:
        """Set conditions of the job's Workload (when they change, as Kueue's status patches do)."""
        name = job.data.get("workload")
        wanted = {(t, s, r, m) for t, s, r, m in conditions}
        if name is None or job.data.get("workload_conditions") == wanted:
            return
        job.data["workload_conditions"] = wanted

        def change(obj: dict) -> dict:
            kept = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] not in {t for t, *_ in conditions}]
            added = [{"type": t, "status": s, "reason": r, "message": m, "lastTransitionTime": _now()} for t, s, r, m in conditions]
            return {**obj, "status": {**(obj.get("status") or {}), "conditions": kept + added}}

        try:
            standin.store.update(WORKLOADS, job.namespace, name, change, status=True)
        except ApiError:
            pass

    def preempt(self, standin: OperatorStandIn, job: Tracked, hold: bool = False) -> None:
        """Suspend an admitted job again; with ``hold`` it is not admitted again until ``release``."""
        with self._lock:
            self.admitted.discard((job.namespace, job.name))
            if hold:
                self.held.add((job.namespace, job.name))
            self._condition(standin, job, [
                ("QuotaReserved", "False", "Pending", "Preempted to accommodate a higher priority Workload"),
                ("Admitted", "False", "NoReservation", "The workload has no reservation"),
                ("Evicted", "True", "Preempted", "Preempted to accommodate a higher priority Workload")])
        standin.set_suspend(job, True)

    def release(self, job: Tracked) -> None:
        """Let a held job be admitted again."""
        with self._lock:
            self.held.discard((job.namespace, job.name))
