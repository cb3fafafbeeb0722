"""``kind: Serving`` on Kubernetes: the server's Service and Deployment first, then, once the
Deployment's pods are Ready (through the startup and readiness probes its pod template carries),
the load generator's Indexed Job, told the Service's URL (objects from
:func:`kubebench.render.serving.kubernetes_objects`).

The run's outcome is the load Job's, judged as a ``kind: Job`` run is (its logs hold the metrics).
The server fails the run when it is not ready within its startup timeout (saying what its pods and
their events showed), when a server container exits (the Deployment would restart it, but the load
generator has lost it: as locally), or when the cluster stops a server pod (evicted, preempted: a
failure of the infrastructure, retried). Every pod's log is followed as for the other kinds; the
servers' are read once the load is done, before anything is deleted (``output/server-<i>.log``,
numbered in the order their pods were created), then all three objects are deleted (with
``keep_jobs`` the load Job is kept; the server never is, as it holds its GPUs). The objects are
followed through the experiment's shared watches (Deployments, Jobs, pods): waiting costs no call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, SpecError
from ...render.serving import LOAD, ROLE, SERVER, kubernetes_objects
from ..base import JobStatus
from ..reasons import exit_reason
from . import objects, status as st
from .api import DEPLOYMENTS, JOBS, PODS, SERVICES, Resource
from .config import KubernetesConfig
from .driver import ClusterDriver
from .handle import SUBMISSION_ANNOTATION, KubeJob, Submission
from .informer import Informer
from .logs import RunLogs
from .stuck import StuckCheck

if TYPE_CHECKING:
    from ...render.job import RenderedJob

#: What a Serving run creates, in creation order, by the kind of each object.
RESOURCES = {"Service": SERVICES, "Deployment": DEPLOYMENTS, "Job": JOBS}


@dataclass(eq=False)
class ServingJob(KubeJob):
    """Handle of a Serving run; its job fields (``name``, ``resource``, ``uid``) are the load
    generator's Job, created once the server is ready."""

    service: dict[str, Any] = field(default_factory=dict)
    deployment: dict[str, Any] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)
    startup_timeout: float = 600.0
    #: When the server must be ready by (monotonic clock), from the run's admission.
    ready_by: float = 0.0
    loading: bool = False
    #: uid of each object created, by kind.
    created: dict[str, str] = field(default_factory=dict)
    #: ``server-<i>`` of each server pod (by uid), in the order the pods were created.
    server_names: dict[str, str] = field(default_factory=dict)

    @property
    def all_ended(self) -> bool:
        """The servers run on after the load generator succeeded: only deletion ends them."""
        return self.deleted

    def replica_name(self, pod: dict[str, Any]) -> str:
        """``server-<i>`` for a server pod, ``load-<index>`` for a load generator's."""
        if _role(pod) != SERVER:
            return st.replica_name(pod)
        uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
        return self.server_names.setdefault(uid, f"server-{len(self.server_names)}")

    def objects(self) -> list[tuple[Resource, str]]:
        """Every object of the run, load Job first (the order they are deleted in)."""
        return [(RESOURCES[doc["kind"]], doc["metadata"]["name"]) for doc in (self.load, self.deployment, self.service)]


