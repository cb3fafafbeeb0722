"""``backend: kubernetes``: each run is a Kubeflow job (or a batch/v1 Job) on a cluster.

kubebench creates the job with the shared-storage claim mounted into every replica, follows it
through one watch per kind and experiment (shared by all its jobs), fails it early when a pod cannot
be scheduled or cannot start, copies each pod's log into the run's ``output/`` and deletes the job.
The ``kubernetes`` client is imported only when the first job is submitted.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, InfrastructureError, SpecError
from ...paths import RunPaths
from ...render import kinds
from ..base import Backend, JobStatus, Outcome
from . import status as st
from .api import PODS, Api, Resource, backoff, current_namespace, resource_of
from .config import KubernetesConfig
from .informer import Informer

if TYPE_CHECKING:
    from ...render.job import RenderedJob

log = logging.getLogger("kubebench")
EXPERIMENT_LABEL = kinds.LABEL_PREFIX + "experiment"
RUN_LABEL = kinds.LABEL_PREFIX + "run"
#: Annotation telling kubebench's own create from an object of the same name left over earlier.
SUBMISSION_ANNOTATION = kinds.LABEL_PREFIX + "submission"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
GONE_WAIT_SECONDS = 60.0


@dataclass(eq=False)
class KubeJob:
    """Handle of a job on the cluster."""

    name: str
    namespace: str
    resource: Resource
    run_id: str
    selector: str
    replicas: int
    uid: str | None = None
    #: (pod, reason) → (first seen, description) of pods that cannot be scheduled or started.
    problems: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)
    stuck: bool = False
    deleted: bool = False
    #: Set when the watches report a change of this job or its pods (or on an interrupt).
    wakeup: threading.Event = field(default_factory=threading.Event)

    @property
    def title(self) -> str:
        """``<Kind> <namespace>/<name>``."""
        return f"{self.resource.kind} {self.namespace}/{self.name}"


class KubernetesBackend(Backend):
    """Runs jobs on Kubernetes; its state comes from shared watches, so status checks cost no calls."""

    Config = KubernetesConfig
    # A status check reads the watch's cache, and a change wakes the waiting thread at once.
    poll_first = 0.05
    poll_factor = 2.0
    poll_max = 2.0

    def __init__(self, config: KubernetesConfig) -> None:
        super().__init__(config)
        self._lock = threading.RLock()
        self._api: Api | None = None
        self._informers: dict[tuple[str, Resource, str], Informer] = {}
        self._active: dict[str, KubeJob] = {}  # by run id: jobs submitted and not yet released
        self._namespace: str | None = None

    @property
    def namespace(self) -> str:
        """The namespace jobs go to (see ``KubernetesConfig.namespace``)."""
        with self._lock:
            if self._namespace is None:
                self._namespace = current_namespace(self.config)
            return self._namespace

    @property
    def api(self) -> Api:
        """The API client, connected on first use."""
        with self._lock:
            if self._api is None:
                self._api = Api(self.config)
            return self._api

    def job_paths(self, local: RunPaths) -> RunPaths:
        """The run's folders inside the pods: the same place on the claim, under its mount path."""
        storage = self.config.storage
        root = Path(storage.local_path) if storage.local_path else Path(local.experiments_root).parent
        mount = PurePosixPath(storage.mount_path)
        return RunPaths(_on_claim(local.experiments_root, root, mount), _on_claim(local.data_root, root, mount),
                        local.experiment_id, local.run_id)

    def prepare(self, manifest: dict[str, Any], paths: RunPaths) -> dict[str, Any]:
        """Mount the claim into every container; set namespace, service account and Kueue queue."""
        resource_of(manifest)  # refuses kinds that do not exist on Kubernetes (Process)
        meta = manifest.setdefault("metadata", {})
        namespace = meta.setdefault("namespace", self.namespace)
        if namespace != self.namespace:
            raise SpecError(f"the job's namespace {namespace!r} is not the backend's ({self.namespace!r})")
        storage = self.config.storage
        kinds.mount_claim(manifest, storage.volume, storage.claim, storage.mount_path)
        if self.config.service_account:
            kinds.set_pod_defaults(manifest, {"serviceAccountName": self.config.service_account})
        if self.config.queue:
            meta.setdefault("labels", {}).setdefault(QUEUE_LABEL, self.config.queue)
        return manifest

    def submit(self, job: RenderedJob, paths: RunPaths) -> KubeJob:
        """Create the job object (after starting the watches that will follow it)."""
        manifest = copy.deepcopy(job.manifest)
        experiment = (manifest["metadata"].get("labels") or {}).get(EXPERIMENT_LABEL)
        if not experiment:
            raise BackendError(f"{job.name}: the manifest has no {EXPERIMENT_LABEL} label")
        replicas = sum(group.count for group in kinds.replica_groups(manifest))
        handle = KubeJob(job.name, self.namespace, resource_of(manifest), job.run_id,
                         f"{EXPERIMENT_LABEL}={experiment}", replicas)
        self._informer(handle, handle.resource)
        self._informer(handle, PODS)
        token = uuid.uuid4().hex
        manifest["metadata"].setdefault("annotations", {})[SUBMISSION_ANNOTATION] = token
        with self._lock:
            self._active[handle.run_id] = handle  # from here on, close() deletes it if it is left behind
        try:
            handle.uid = self._create(handle, manifest, token)["metadata"].get("uid")
        except BaseException:
            self._release(handle)
            raise
        return handle

    def _create(self, handle: KubeJob, manifest: dict[str, Any], token: str) -> dict:
        for _ in range(3):
            created = self.api.create(handle.resource, handle.namespace, manifest)
            if created is not None:
                return created
            existing = self.api.get(handle.resource, handle.namespace, handle.name)
            if existing is None:
                continue
            if (existing["metadata"].get("annotations") or {}).get(SUBMISSION_ANNOTATION) == token:
                return existing  # a retried create whose first attempt went through
            # Left over from an earlier attempt at this run (kept, or its runner was killed): replace it.
            self.api.delete(handle.resource, handle.namespace, handle.name, "Foreground")
            self._wait_gone(handle)
        raise BackendError(f"create {handle.title}: the name stays taken by another object")

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Delete the jobs an earlier attempt left running (Foreground: gone once their pods are gone).

        A job that has ended is left to ``submit``, which replaces it: its pods write nothing more.
        """
        for job, _ in leftovers:
            handle = KubeJob(job.name, self.namespace, resource_of(job.manifest), job.run_id, "", 0)
            found = self.api.get(handle.resource, handle.namespace, handle.name)
            if found is None or st.job_phase(found)[0] != "running":
                continue
            if self.api.delete(handle.resource, handle.namespace, handle.name, "Foreground"):
                log.warning("deleted %s, left running by an earlier attempt", handle.title)
                self._wait_gone(handle)

    def _wait_gone(self, handle: KubeJob) -> None:
        deadline, attempt = time.monotonic() + GONE_WAIT_SECONDS, 0
        while self.api.get(handle.resource, handle.namespace, handle.name) is not None:
            attempt += 1
            if time.monotonic() > deadline:
                raise InfrastructureError(f"{handle.title} left over from an earlier attempt is not going away")
            time.sleep(backoff(attempt))

    def status(self, handle: KubeJob) -> JobStatus:
        """The job's phase from the watch's cache; a pod stuck past the grace fails it."""
        jobs, pods = self._informer(handle, handle.resource), self._informer(handle, PODS)
        for informer in (jobs, pods):
            error = informer.error
            if error is not None:  # a lasting refusal (e.g. not allowed to watch): no point waiting
                raise BackendError(str(error)) from error
        obj = jobs.get(handle.name)
        if obj is None or obj["metadata"].get("uid") != handle.uid:
            if jobs.deleted(handle.name, handle.uid):
                return JobStatus("failed", None, f"{handle.title} was deleted by someone else")
            return JobStatus("running")
        run_pods = pods.matching(RUN_LABEL, handle.run_id)
        phase, reason = st.job_phase(obj)
        if phase == "succeeded":
            return JobStatus("succeeded", 0)
        stuck = self._stuck(handle, run_pods)
        if phase == "failed":
            text, code = st.failure_reason(reason, run_pods)
            if code is None:  # the pods' watch may lag behind the job's: ask for the pods once
                run_pods = self._pods(handle, fresh=True)
                text, code = st.failure_reason(reason, run_pods)
            disrupted = st.disruption(run_pods)
            if disrupted:  # the cluster stopped a pod: the infrastructure failed, not the workload
                return JobStatus("failed", code, f"{disrupted}; job failed: {reason}", infrastructure=True)
            return JobStatus("failed", code, f"{_first(handle)}; {text}" if code is None and handle.problems else text)
        return JobStatus("failed", None, stuck) if stuck else JobStatus("running")

    def _stuck(self, handle: KubeJob, pods: list[dict]) -> str | None:
        now, seen = time.monotonic(), {}
        for pod in pods:
            found = st.problem(pod)
            if found:
                name = pod["metadata"]["name"]
                first = handle.problems.get((name, found[0]), (now, ""))[0]
                seen[(name, found[0])] = (first, f"pod {name}: {found[0]}" + (f": {found[1]}" if found[1] else ""))
        handle.problems = seen
        late = sorted(v for v in seen.values() if now - v[0] >= self.config.unschedulable_grace)
        handle.stuck = handle.stuck or bool(late)
        return late[0][1] if late else None

    def wait(self, handle: KubeJob, timeout: float) -> Outcome:
        """The shared wait loop; a timeout while a pod was stuck is a failure with the pod's reason."""
        outcome = super().wait(handle, timeout)
        if outcome.state == "timeout" and handle.problems:
            return Outcome("failed", None, f"{_first(handle)} ({outcome.reason})")
        return outcome

    def pause(self, handle: KubeJob, seconds: float) -> None:
        """Sleep until the watches report a change of this job or its pods, or ``seconds`` pass."""
        handle.wakeup.wait(seconds)
        handle.wakeup.clear()  # the cache already holds whatever set it: the next check sees it

    def interrupt(self) -> None:
        """Wake every waiting thread so that it cancels its job."""
        super().interrupt()
        self._notify(None)

    def logs(self, handle: KubeJob, paths: RunPaths) -> None:
        """Copy each pod's log to ``output/<replica-type>-<index>.log``; then delete the job unless kept."""
        try:
            for pod in sorted(self._pods(handle), key=st.rank):
                if st.started(pod):
                    container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name") or ""
                    dest = Path(paths.output) / f"{st.replica_name(pod)}.log"
                    self.api.copy_log(handle.namespace, pod["metadata"]["name"], container, dest)
        finally:
            if self.config.keep_jobs and not handle.stuck:
                self._release(handle)
            else:
                self.cancel(handle)

    def _pods(self, handle: KubeJob, fresh: bool = False) -> list[dict]:
        pods = [] if fresh else self._informer(handle, PODS).matching(RUN_LABEL, handle.run_id)
        if len(pods) < handle.replicas or not all(map(st.started, pods)):
            # The pods' watch may lag behind the job's: ask for them once.
            listing = self.api.list(PODS, handle.namespace, f"{RUN_LABEL}={handle.run_id}") or {}
            pods = listing.get("items") or []
        return pods

    def cancel(self, handle: KubeJob) -> None:
        """Delete the job; its pods go with it. A failure is logged: the job's deadline still ends it."""
        if not handle.deleted:
            try:
                self.api.delete(handle.resource, handle.namespace, handle.name, self.config.propagation)
            except BackendError as e:
                log.warning("%s; its activeDeadlineSeconds will stop it", e)
                return
            handle.deleted = True
        self._release(handle)

    def close(self) -> None:
        """Delete jobs still in flight (an interrupted runner), stop the watches, close the connections."""
        with self._lock:
            leftovers, informers = list(self._active.values()), list(self._informers.values())
            self._informers.clear()
        for handle in leftovers:
            self.cancel(handle)
        for informer in informers:
            informer.stop()
        with self._lock:
            if self._api is not None:
                self._api.close()
                self._api = None

    def _informer(self, handle: KubeJob, resource: Resource) -> Informer:
        key = (handle.namespace, resource, handle.selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = Informer(self.api, resource, handle.namespace, handle.selector, self._notify)
                self._informers[key] = informer.start()
            return informer

    def _release(self, handle: KubeJob) -> None:
        with self._lock:
            self._active.pop(handle.run_id, None)
            informers = [i for (ns, _, sel), i in self._informers.items() if (ns, sel) == (handle.namespace, handle.selector)]
        for informer in informers:
            names = [handle.name] if informer.resource != PODS else \
                [p["metadata"]["name"] for p in informer.matching(RUN_LABEL, handle.run_id)]
            informer.forget(names)

    def _notify(self, obj: dict | None) -> None:
        with self._lock:
            if obj is None:
                handles = list(self._active.values())
            else:
                run = ((obj.get("metadata") or {}).get("labels") or {}).get(RUN_LABEL)
                handles = [self._active[run]] if run in self._active else []
        for handle in handles:
            handle.wakeup.set()


def _first(handle: KubeJob) -> str:
    return min(handle.problems.values())[1]


def _on_claim(path: Any, root: Path, mount: PurePosixPath) -> PurePosixPath:
    try:
        relative = Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        raise SpecError(f"{path} is not on the shared storage ({root}, mounted at {mount} in the pods): set "
                        "backend.storage.local_path to where kubebench sees the claim, or move the folder onto it") from None
    return mount.joinpath(*relative.parts)
