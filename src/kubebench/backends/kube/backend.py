"""``backend: kubernetes``: each run is a Kubeflow job (or a batch/v1 Job, or a Serving run's
objects) on a cluster.

kubebench creates the job with the shared-storage claim mounted into every replica, follows it
through one watch per kind and experiment (shared by all its jobs), streams every container's log
into the run's ``output/`` from the moment it runs, fails the run early when a pod cannot be
scheduled or started (or a TrainJob's container fails and is restarted in place), counts the run's
time from its admission (Kueue) and treats a suspension after that as a preemption, and once the
logs are collected deletes the job. The ``kubernetes`` client is imported only when the first job
is submitted.

This module is the backend's face: the experiment's lifecycle hooks (the spec's ConfigMap, the
preflight checks, what a killed runner left, the end) and the job verbs, each of which goes to the
driver of the job's kind (:class:`~.handle.KindDriver`: :class:`~.jobs.OperatorJobs`, or
``kinds[manifest kind]``), carried by the job's handle from ``submit`` on. The cluster connection
(:mod:`.cluster`) and the shared watches (:mod:`.watches`) are the drivers' collaborators.
"""

from __future__ import annotations

import copy
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, KubebenchError
from ...paths import RunPaths
from ...render import gang, kinds, versions
from ...spec.files import spec_files_of
from ..base import Backend, Check, JobStatus, Outcome, PodTelemetry
from . import podgroup, preflight, specmap
from .api import Api, Resource
from .cluster import Cluster
from .clusterinfo import ClusterInfo
from .config import KubernetesConfig
from .handle import EXPERIMENT_LABEL, SUBMISSION_ANNOTATION, SUBMISSION_LABEL, KindDriver, KubeJob, Submission
from .jobs import OperatorJobs
from .prepare import claim_root, job_paths, open_to_pods, prepare, queue
from .provenance import pod_provenance
from .serving import ServingJobs
from .watches import Watches

if TYPE_CHECKING:
    from ...render.job import RenderedJob
    from ...timeline import Boundary