class ServingJobs(ClusterDriver[ServingJob]):
    """The driver of ``kind: Serving`` (see the module's docstring)."""

    def prepare(self, manifest: dict[str, Any], config: KubernetesConfig) -> None:
        """A Serving run is not queued: Kueue would admit its load generator's Job, not its server."""
        if config.queue:
            raise SpecError("backend.queue: a kind: Serving job is not queued (Kueue would admit its load "
                            "generator's Job, not its server's Deployment); drop the queue for this benchmark")

    def objects(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """A Deployment, a Service and a load Job."""
        return kubernetes_objects(manifest)

    def resources(self, manifest: dict[str, Any]) -> list[Resource]:
        """Its Service, Deployment and Job."""
        return [SERVICES, DEPLOYMENTS, JOBS]

    def submit(self, submission: Submission) -> ServingJob:
        """Create the Service and the Deployment of a Serving manifest (decorated and labelled with the
        submission's token); the load Job is created by :meth:`status` once the server is ready."""
        manifest, token = submission.manifest, submission.token
        deployment, service, load = kubernetes_objects(manifest)
        for doc in (deployment, service, load):
            doc["metadata"].setdefault("annotations", {})[SUBMISSION_ANNOTATION] = token
        spec = manifest["spec"]
        main = frozenset(c["name"] for role in (SERVER, LOAD) for c in spec[role]["template"]["spec"]["containers"])
        handle = ServingJob(self, load["metadata"]["name"], self.cluster.namespace, JOBS, submission.run_id,
                            submission.selector, int(load["spec"]["completions"]), token, main, service=service,
                            deployment=deployment, load=load,
                            startup_timeout=float(spec[SERVER].get("startupTimeoutSeconds", 600)))
        for resource in RESOURCES.values():
            self.cluster.check_served(resource)
        handle.logs = RunLogs(self.cluster.api, handle.namespace, submission.output, main, handle.replica_name)
        for resource in (DEPLOYMENTS, JOBS, PODS):
            self.watches.informer(handle, resource)
        self.watches.track(handle)
        handle.clock.submitted = time.time()
        try:
            for doc in (service, deployment):  # the Service first: its name resolves from the start
                self._create(handle, doc)
        except BaseException:
            self.cancel(handle)
            raise
        return handle

    def _create(self, handle: ServingJob, doc: dict[str, Any]) -> str | None:
        created = objects.create(self.cluster.api, RESOURCES[doc["kind"]], handle.namespace, doc, handle.token)
        uid = created["metadata"].get("uid")
        handle.created[doc["kind"]] = uid or ""
        return uid

    def status(self, handle: ServingJob) -> JobStatus:
        """Starting (until the server is ready, then the load Job is created), then the load Job's
        phase; a server that exits, is stopped by the cluster or is deleted fails the run."""
        deployments, jobs = self.watches.informer(handle, DEPLOYMENTS), self.watches.informer(handle, JOBS)
        self.watches.healthy(deployments, jobs, self.watches.informer(handle, PODS))
        pods = self.watches.pods(handle)
        servers = sorted((p for p in pods if _role(p) == SERVER), key=_creation)
        for pod in servers:
            handle.replica_name(pod)  # numbered in creation order
        if handle.admitted_at is None:
            handle.admitted_at = time.monotonic()
            handle.ready_by = handle.admitted_at + handle.startup_timeout
        failed = _server_failed(handle, deployments, servers)
        if failed is not None:
            return failed
        if handle.loading:
            return self.job_status(handle, jobs, [p for p in pods if _role(p) == LOAD])
        return self._starting(handle, deployments.get(handle.deployment["metadata"]["name"]), servers)

    def _starting(self, handle: ServingJob, deployment: dict | None, servers: list[dict]) -> JobStatus:
        wanted = int(handle.deployment["spec"].get("replicas", 1))
        if deployment is not None and _ready_replicas(deployment) >= wanted:
            handle.uid = self._create(handle, handle.load)
            handle.created["Job"] = handle.uid or ""
            # from here the run is the load Job's: its pods' problems count from its creation
            handle.loading, handle.admitted_at = True, time.monotonic()
            return JobStatus("running")
        if deployment is not None:
            stuck = StuckCheck(self.cluster.api, self.cluster.config).check(
                handle.problems, handle.namespace, deployment, servers, handle.admitted_at or time.monotonic(),
                lambda: [p for p in self.watches.list_pods(handle) if _role(p) == SERVER])
            if stuck:
                return JobStatus("failed", None, stuck)
        if time.monotonic() >= handle.ready_by:
            why = self._not_ready(handle, servers, wanted)
            return JobStatus("failed", None, f"the server was not ready after {_seconds(handle.startup_timeout)}: {why}")
        return JobStatus("running")

    def _not_ready(self, handle: ServingJob, servers: list[dict], wanted: int) -> str:
        """What the server pods showed: each unready one's phase and its latest warning event."""
        if handle.problems.seen:
            return handle.problems.first()
        live = [p for p in servers if not p["metadata"].get("deletionTimestamp")]
        unready = [p for p in live if not _pod_ready(p)]
        if not unready:
            return f"{len(live)} of {wanted} server pods created"
        return "; ".join(self._describe(handle, pod) for pod in unready[:3])

    def _describe(self, handle: ServingJob, pod: dict[str, Any]) -> str:
        status = pod.get("status") or {}
        text = f"{handle.replica_name(pod)} (pod {pod['metadata']['name']}) {status.get('phase', 'Pending')}, not Ready"
        for container in status.get("containerStatuses") or []:
            waiting = (container.get("state") or {}).get("waiting")
            if waiting and waiting.get("reason"):
                text += f" ({container['name']} {waiting['reason']})"
        uid = pod["metadata"].get("uid")
        try:
            events = self.cluster.api.events(handle.namespace, uid) if uid else []
        except BackendError:
            events = []
        warnings = [e for e in events if e.get("type") == "Warning"]
        if warnings:  # the latest (timestamps are whole seconds: the last listed of the latest second)
            latest = sorted(warnings, key=lambda e: e.get("lastTimestamp") or e.get("firstTimestamp") or "")[-1]
            text += f": {latest.get('reason')}: {' '.join(str(latest.get('message', '')).split())[:300]}"
        return text

    def pause(self, handle: ServingJob, seconds: float) -> float:
        """A server still starting: at most until its startup timeout."""
        if not handle.loading and handle.ready_by:
            return min(seconds, max(0.0, handle.ready_by - time.monotonic()) + 0.01)
        return seconds

    def cancel(self, handle: ServingJob) -> None:
        """Delete every object of the run (its pods go with them); one that cannot be deleted is
        logged, and the others are deleted all the same."""
        if not handle.deleted:
            for resource, name in handle.objects():
                if resource == JOBS and "Job" not in handle.created:
                    continue
                self.delete(handle, resource, name)
            handle.deleted, handle.clock.deleted = True, time.time()
        self.watches.drop(handle, DEPLOYMENTS, [handle.deployment["metadata"]["name"]])
        self.watches.forget(handle)

    def release(self, handle: ServingJob) -> None:
        """Delete the run's objects; with ``keep_jobs`` keep the load Job (unless the run was stuck or
        timed out) and delete only its pods still running: the server is deleted all the same, as it
        holds its GPUs."""
        if handle.deleted or not self.cluster.config.keep_jobs or handle.stuck or handle.timed_out \
                or not handle.loading:
            return self.cancel(handle)
        for resource, name in handle.objects()[1:]:
            self.delete(handle, resource, name)
        for pod in handle.seen.values():
            if _role(pod) == LOAD and (pod.get("status") or {}).get("phase") in ("Running", "Pending", None) \
                    and not pod["metadata"].get("deletionTimestamp"):
                self.delete(handle, PODS, pod["metadata"]["name"])
        self.watches.drop(handle, DEPLOYMENTS, [handle.deployment["metadata"]["name"]])
        self.watches.forget(handle)

    def reclaim(self, job: RenderedJob) -> None:
        """Delete the server an earlier attempt at this run left behind, and its load Job first if it
        runs (one that has ended is left to :meth:`submit`, which replaces it)."""
        for doc in reversed(kubernetes_objects(job.manifest)):
            resource = RESOURCES[doc["kind"]]
            self.reclaim_object(resource, doc["metadata"]["name"], job=resource == JOBS)


def _server_failed(handle: ServingJob, deployments: Informer, servers: list[dict]) -> JobStatus | None:
    name = handle.deployment["metadata"]["name"]
    if deployments.get(name) is None and deployments.deleted(name, handle.created.get("Deployment")):
        return JobStatus("failed", None, f"Deployment {handle.namespace}/{name} (the server) was deleted by someone else")
    disrupted = st.disruption(servers, handle.replica_name)
    if disrupted:  # the cluster stopped it: the infrastructure failed, not the server
        return JobStatus("failed", None, f"{disrupted}; the server was stopped", infrastructure=True)
    when = "before the load generator was done" if handle.loading else "before it was ready"
    for pod in servers:
        ended = _exited(pod, handle.main)
        if ended is not None:
            return JobStatus("failed", ended[0], f"{handle.replica_name(pod)} {ended[1]} {when}")
    return None



def _exited(pod: dict[str, Any], main: frozenset[str]) -> tuple[int, str] | None:
    """(exit code, how) of a server container that ended, whether restarted since or not; None
    for a pod being deleted (its containers are being stopped)."""
    if pod["metadata"].get("deletionTimestamp"):
        return None
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") not in main:
            continue
        ended = (status.get("state") or {}).get("terminated") or \
            ((status.get("lastState") or {}).get("terminated") if status.get("restartCount") else None)
        if ended:
            code = int(ended.get("exitCode") or 0)
            oom = ended.get("reason") == "OOMKilled"
            return code, f"out of memory (OOMKilled): exited with code {code}" if oom else exit_reason(code)
    return None


def _ready_replicas(deployment: dict[str, Any]) -> int:
    """The Deployment's ready pods, once its controller has seen its latest spec."""
    status = deployment.get("status") or {}
    if int(status.get("observedGeneration") or 0) < int(deployment["metadata"].get("generation") or 1):
        return 0
    return int(status.get("readyReplicas") or 0)


def _role(pod: dict[str, Any]) -> str | None:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(ROLE)


def _creation(pod: dict[str, Any]) -> tuple[str, str]:
    return pod["metadata"].get("creationTimestamp") or "", pod["metadata"]["name"]


def _pod_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in (pod.get("status") or {}).get("conditions") or [])


def _seconds(value: float) -> str:
    return f"{value:g}s" if value < 120 else f"{value / 60:g}m"
