"""The operators' kinds on the cluster (PyTorchJob, TFJob, MPIJob, TrainJob, and a batch/v1 Job):
one job object per run, created as rendered, followed through the experiment's watches of its kind
and of pods, judged by its conditions and its pods (see :meth:`~.driver.ClusterDriver.job_status`),
deleted once its logs are collected (with ``keep_jobs``: kept, its pods still running deleted)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ...errors import BackendError, SpecError
from ...render import gang, kinds
from ..base import JobStatus
from . import keeper, kueue, objects, podgroup, runtimes
from .api import JOBS, PODS, Resource, resource_of
from .config import KubernetesConfig
from .driver import ClusterDriver
from .handle import EXPERIMENT_LABEL, KubeJob, Submission
from .logs import RunLogs

if TYPE_CHECKING:
    from ...render.job import RenderedJob
    from .cluster import Cluster
    from .watches import Watches

log = logging.getLogger("kubebench")


class OperatorJobs(ClusterDriver[KubeJob]):
    """The driver of the kinds that are one job object each."""

    def __init__(self, cluster: Cluster, watches: Watches) -> None:
        super().__init__(cluster, watches)
        #: (namespace, name) of the TrainingRuntimes made for gang-scheduled TrainJobs (see :mod:`.runtimes`).
        self.made_runtimes: set[tuple[str, str]] = set()
        #: Kinds whose jobs Kueue let run without waiting in the queue: why (see :mod:`.kueue`); and
        #: those it held, as it should.
        self.unmanaged: dict[Resource, str] = {}
        self.managed: set[Resource] = set()

    def prepare(self, manifest: dict[str, Any], config: KubernetesConfig) -> None:
        """Kueue manages MPIJobs of ``kubeflow.org/v2beta1`` only."""
        if config.queue and manifest.get("kind") == "MPIJob" and manifest.get("apiVersion") == "kubeflow.org/v1":
            raise SpecError("backend.queue: Kueue manages MPIJobs of kubeflow.org/v2beta1 only "
                            "(mpi-operator); set job.mpi_api_version: kubeflow.org/v2beta1 or drop the queue")

    def objects(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """The job itself."""
        return [manifest]

    def resources(self, manifest: dict[str, Any]) -> list[Resource]:
        """The job's kind (and the TrainingRuntime kubebench makes for a gang-scheduled TrainJob)."""
        return [resource_of(manifest)] + ([runtimes.TRAINING_RUNTIMES] if runtimes.wanted(manifest) else [])

    def remove_runtimes(self) -> None:
        """Delete the TrainingRuntimes made for this experiment's gang-scheduled TrainJobs."""
        for namespace, name in sorted(self.made_runtimes):
            try:
                self.cluster.api.delete(runtimes.TRAINING_RUNTIMES, namespace, name, "Background")
            except BackendError as e:
                log.warning("%s; delete it by hand (kubectl delete trainingruntime %s -n %s)", e, name, namespace)
        self.made_runtimes.clear()

    def submit(self, submission: Submission) -> KubeJob:
        """Create the job object (after starting the watches of its kind and of pods)."""
        manifest = submission.manifest
        groups = kinds.replica_groups(manifest)
        main = frozenset(c.get("name") for g in groups for c in g.template.get("spec", {}).get("containers", [])
                         if c.get("name"))
        handle = KubeJob(self, submission.name, self.cluster.namespace, resource_of(manifest), submission.run_id,
                         submission.selector, sum(g.count for g in groups), submission.token, main)
        self.cluster.check_served(handle.resource)
        scheduler = gang.scheduler_of(manifest)
        if scheduler in podgroup.RESOURCES:
            handle.gang = podgroup.Gang(scheduler, submission.name)  # the operator names it after the job
        handle.logs = RunLogs(self.cluster.api, handle.namespace, submission.output, main)
        self.watches.informer(handle, handle.resource)
        self.watches.informer(handle, PODS)
        self.watches.track(handle)  # from here on, close() deletes it if it is left behind
        try:
            made = runtimes.ensure(self.cluster.api, handle.namespace, manifest,
                                   {EXPERIMENT_LABEL: submission.selector.partition("=")[2]})
            if made is not None:
                self.made_runtimes.add((handle.namespace, made))
            if handle.resource in self.unmanaged:
                raise BackendError(self.unmanaged[handle.resource])
            self._keep(handle, manifest, submission.token)
            handle.clock.submitted = time.time()
            created = objects.create(self.cluster.api, handle.resource, handle.namespace, manifest, submission.token)
            handle.uid = created["metadata"].get("uid")
            handle.clock.job(created)
            self._queued_or_refused(handle, manifest, created)
        except BaseException:
            self._drop_keeper(handle, "Background")  # its job was not made, or is gone
            self.watches.forget(handle)
            raise
        return handle

    def _keep(self, handle: KubeJob, manifest: dict[str, Any], token: str) -> None:
        """Give the job a deadline of kubebench's own where its operator gives it none before it runs
        (see :mod:`.keeper`): its keeper Job first, then the job as its dependent. Best effort: without
        it (not allowed to create Jobs) the runner's timeout still ends the job while it runs."""
        deadline = keeper.seconds(manifest, self.cluster.config)
        if deadline is None:
            return
        body = keeper.keeper(manifest, self.cluster.config, deadline, token)
        try:
            created = objects.create(self.cluster.api, JOBS, handle.namespace, body, token)
        except BackendError as e:
            log.warning("%s: no deadline of kubebench's own (%s): if the runner is killed before its launcher "
                        "starts, delete it by hand", handle.title, e)
            return
        handle.keeper = created["metadata"]["name"]
        keeper.owned_by(manifest, created)

    def _queued_or_refused(self, handle: KubeJob, manifest: dict[str, Any], created: dict[str, Any]) -> None:
        """A job given a queue comes back suspended from Kueue's webhook; one that did not is of a kind
        Kueue does not manage (its integrations): it would run without waiting, so it is deleted and
        the run fails, as every later one of that kind does at once."""
        queue = self.cluster.config.queue
        why = kueue.unmanaged(manifest, created, queue) if queue else None
        if why is None:
            if queue and handle.resource not in self.managed:
                self.managed.add(handle.resource)
                log.info("Kueue manages %s: its job came back suspended, waiting in queue %s", handle.resource.kind, queue)
            return
        self.unmanaged[handle.resource] = why
        self.delete(handle, handle.resource, handle.name)
        handle.deleted = True
        raise BackendError(why)

    def status(self, handle: KubeJob) -> JobStatus:
        """The job's phase from the watch's cache (see ``ClusterDriver.job_status``)."""
        jobs = self.watches.informer(handle, handle.resource)
        self.watches.healthy(jobs, self.watches.informer(handle, PODS))
        return self.job_status(handle, jobs, self.watches.pods(handle))

    def release(self, handle: KubeJob) -> None:
        """Delete the job; with ``keep_jobs`` keep it (unless it failed to start or timed out) and
        delete only its pods still running or pending, so that none keeps holding GPUs."""
        if handle.deleted or not self.cluster.config.keep_jobs or handle.stuck or handle.timed_out:
            return self.cancel(handle)
        self._drop_keeper(handle, "Orphan")  # a kept job outlives its deadline keeper
        for pod in handle.seen.values():
            if (pod.get("status") or {}).get("phase") in ("Running", "Pending", None) \
                    and not pod["metadata"].get("deletionTimestamp"):
                self.cluster.api.delete(PODS, handle.namespace, pod["metadata"]["name"], "Background")
        self.watches.forget(handle)

    def cancel(self, handle: KubeJob) -> None:
        """Delete the job; its pods go with it. A failure is logged: the job's deadline still ends it."""
        if not handle.deleted:
            try:
                self.cluster.api.delete(handle.resource, handle.namespace, handle.name, self.cluster.config.propagation)
            except BackendError as e:
                log.warning("%s; its activeDeadlineSeconds will stop it", e)
                return
            handle.deleted, handle.clock.deleted = True, time.time()
        self._drop_keeper(handle, "Background")
        self.watches.forget(handle)

    def _drop_keeper(self, handle: KubeJob, propagation: str) -> None:
        """Delete the job's deadline keeper (``Orphan``: leaving the job be)."""
        if handle.keeper is not None:
            name, handle.keeper = handle.keeper, None
            try:
                self.cluster.api.delete(JOBS, handle.namespace, name, propagation)
            except BackendError as e:
                log.warning("%s; its TTL deletes it after its deadline", e)

    def reclaim(self, job: RenderedJob) -> None:
        """Delete the job an earlier attempt left running (one that has ended is left to ``submit``),
        and its deadline keeper."""
        self.reclaim_object(resource_of(job.manifest), job.name)
        if keeper.seconds(job.manifest, self.cluster.config) is not None:
            self.reclaim_object(JOBS, keeper.name_of(job.name), job=False)
