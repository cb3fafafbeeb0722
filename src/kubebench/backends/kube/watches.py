"""The experiment's shared watches and the runs they serve: one :class:`~.informer.Informer` per
namespace, kind of object and experiment (started when the first run needs it), the runs in flight
(by run id: what a change wakes up, and what ``close`` deletes if left behind), and each run's pods
as last seen (every pod of its submission, followed into its log streams as it runs)."""

from __future__ import annotations

import threading
import time
from typing import Any

from ...errors import BackendError
from .api import PODS, Resource
from .cluster import Cluster
from .handle import RUN_LABEL, SUBMISSION_LABEL, KubeJob
from .informer import Informer


class Watches:
    """The watches and runs in flight of one backend (thread-safe)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._lock = threading.RLock()
        self._informers: dict[tuple[str, Resource, str], Informer] = {}
        self._active: dict[str, KubeJob] = {}  # by run id: jobs submitted and not yet released

    def informer(self, handle: KubeJob, resource: Resource) -> Informer:
        """The shared watch of ``resource`` objects of the handle's experiment (started on first use)."""
        key = (handle.namespace, resource, handle.selector)
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = Informer(self.cluster.api, resource, handle.namespace, handle.selector, self.notify)
                self._informers[key] = informer.start()
            return informer

    @staticmethod
    def healthy(*informers: Informer) -> None:
        """A BackendError for a watch refused for good (e.g. not allowed to watch): no point waiting."""
        for informer in informers:
            error = informer.error
            if error is not None:
                raise BackendError(str(error)) from error

    def track(self, handle: KubeJob) -> None:
        """Count the run in flight: from here on its watches wake it, and ``close`` deletes it if left behind."""
        with self._lock:
            self._active[handle.run_id] = handle

    def active(self) -> list[KubeJob]:
        """The runs in flight."""
        with self._lock:
            return list(self._active.values())

    def drop(self, handle: KubeJob, resource: Resource, names: list[str]) -> None:
        """Drop the objects ``names`` from the cache of the handle's ``resource`` watch (if it runs)."""
        with self._lock:
            informer = self._informers.get((handle.namespace, resource, handle.selector))
        if informer is not None:
            informer.forget(names)

    def forget(self, handle: KubeJob) -> None:
        """Done with the run: no longer in flight, its log streams closed, its job and pods dropped
        from the watches' caches (until they report them again)."""
        with self._lock:
            self._active.pop(handle.run_id, None)
            informers = [i for (ns, _, sel), i in self._informers.items() if (ns, sel) == (handle.namespace, handle.selector)]
        if handle.logs is not None:
            handle.logs.close()
        for informer in informers:
            dropped = [handle.name] if informer.resource != PODS else \
                [p["metadata"]["name"] for p in informer.matching(RUN_LABEL, handle.run_id) if handle.owns(p)]
            informer.forget(dropped)

    def pods(self, handle: KubeJob) -> list[dict[str, Any]]:
        """The run's pods as the pods' watch shows them now (observed: see :meth:`observe`)."""
        cached = self.informer(handle, PODS).matching(RUN_LABEL, handle.run_id)
        return self.observe(handle, [p for p in cached if handle.owns(p)])

    def list_pods(self, handle: KubeJob) -> list[dict[str, Any]]:
        """The run's pods as the API lists them now (the watch may lag behind), observed."""
        listing = self.cluster.api.list(PODS, handle.namespace,
                                        f"{RUN_LABEL}={handle.run_id},{SUBMISSION_LABEL}={handle.token}")
        return self.observe(handle, (listing or {}).get("items") or [])

    @staticmethod
    def observe(handle: KubeJob, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Keep each pod as last seen on the handle, and follow its containers' logs as they run."""
        now = time.monotonic()  # a listing shows its pods at one moment
        for pod in pods:
            handle.seen[pod["metadata"].get("uid") or pod["metadata"]["name"]] = pod
            handle.sightings.observe(pod, handle.main, now)
            handle.clock.pod(pod, handle.main)
            if handle.logs is not None:
                handle.logs.observe(pod)
        return pods

    def notify(self, obj: dict | None) -> None:
        """A watch saw ``obj`` change (None: everything may have): wake the runs it concerns."""
        with self._lock:
            if obj is None:
                handles = list(self._active.values())
            else:
                run = ((obj.get("metadata") or {}).get("labels") or {}).get(RUN_LABEL)
                handles = [self._active[run]] if run in self._active else []
        for handle in handles:
            if obj is not None and obj.get("kind") == "Pod" and handle.owns(obj):
                self.observe(handle, [obj])  # a deleted pod's last state too
            elif obj is not None and (obj.get("metadata") or {}).get("uid") == handle.uid:
                handle.clock.job(obj)  # when its queue let it go
            handle.wakeup.set()

    def stop(self) -> None:
        """Stop every watch (a later run starts them again)."""
        with self._lock:
            informers = list(self._informers.values())
            self._informers.clear()
        for informer in informers:
            informer.stop()
