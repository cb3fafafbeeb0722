"""What the drivers of every job kind on the cluster share (see :class:`~.handle.KindDriver`): the
cluster and its watches, collecting a run's logs, the phase of a job object with its pods (a
Kubeflow job, a TrainJob, a batch Job: the operators' kinds, and a Serving run's load generator),
and deleting what an earlier attempt left running."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from ...errors import BackendError
from ...timeline import Boundary
from ..base import JobStatus
from . import disruptions, objects, podgroup, status as st, timeline
from .api import Resource
from .cluster import Cluster
from .handle import J, KindDriver, KubeJob
from .informer import Informer
from .stuck import StuckCheck
from .watches import Watches

log = logging.getLogger("kubebench")
#: Kinds whose pods the operator restarts in place with no way for kubebench to say otherwise
#: (a TrainJob's JobSet defaults its pods to ``restartPolicy: OnFailure``, six retries): the first
#: failure is the run's.
RESTARTED_IN_PLACE = frozenset({"TrainJob"})
#: Kinds whose operator ends the job when one replica succeeds (the master; a TFJob's worker 0), the
#: others running or not started yet (training-operator v1.9, ``UpdateJobStatus``).
SUCCEEDS_ON_ONE = frozenset({"PyTorchJob", "TFJob", "XGBoostJob"})


class ClusterDriver(KindDriver[J]):
    """A job kind's driver, given the backend's cluster and watches."""

    def __init__(self, cluster: Cluster, watches: Watches) -> None:
        self.cluster, self.watches = cluster, watches

    def collect(self, handle: J) -> list[str]:
        """Finish the log streams and name each replica's log ``output/<replica-type>-<index>.log``."""
        if handle.logs is None:
            return []
        try:
            pods = self.watches.list_pods(handle)  # the final state of every pod
        except BackendError as e:
            return [f"could not list the pods of {handle.title}: {e}"]
        left = handle.succeeded and handle.resource.kind in SUCCEEDS_ON_ONE and st.unfinished(pods, _name_of(handle),
                                                                                                handle.main)
        warnings = handle.logs.finish(list(handle.seen.values()), handle.all_ended)
        return warnings + (self._left_unfinished(handle) if left else [])

    def _left_unfinished(self, handle: J) -> list[str]:
        """A job that succeeded on one replica (a PyTorchJob's master, a TFJob's worker 0) may leave
        others running, or still in an init container, once their logs are read (each stream given
        ``DRAIN_SECONDS`` to end): said on the run, before the job and they are deleted (the pods
        are listed again, after the drain)."""
        try:
            pods = self.watches.list_pods(handle)
        except BackendError:
            return []
        left = st.unfinished(pods, _name_of(handle), handle.main)
        for text in left:
            log.warning("%s: %s", handle.title, text)
        return left

    def timeline(self, handle: J) -> list[Boundary]:
        """The run's moments: what the watches saw, what its pods say, and their events (listed once
        per pod, now that the run is over: one API call each)."""
        name_of, api, namespace = _name_of(handle), self.cluster.api, handle.namespace

        def events(uid: str) -> list[dict[str, Any]]:
            try:
                return api.events(namespace, uid)
            except BackendError as e:
                log.debug("could not list the events of pod %s: %s", uid, e)
                return []

        found = timeline.boundaries(handle.clock, list(handle.seen.values()), events, name_of, handle.main)
        if handle.gang is not None:
            if "gang_ready" not in handle.gang.moments:
                handle.gang.read(self.cluster.api, handle.namespace)
            found += handle.gang.boundaries()
        return found

    def job_status(self, handle: J, jobs: Informer, pods: list[dict[str, Any]]) -> JobStatus:
        """The phase of the job object ``handle`` names, from the watch's cache, with its pods ``pods``:
        queued while suspended before it started, preempted when suspended after; a pod stuck past
        its grace fails it."""
        obj = jobs.get(handle.name)
        if obj is None or obj["metadata"].get("uid") != handle.uid:
            if jobs.deleted(handle.name, handle.uid):
                return JobStatus("failed", None, f"{handle.title} was deleted by someone else")
            return JobStatus("running")  # not in the watch's cache yet
        if st.suspended(obj):
            return self._suspended(handle, obj)
        if handle.admitted_at is None:
            handle.admitted_at = time.monotonic()
            handle.clock.job(obj)
        return self._phase(handle, obj, pods)

    def _suspended(self, handle: J, obj: dict) -> JobStatus:
        handle.clock.job(obj)
        if handle.admitted_at is None:
            return self._queued(handle)
        return JobStatus("failed", None, f"preempted: {handle.title} was suspended after it started "
                                         "(Kueue preemption or eviction); its pods were stopped", infrastructure=True)

    def _queued(self, handle: J) -> JobStatus:
        """Waiting in the queue, with what its Kueue Workload says; failed once the Workload has said
        for ``unschedulable_grace`` that it can never be admitted (see :mod:`.kueue`)."""
        config, watch = self.cluster.config, handle.queue
        if handle.uid:
            watch.update(self.cluster.api, self.cluster.workloads(), handle.namespace, handle.uid)
        if watch.never and watch.stuck_for() >= config.unschedulable_grace:
            return JobStatus("failed", None, f"Kueue cannot admit {handle.title} (queue {config.queue}): {watch.never}")
        return JobStatus("queued", reason=f"waiting in queue {config.queue or '(none)'}" + (f": {watch.why}" if watch.why else ""))

    def _disrupted(self, handle: J) -> JobStatus | None:
        """The run fails as the infrastructure's once the cluster stopped one of its replicas before
        anything of the workload's own ended (see :mod:`.disruptions`); its peers' errors that follow
        are not the workload's. A pod merely deleted may be its operator's doing on suspension:
        the job is read again to tell."""
        found = disruptions.cause(list(handle.seen.values()), handle.sightings, _name_of(handle), handle.main)
        if found is None:
            return None
        text, pod = found
        if st.disrupted(pod) == ("deleted", st.TERMINATING, None):
            latest = self.cluster.api.get(handle.resource, handle.namespace, handle.name)
            if latest is not None and st.suspended(latest):
                return self._suspended(handle, latest)
        return JobStatus("failed", None, f"{text}: the cluster stopped a replica of the running job; an "
                                         "infrastructure failure (its peers' errors that follow are not the workload's)",
                         infrastructure=True)

    def _phase(self, handle: J, obj: dict, pods: list[dict]) -> JobStatus:
        phase, reason = st.job_phase(obj)
        if phase == "succeeded":
            handle.succeeded = True
            return JobStatus("succeeded", 0)
        if phase == "failed":
            return self._failed(handle, reason)
        held = self._gang_holds(handle, pods) if handle.gang is not None else None
        if held is not None:  # waiting for its gang by design: not stuck, and not yet on the run's clock
            handle.problems.seen = {}
            return JobStatus("queued", reason=held)
        disrupted = self._disrupted(handle)
        if disrupted is not None:
            return disrupted
        if handle.resource.kind in RESTARTED_IN_PLACE:
            for pod in sorted(pods, key=st.rank):
                found = st.restarted(pod, handle.main)
                if found:
                    return JobStatus("failed", found[1], f"{found[0]}; the run fails at its first failure")
        stuck = StuckCheck(self.cluster.api, self.cluster.config).check(
            handle.problems, handle.namespace, obj, pods, handle.admitted_at or time.monotonic(),
            lambda: self.watches.list_pods(handle), handle.replicas)
        return JobStatus("failed", None, stuck) if stuck else JobStatus("running")

    def _gang_holds(self, handle: J, pods: list[dict]) -> str | None:
        """Why the run's pods wait for their gang: its PodGroup not placed yet (read every few seconds
        while they wait, every second until it appears), or its pods held with the gang scheduler's
        message; None once they are placed, or when the job has no PodGroup (then noted on the run)."""
        gang = handle.gang
        assert gang is not None
        placed = len(pods) >= handle.replicas and all((p.get("spec") or {}).get("nodeName") for p in pods)
        if placed and podgroup.phase(gang.found) in podgroup.READY_PHASES:
            return None
        if gang.due(podgroup.READ_EVERY if gang.found is not None else podgroup.READ_MISSING_EVERY):
            gang.read(self.cluster.api, handle.namespace)
        held = podgroup.held(pods)
        if gang.found is not None:
            if held or podgroup.waiting(gang.found, pods, handle.replicas):
                return f"waiting for its gang: PodGroup {gang.name} {podgroup.why(gang.found)}"
            return None
        since = time.monotonic() - (handle.admitted_at or time.monotonic())
        if gang.missing and since >= podgroup.MISSING_GRACE and podgroup.WARNING_KEY not in handle.notes:
            handle.notes[podgroup.WARNING_KEY] = podgroup.missing_warning(gang.scheduler, gang.name)
            log.warning("%s: %s", handle.title, handle.notes[podgroup.WARNING_KEY])
        if held:  # the pods say they wait for their group, whose PodGroup kubebench has not read yet
            return f"waiting for its gang: {held}"
        if not pods and since < podgroup.MISSING_GRACE:  # Volcano: no pod before the PodGroup is placed
            return f"waiting for its gang: PodGroup {gang.name} not seen yet"
        return None

    def _failed(self, handle: J, reason: str) -> JobStatus:
        seen = list(handle.seen.values())  # pods an operator deleted still tell how they ended
        text, code = st.failure_reason(reason, seen)
        if code is None:  # the pods' watch may lag behind the job's: ask for the pods once
            self.watches.list_pods(handle)
            seen = list(handle.seen.values())
            text, code = st.failure_reason(reason, seen)
        disrupted = disruptions.cause(seen, handle.sightings, _name_of(handle), handle.main)
        if disrupted:  # the cluster stopped a pod first: the infrastructure failed, not the workload
            return JobStatus("failed", code, f"{disrupted[0]}; job failed: {reason}", infrastructure=True)
        if code is None and handle.problems.seen:
            text = f"{handle.problems.first()}; {text}"
        return JobStatus("failed", code, text)

    def delete(self, handle: J, resource: Resource, name: str) -> None:
        """Delete one object of the run; a failure is logged, with the command that deletes it by hand."""
        try:
            self.cluster.api.delete(resource, handle.namespace, name, self.cluster.config.propagation)
        except BackendError as e:
            log.warning("%s; delete it by hand (kubectl delete %s %s -n %s)", e, resource.kind.lower(), name,
                        handle.namespace)

    def reclaim_object(self, resource: Resource, name: str, job: bool = True) -> None:
        """Delete an object an earlier attempt left behind (Foreground: gone once its pods are gone),
        and wait until it is gone; a ``job`` only while it runs (one that has ended is left to
        ``submit``, which replaces it: its pods write nothing more)."""
        api, namespace = self.cluster.api, self.cluster.namespace
        found = api.get(resource, namespace, name)
        if found is None or job and st.job_phase(found)[0] != "running":
            return
        if api.delete(resource, namespace, name, "Foreground"):
            log.warning("deleted %s %s/%s, left running by an earlier attempt", resource.kind, namespace, name)
            objects.wait_gone(api, resource, namespace, name)


def _name_of(handle: KubeJob) -> Callable[[dict[str, Any]], str]:
    """How the run names a pod's replica (as its logs are named)."""
    return handle.logs.name_of if handle.logs is not None else st.replica_name
