"""``backend: kubernetes``: each run is a Kubeflow job (or a batch/v1 Job) on a cluster.

kubebench creates the job with the shared-storage claim mounted into every replica, follows it
through one watch per kind and experiment (shared by all its jobs), streams every container's log
into the run's ``output/`` from the moment it runs, fails the run early when a pod cannot be
scheduled or started (or a TrainJob's container fails and is restarted in place), counts the run's
time from its admission (Kueue) and treats a suspension after that as a preemption, and once the
logs are collected deletes the job. The ``kubernetes`` client is imported only when the first job
is submitted.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, KubebenchError, SpecError, StorageError
from ...paths import RunPaths
from ...render import kinds, versions
from ...render.serving import kubernetes_objects
from ...spec.files import spec_files_of
from ..base import Backend, Check, JobStatus, Outcome, PodTelemetry
from . import objects, preflight, serving, specmap, status as st
from .api import PODS, Api, Resource, current_namespace, resource_of
from .config import KubernetesConfig
from .handle import KubeJob
from .informer import Informer
from .logs import RunLogs
from .provenance import NodeCache, pod_provenance
from .serving import ServingJob
from .stuck import StuckCheck

if TYPE_CHECKING:
    from ...render.job import RenderedJob

log = logging.getLogger("kubebench")
EXPERIMENT_LABEL = kinds.LABEL_PREFIX + "experiment"
RUN_LABEL = kinds.LABEL_PREFIX + "run"
#: Label (on the job's pod templates, so on its pods) telling this submission's pods from those of
#: an earlier attempt at the same run (same job name, same run label); the job carries it as annotation.
SUBMISSION_LABEL = objects.SUBMISSION_ANNOTATION
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Kinds whose pods the operator restarts in place with no way for kubebench to say otherwise
#: (a TrainJob's JobSet defaults its pods to ``restartPolicy: OnFailure``, six retries): the first
#: failure is the run's.
RESTARTED_IN_PLACE = frozenset({"TrainJob"})


class KubernetesBackend(Backend[KubeJob, KubernetesConfig]):
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
        self._served: dict[Resource, str | None] = {}  # resource → why it cannot be used (None: it can)
        self._nodes = NodeCache(lambda: self.api)
        self._spec_files: dict[str, str] | None = None  # the spec's folder, when this backend ships it
        self._spec_map: str | None = None  # the ConfigMap this runner made of it
        #: The cluster's Kubernetes version: given, else read from the API server once (``check``).
        self._version = versions.parse(config.kubernetes_version) if config.kubernetes_version else None

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

    @property
    def queue_timeout(self) -> float | None:
        return self.config.queue_timeout

    def job_paths(self, local: RunPaths) -> RunPaths:
        """The run's folders inside the pods: the same place on the claim, under its mount path."""
        storage = self.config.storage
        root = Path(storage.local_path) if storage.local_path else Path(local.experiments_root).parent
        mount = PurePosixPath(storage.mount_path)
        return RunPaths(_on_claim(local.experiments_root, root, mount), _on_claim(local.data_root, root, mount),
                        local.experiment_id, local.run_id)

    def prepare(self, manifest: dict[str, Any], paths: RunPaths) -> dict[str, Any]:
        """Mount the claim and a ``/dev/shm`` into every pod; one replica per pod (LOCAL_WORLD_SIZE);
        set namespace, service account and Kueue queue."""
        resource_of(manifest)  # refuses kinds that do not exist on Kubernetes (Process)
        meta = manifest.setdefault("metadata", {})
        namespace = meta.setdefault("namespace", self.namespace)
        if namespace != self.namespace:
            raise SpecError(f"the job's namespace {namespace!r} is not the backend's ({self.namespace!r})")
        kinds.valid_labels(manifest)
        versions.require([manifest], self._version)
        storage = self.config.storage
        kinds.mount_claim(manifest, storage.volume, storage.claim, storage.mount_path, _folders(storage, paths))
        kinds.mount_shm(manifest, self.config.shm_size)
        config_map = self.config.spec_configmap or (specmap.name_of(paths.experiment_id)
                                                    if self._spec_files is not None else None)
        if config_map:  # the pods' working directory: the spec's folder
            kinds.mount_config_map(manifest, "kubebench-spec", config_map, self.config.spec_mount)
        # In Istio-injected namespaces (Kubeflow profiles) a classic sidecar outlives the job's container.
        kinds.set_template_annotations(manifest, {"sidecar.istio.io/inject": "false"})
        kinds.add_env_default(manifest, {"LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0"})
        if self.config.service_account:
            kinds.set_pod_defaults(manifest, {"serviceAccountName": self.config.service_account})
        if self.config.queue:
            if manifest.get("kind") == "Serving":
                raise SpecError("backend.queue: a kind: Serving job is not queued (Kueue would admit its load "
                                "generator's Job, not its server's Deployment); drop the queue for this benchmark")
            if manifest.get("kind") == "MPIJob" and manifest.get("apiVersion") == "kubeflow.org/v1":
                raise SpecError("backend.queue: Kueue manages MPIJobs of kubeflow.org/v2beta1 only "
                                "(mpi-operator); set job.mpi_api_version: kubeflow.org/v2beta1 or drop the queue")
            meta.setdefault("labels", {}).setdefault(QUEUE_LABEL, self.config.queue)
        return manifest

    def give_spec(self, spec_file: Path) -> None:
        """Ship the spec's folder to the pods (see :mod:`.specmap`) unless a ConfigMap of it is given."""
        if not self.config.spec_configmap and self.config.ship_spec:
            self._spec_files = spec_files_of(spec_file)  # too big: a SpecError before anything runs

    def begin(self, experiment_id: str) -> None:
        """Make the ConfigMap of the spec's folder that every job pod mounts."""
        if self._spec_files is not None:
            self._spec_map = specmap.ship(self.api, self.namespace, experiment_id, self._spec_files)

    def check(self, manifests: list[dict[str, Any]]) -> None:
        """The client configured, the API server reachable, the namespace there, every kind served,
        every field the jobs set known to the cluster's Kubernetes version (read here, once)."""
        api = preflight.connect(lambda: self.api, self.config)
        self._version = self._version or preflight.server_version(api)
        preflight.check(api, self.namespace, manifests, self._version)
        with self._lock:
            self._served.update({r: None for r in preflight.resources(manifests)})

    def doctor(self, manifests: list[dict[str, Any]], local: RunPaths) -> list[Check]:
        """Cluster, namespace, kinds, permissions, claim (bound, and the same one a pod sees), queue."""
        try:
            api = preflight.connect(lambda: self.api, self.config)
        except KubebenchError as e:
            return [Check("cluster", "fail", str(e))]
        storage = self.config.storage
        root = Path(storage.local_path) if storage.local_path else Path(local.experiments_root).parent
        return preflight.doctor(api, self.config, self.namespace, manifests, root, self.config.probe_image,
                                ships_spec=self._spec_files is not None)

    def objects(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """A Serving manifest is a Deployment, a Service and a load Job on a cluster."""
        return kubernetes_objects(manifest) if manifest.get("kind") == "Serving" else [manifest]

    def submit(self, job: RenderedJob, paths: RunPaths) -> KubeJob:
        """Create the job object (after starting the watches that will follow it)."""
        open_to_pods(paths)
        manifest = copy.deepcopy(job.manifest)
        experiment = (manifest["metadata"].get("labels") or {}).get(EXPERIMENT_LABEL)
        if not experiment:
            raise BackendError(f"{job.name}: the manifest has no {EXPERIMENT_LABEL} label")
        token = uuid.uuid4().hex[:16]
        manifest["metadata"].setdefault("annotations", {})[objects.SUBMISSION_ANNOTATION] = token
        kinds.set_template_labels(manifest, {SUBMISSION_LABEL: token})
        if manifest.get("kind") == "Serving":  # a Service and a Deployment, then a Job (see .serving)
            return serving.submit(self, manifest, job.run_id, Path(paths.output), f"{EXPERIMENT_LABEL}={experiment}", token)
        main = frozenset(c.get("name") for g in kinds.replica_groups(manifest)
                         for c in g.template.get("spec", {}).get("containers", []) if c.get("name"))
        handle = KubeJob(job.name, self.namespace, resource_of(manifest), job.run_id,
                         f"{EXPERIMENT_LABEL}={experiment}", sum(g.count for g in kinds.replica_groups(manifest)),
                         token, main)
        self._check_served(handle.resource)
        handle.logs = RunLogs(self.api, handle.namespace, Path(paths.output), main)
        self._informer(handle, handle.resource)
        self._informer(handle, PODS)
        self._track(handle)
        try:
            handle.uid = objects.create(self.api, handle, manifest, token)["metadata"].get("uid")
        except BaseException:
            self._release(handle)
            raise
        return handle

    def _track(self, handle: KubeJob) -> None:
        with self._lock:
            self._active[handle.run_id] = handle  # from here on, close() deletes it if it is left behind

    def _check_served(self, resource: Resource) -> None:
        """Once per kind: is it served here? (an operator not installed, an MPIJob version not served)"""
        with self._lock:
            known = resource in self._served
        if not known:
            why = objects.not_served(self.api, resource)
            with self._lock:
                self._served[resource] = why
        if self._served[resource]:
            raise BackendError(self._served[resource])

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Delete the jobs an earlier attempt left running (Foreground: gone once their pods are gone).

        A job that has ended is left to ``submit``, which replaces it: its pods write nothing more.
        """
        for job, _ in leftovers:
            if job.manifest.get("kind") == "Serving":
                serving.reclaim(self, job.manifest, job.run_id)
                continue
            handle = KubeJob(job.name, self.namespace, resource_of(job.manifest), job.run_id, "", 0)
            found = self.api.get(handle.resource, handle.namespace, handle.name)
            if found is None or st.job_phase(found)[0] != "running":
                continue
            if self.api.delete(handle.resource, handle.namespace, handle.name, "Foreground"):
                log.warning("deleted %s, left running by an earlier attempt", handle.title)
                objects.wait_gone(self.api, handle)

    def status(self, handle: KubeJob) -> JobStatus:
        """The job's phase from the watch's cache: queued while suspended before it started,
        preempted when suspended after; a pod stuck past its grace fails it."""
        if isinstance(handle, ServingJob):  # its server first, then its load generator's Job
            return serving.status(self, handle)
        jobs = self._informer(handle, handle.resource)
        self._check_informers(jobs, self._informer(handle, PODS))
        return self._job_status(handle, jobs, self._observe(handle, self._run_pods(handle)))

    def _check_informers(self, *informers: Informer) -> None:
        for informer in informers:
            error = informer.error
            if error is not None:  # a lasting refusal (e.g. not allowed to watch): no point waiting
                raise BackendError(str(error)) from error

    def _job_status(self, handle: KubeJob, jobs: Informer, pods: list[dict]) -> JobStatus:
        """The phase of the job ``handle`` names, from the watch's cache, with its pods ``pods``."""
        obj = jobs.get(handle.name)
        if obj is None or obj["metadata"].get("uid") != handle.uid:
            if jobs.deleted(handle.name, handle.uid):
                return JobStatus("failed", None, f"{handle.title} was deleted by someone else")
            return JobStatus("running")  # not in the watch's cache yet
        if st.suspended(obj):
            if handle.admitted_at is None:
                return JobStatus("queued", reason=f"waiting in queue {self.config.queue or '(none)'}")
            return JobStatus("failed", None, f"preempted: {handle.title} was suspended after it started "
                                             "(Kueue preemption or eviction); its pods were stopped", infrastructure=True)
        if handle.admitted_at is None:
            handle.admitted_at = time.monotonic()
        return self._phase(handle, obj, pods)

    def _phase(self, handle: KubeJob, obj: dict, pods: list[dict]) -> JobStatus:
        phase, reason = st.job_phase(obj)
        if phase == "succeeded":
            handle.succeeded = True
            return JobStatus("succeeded", 0)
        if phase == "failed":
            return self._failed(handle, reason, pods)
        if handle.resource.kind in RESTARTED_IN_PLACE:
            for pod in sorted(pods, key=st.rank):
                found = st.restarted(pod, handle.main)
                if found:
                    return JobStatus("failed", found[1], f"{found[0]}; the run fails at its first failure")
        stuck = StuckCheck(self.api, self.config).check(handle.problems, handle.namespace, obj, pods,
                                                        handle.admitted_at or time.monotonic(),
                                                        lambda: self._observe(handle, self._listed(handle)))
        return JobStatus("failed", None, stuck) if stuck else JobStatus("running")

    def _failed(self, handle: KubeJob, reason: str, pods: list[dict]) -> JobStatus:
        seen = list(handle.seen.values())  # pods an operator deleted still tell how they ended
        text, code = st.failure_reason(reason, seen)
        if code is None:  # the pods' watch may lag behind the job's: ask for the pods once
            self._observe(handle, self._listed(handle))
            seen = list(handle.seen.values())
            text, code = st.failure_reason(reason, seen)
        disrupted = st.disruption(seen)
        if disrupted:  # the cluster stopped a pod: the infrastructure failed, not the workload
            return JobStatus("failed", code, f"{disrupted}; job failed: {reason}", infrastructure=True)
        if code is None and handle.problems.seen:
            text = f"{handle.problems.first()}; {text}"
        return JobStatus("failed", code, text)

    def wait(self, handle: KubeJob, timeout: float) -> Outcome:
        """The shared wait loop; a timeout while a pod was stuck is a failure with the pod's reason."""
        outcome = super().wait(handle, timeout)
        if outcome.state == "timeout" and handle.problems.seen:
            return Outcome("failed", None, f"{handle.problems.first()} ({outcome.reason})",
                           queued_seconds=outcome.queued_seconds)
        return outcome

    def timed_out(self, handle: KubeJob) -> None:
        """Read what no stream holds of the running pods' logs, then delete the job."""
        handle.timed_out = True
        if handle.logs is not None:
            handle.logs.snapshot(list(handle.seen.values()))
        self.cancel(handle)

    def pause(self, handle: KubeJob, seconds: float) -> None:
        """Sleep until the watches report a change of this job or its pods, or ``seconds`` pass (a
        server still starting: at most until its startup timeout)."""
        if isinstance(handle, ServingJob) and not handle.loading and handle.ready_by:
            seconds = min(seconds, max(0.0, handle.ready_by - time.monotonic()) + 0.01)
        handle.wakeup.wait(seconds)
        handle.wakeup.clear()  # the cache already holds whatever set it: the next check sees it

    def interrupt(self) -> None:
        """Wake every waiting thread so that it cancels its job."""
        super().interrupt()
        self._notify(None)

    def collect(self, handle: KubeJob, paths: RunPaths) -> list[str]:
        """Finish the log streams and name each replica's log ``output/<replica-type>-<index>.log``."""
        if handle.logs is None:
            return []
        try:
            self._observe(handle, self._listed(handle))  # the final state of every pod
        except BackendError as e:
            return [f"could not list the pods of {handle.title}: {e}"]
        return handle.logs.finish(list(handle.seen.values()), handle.all_ended)

    def release(self, handle: KubeJob) -> None:
        """Delete the job; with ``keep_jobs`` keep it (unless it failed to start or timed out) and
        delete only its pods still running or pending, so that none keeps holding GPUs."""
        if isinstance(handle, ServingJob):
            return serving.release(self, handle)
        if handle.deleted or not self.config.keep_jobs or handle.stuck or handle.timed_out:
            return self.cancel(handle)
        for pod in handle.seen.values():
            if (pod.get("status") or {}).get("phase") in ("Running", "Pending", None) \
                    and not pod["metadata"].get("deletionTimestamp"):
                self.api.delete(PODS, handle.namespace, pod["metadata"]["name"], "Background")
        self._release(handle)

    def _run_pods(self, handle: KubeJob) -> list[dict]:
        return [p for p in self._informer(handle, PODS).matching(RUN_LABEL, handle.run_id) if _ours(p, handle)]

    def _listed(self, handle: KubeJob) -> list[dict]:
        listing = self.api.list(PODS, handle.namespace, f"{RUN_LABEL}={handle.run_id},{SUBMISSION_LABEL}={handle.token}")
        return (listing or {}).get("items") or []

    def _observe(self, handle: KubeJob, pods: list[dict]) -> list[dict]:
        for pod in pods:
            handle.seen[pod["metadata"].get("uid") or pod["metadata"]["name"]] = pod
            if handle.logs is not None:
                handle.logs.observe(pod)
        return pods

    def cancel(self, handle: KubeJob) -> None:
        """Delete the job; its pods go with it. A failure is logged: the job's deadline still ends it."""
        if isinstance(handle, ServingJob):  # and its server
            return serving.cancel(self, handle)
        if not handle.deleted:
            try:
                self.api.delete(handle.resource, handle.namespace, handle.name, self.config.propagation)
            except BackendError as e:
                log.warning("%s; its activeDeadlineSeconds will stop it", e)
                return
            handle.deleted = True
        self._release(handle)

    def abort(self) -> None:
        """Delete every job in flight with a fresh connection each (the pool may be held by the thread
        the signal interrupted), waiting at most a few seconds: the process exits next."""
        handles = list(self._active.values())
        threads = [threading.Thread(target=self._abort_one, args=(h,), daemon=True) for h in handles if not h.deleted]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 3.0
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _abort_one(self, handle: KubeJob) -> None:
        try:
            api = Api(self.config.model_copy(update={"api_retries": 1, "request_timeout": 2.0}))
            for resource, name in handle.objects():
                api.delete(resource, handle.namespace, name, "Background")
        except Exception:  # noqa: BLE001  best effort; the job's deadline still ends it
            pass

    def telemetry(self, handle: KubeJob) -> PodTelemetry:
        """The job's pods, named after it by every operator (``<job>-…``)."""
        return PodTelemetry(handle.namespace, handle.name.replace(".", "\\.") + "-.*")

    def provenance(self, handle: KubeJob) -> dict[str, Any]:
        """The pods' node, image digest and GPUs, and their node's GPU product, instance type and OS."""
        return pod_provenance(list(handle.seen.values()), handle.main, self._nodes.read)

    def close(self) -> None:
        """Delete jobs still in flight (an interrupted runner), stop the watches, close the connections."""
        with self._lock:
            leftovers, informers = list(self._active.values()), list(self._informers.values())
            self._informers.clear()
        for handle in leftovers:
            self.cancel(handle)
        if self._spec_map is not None and not self.config.keep_jobs:
            specmap.remove(self.api, self.namespace, self._spec_map)
        self._spec_map = None
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
        if handle.logs is not None:
            handle.logs.close()
        for informer in informers:
            names = [handle.name] if informer.resource != PODS else \
                [p["metadata"]["name"] for p in informer.matching(RUN_LABEL, handle.run_id) if _ours(p, handle)]
            informer.forget(names)

    def _notify(self, obj: dict | None) -> None:
        with self._lock:
            if obj is None:
                handles = list(self._active.values())
            else:
                run = ((obj.get("metadata") or {}).get("labels") or {}).get(RUN_LABEL)
                handles = [self._active[run]] if run in self._active else []
        for handle in handles:
            if obj is not None and obj.get("kind") == "Pod" and _ours(obj, handle):
                self._observe(handle, [obj])  # a deleted pod's last state too
            handle.wakeup.set()


#: The folders a job's pods write into: output, result, and the data folder (datasets made on first use).
#: Sticky, as /tmp is: a pod of another user cannot replace the logs the runner writes there.
POD_WRITABLE = 0o1777


def open_to_pods(paths: RunPaths) -> None:
    """Let the job's containers write the run's folders whatever user they run as, as they write an
    ``emptyDir``. The runner (non-root) creates them 0755; a container running as root on an NFS claim
    with ``root_squash`` (the default of EFS, Filestore and NFS provisioners) is "nobody" there, and an
    ``fsGroup`` does not help, since the kubelet does not change the ownership of NFS volumes.
    The data folder is shared by experiments: it is opened only by its owner."""
    for folder in (paths.output, paths.result, paths.data_root):
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
            if folder != paths.data_root or os.stat(folder).st_uid == os.getuid():
                os.chmod(folder, POD_WRITABLE)
        except OSError as e:
            raise StorageError(f"cannot open {folder} to the job's pods: {e.strerror or e}") from e


def _ours(pod: dict, handle: KubeJob) -> bool:
    """Whether a pod belongs to this submission, not to an earlier attempt at the same run."""
    return ((pod.get("metadata") or {}).get("labels") or {}).get(SUBMISSION_LABEL) == handle.token


def _folders(storage: Any, paths: RunPaths) -> tuple[tuple[str, str, bool], ...]:
    """The run's folder and the data folder (workloads make their datasets there on first use) as
    subPaths of the claim."""
    if not storage.isolate:
        return ()
    mount = PurePosixPath(storage.mount_path)
    return tuple((str(path), str(PurePosixPath(path).relative_to(mount)), read_only)
                 for path, read_only in ((paths.run, False), (paths.data_root, False)))


def _on_claim(path: Any, root: Path, mount: PurePosixPath) -> PurePosixPath:
    try:
        relative = Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        raise SpecError(f"{path} is not on the shared storage ({root}, mounted at {mount} in the pods): set "
                        "backend.storage.local_path to where kubebench sees the claim, or move the folder onto it") from None
    return mount.joinpath(*relative.parts)