class KubernetesBackend(Backend[KubeJob, KubernetesConfig]):
    """Runs jobs on Kubernetes; its state comes from shared watches, so status checks cost no calls."""

    Config = KubernetesConfig
    # A status check reads the watch's cache, and a change wakes the waiting thread at once.
    poll_first = 0.05
    poll_factor = 2.0
    poll_max = 2.0

    def __init__(self, config: KubernetesConfig) -> None:
        super().__init__(config)
        self.cluster = Cluster(config)
        self.cluster_info = ClusterInfo(lambda: self.cluster.api)
        self.watches = Watches(self.cluster)
        #: The driver of the kinds that are one job object each (PyTorchJob, TFJob, MPIJob, TrainJob, Job).
        self.jobs = OperatorJobs(self.cluster, self.watches)
        #: The driver of every other kind, by the manifest's ``kind``.
        self.kinds: dict[str, KindDriver[Any]] = {"Serving": ServingJobs(self.cluster, self.watches)}
        self._spec_files: dict[str, str] | None = None  # the spec's folder, when this backend ships it
        self._spec_map: str | None = None  # the ConfigMap this runner made of it

    @property
    def namespace(self) -> str:
        """The namespace jobs go to (see ``KubernetesConfig.namespace``)."""
        return self.cluster.namespace

    @property
    def api(self) -> Api:
        """The API client, connected on first use."""
        return self.cluster.api

    def driver_of(self, manifest: dict[str, Any]) -> KindDriver[Any]:
        """The driver of ``manifest``'s kind."""
        return self.kinds.get(str(manifest.get("kind")), self.jobs)

    def resources(self, manifests: list[dict[str, Any]]) -> list[Resource]:
        """The kinds of object jobs like these create, each once."""
        return list(dict.fromkeys(r for m in manifests for r in self.driver_of(m).resources(m)))

    # --- the experiment's lifecycle -------------------------------------------------------------------

    def give_spec(self, spec_file: Path) -> None:
        """Ship the spec's folder to the pods (see :mod:`.specmap`) unless a ConfigMap of it is given."""
        if not self.config.spec_configmap and self.config.ship_spec:
            self._spec_files = spec_files_of(spec_file)  # too big: a SpecError before anything runs

    def check(self, manifests: list[dict[str, Any]]) -> None:
        """The client configured, the API server reachable, the namespace there, every kind served,
        every field the jobs set known to the cluster's Kubernetes version (read here, once), every
        TrainJob's runtime there, and with a queue every kind managed by Kueue."""
        api = preflight.connect(lambda: self.api, self.config)
        if self.cluster.version is None:  # read once: the provenance's Kubernetes version too
            self.cluster_info.server = api.version() or {}
            self.cluster.version = versions.of_server(self.cluster_info.server or None)
        resources = self.resources(manifests)
        preflight.check(api, self.namespace, manifests, resources, self.cluster.version)
        if self.config.queue:
            preflight.check_queue(api, self.config.queue, manifests)
        self.cluster.served(resources)

    def doctor(self, manifests: list[dict[str, Any]], local: RunPaths) -> list[Check]:
        """Cluster, namespace, kinds, permissions, claim (bound, and the same one a pod sees), queue."""
        try:
            api = preflight.connect(lambda: self.api, self.config)
        except KubebenchError as e:
            return [Check("cluster", "fail", str(e))]
        checks = preflight.doctor(api, self.config, self.namespace, manifests, self.resources(manifests),
                                  claim_root(self.config, local), self.config.probe_image,
                                  ships_spec=self._spec_files is not None)
        schedulers = [s for s in (gang.scheduler_of(m) for m in manifests) if s in podgroup.RESOURCES]
        return checks + podgroup.doctor_checks(api, schedulers)

    def begin(self, experiment_id: str) -> None:
        """Make the ConfigMap of the spec's folder that every job pod mounts."""
        if self._spec_files is not None:
            self._spec_map = specmap.ship(self.api, self.namespace, experiment_id, self._spec_files)

    def reclaim(self, leftovers: list[tuple[RenderedJob, RunPaths]]) -> None:
        """Delete the jobs an earlier attempt left running (Foreground: gone once their pods are gone),
        as their kinds' drivers find them."""
        for job, _ in leftovers:
            self.driver_of(job.manifest).reclaim(job)

    def interrupt(self) -> None:
        """Wake every waiting thread so that it cancels its job."""
        super().interrupt()
        self.watches.notify(None)

    def abort(self) -> None:
        """Delete every job in flight with a fresh connection each (the pool may be held by the thread
        the signal interrupted), waiting at most a few seconds: the process exits next."""
        handles = self.watches.active()
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

    def close(self) -> None:
        """Delete jobs still in flight (an interrupted runner), stop the watches, close the connections."""
        for handle in self.watches.active():
            self.cancel(handle)
        if self._spec_map is not None and not self.config.keep_jobs:
            specmap.remove(self.api, self.namespace, self._spec_map)
        if not self.config.keep_jobs:
            self.jobs.remove_runtimes()
        self._spec_map = None
        self.watches.stop()
        self.cluster.close()

    # --- the job verbs: each goes to the driver of the job's kind -----------------------------------

    @property
    def queue_timeout(self) -> float | None:
        return self.config.queue_timeout

    def job_paths(self, local: RunPaths) -> RunPaths:
        """The run's folders inside the pods: the same place on the claim, under its mount path."""
        return job_paths(local, self.config)

    def prepare(self, manifest: dict[str, Any], paths: RunPaths) -> dict[str, Any]:
        """What every pod needs (see :func:`.prepare.prepare`), what the job's kind needs, its queue."""
        config_map = self.config.spec_configmap or (specmap.name_of(paths.experiment_id)
                                                    if self._spec_files is not None else None)
        manifest = prepare(copy.deepcopy(manifest), paths, self.config, self.namespace, config_map,
                           self.cluster.version)
        self.driver_of(manifest).prepare(manifest, self.config)
        queue(manifest, self.config)
        return manifest

    def objects(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """What the job's kind creates on a cluster (a Serving manifest: a Deployment, a Service and a Job)."""
        return self.driver_of(manifest).objects(manifest)

    def submit(self, job: RenderedJob, paths: RunPaths) -> KubeJob:
        """Mark the job as this submission's and have its kind's driver create it."""
        open_to_pods(paths)
        manifest = copy.deepcopy(job.manifest)
        experiment = (manifest["metadata"].get("labels") or {}).get(EXPERIMENT_LABEL)
        if not experiment:
            raise BackendError(f"{job.name}: the manifest has no {EXPERIMENT_LABEL} label")
        token = uuid.uuid4().hex[:16]
        manifest["metadata"].setdefault("annotations", {})[SUBMISSION_ANNOTATION] = token
        kinds.set_template_labels(manifest, {SUBMISSION_LABEL: token})
        submission = Submission(manifest, job.name, job.run_id, Path(paths.output), f"{EXPERIMENT_LABEL}={experiment}",
                                token)
        return self.driver_of(manifest).submit(submission)

    def status(self, handle: KubeJob) -> JobStatus:
        """The job's phase from the watches' cache, as its kind's driver judges it."""
        return handle.driver.status(handle)

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
        """Sleep until the watches report a change of this job or its pods, or ``seconds`` pass (or
        less, as the job's kind says: a server still starting, at most until its startup timeout)."""
        handle.wakeup.wait(handle.driver.pause(handle, seconds))
        handle.wakeup.clear()  # the cache already holds whatever set it: the next check sees it

    def collect(self, handle: KubeJob, paths: RunPaths) -> list[str]:
        """Finish the log streams and name each replica's log ``output/<replica-type>-<index>.log``."""
        return handle.driver.collect(handle)

    def release(self, handle: KubeJob) -> None:
        """Delete what the run created (with ``keep_jobs``: keep the job, delete its pods still running)."""
        handle.driver.release(handle)

    def cancel(self, handle: KubeJob) -> None:
        """Delete what the run created; its pods go with it."""
        handle.driver.cancel(handle)

    def notes(self, handle: KubeJob) -> dict[str, str]:
        """What the run's info should say (``gang_warning``: the job was meant to be gang-scheduled
        and no PodGroup appeared)."""
        return dict(handle.notes)

    def timeline(self, handle: KubeJob) -> list[Boundary]:
        """The run's moments as its kind's driver reads them (see :mod:`.timeline`)."""
        return handle.driver.timeline(handle)

    def telemetry(self, handle: KubeJob) -> PodTelemetry:
        """The job's pods, named after it by every operator (``<job>-…``)."""
        return PodTelemetry(handle.namespace, handle.name.replace(".", "\\.") + "-.*")

    def provenance(self, handle: KubeJob) -> dict[str, Any]:
        """The pods' node, image digest and GPUs, their node's GPU product, instance type and OS, and the
        cluster's Kubernetes and operator versions."""
        return self.cluster_info.provenance(handle.resource, bool(self.config.queue)) | pod_provenance(list(handle.seen.values()), handle.main, self.cluster.nodes.read)
