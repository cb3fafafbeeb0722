"""Was the run's first failure the cluster's? A replica that the cluster preempts, evicts, drains or
deletes fails the run as the infrastructure's (retried under ``retries``), and so do its peers'
errors that follow (a rendezvous broken by the vanished peer). A failure of the workload's own
comes first, and the deletions that follow it are the operators' cleanup (a JobSet ending its
child Jobs, ``cleanPodPolicy``, training-operator 1.9.3 deleting every pod).

The order is kubebench's own: when it first saw each pod disrupted, and each container end (the
watch delivers a pod's ``deletionTimestamp`` at the DELETE, long before the peers' errors reach the
kubelet's status). A listing that shows both at once falls back on the pods' own timestamps, which
have whole seconds; a tie is the disruption's (its own SIGTERM, and the peers' errors, end in the
same second).

What counts as disrupted (see :func:`~.status.disrupted`): a ``DisruptionTarget`` condition
(preemption, the Eviction API of a drain, the taint manager, pod GC), a pod reason such as
``Evicted``, or a pod being deleted (``deletionTimestamp``) that kubebench did not delete. A plain
deletion is taken for the cluster's only while no container of the run has ended before it (else it
is an operator's cleanup after that end); the others unless a container failed before them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import status as st
from .timeline import api_time


@dataclass
class Sightings:
    """When kubebench first saw each pod (by uid) disrupted, and a container of it end (monotonic),
    with whether that end was a failure."""

    disrupted: dict[str, float] = field(default_factory=dict)
    ended: dict[str, tuple[float, bool]] = field(default_factory=dict)

    def observe(self, pod: dict[str, Any], main: frozenset[str], now: float | None = None) -> None:
        """Note what ``pod`` shows now; a pod's own end seen with or after its disruption is not noted."""
        now = time.monotonic() if now is None else now
        uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
        if uid not in self.disrupted and st.disrupted(pod) is not None:
            self.disrupted[uid] = now
        if uid not in self.ended and uid not in self.disrupted:
            end = container_end(pod, main)
            if end is not None:
                self.ended[uid] = (now, end[0] != 0)


def cause(pods: list[dict[str, Any]], sightings: Sightings, name_of: Callable[[dict[str, Any]], str] | None = None,
          main: frozenset[str] = frozenset()) -> tuple[str, dict[str, Any]] | None:
    """``(what happened, the pod)`` when the cluster stopped a replica before anything of the
    workload's own ended (see the module's docstring); None otherwise."""
    by_uid = {p["metadata"].get("uid") or p["metadata"]["name"]: p for p in pods}
    for uid, seen in sorted(sightings.disrupted.items(), key=lambda item: (item[1], st.rank(by_uid.get(item[0]) or {}))):
        pod = by_uid.get(uid)
        found = st.disrupted(pod) if pod is not None else None
        if pod is None or found is None:
            continue
        plain = found[1] == st.TERMINATING
        earlier = [(u, t) for u, (t, failed) in sightings.ended.items() if u != uid and (plain or failed) and t <= seen]
        if any(t < seen or not _before(pod, by_uid.get(u), main) for u, t in earlier):
            return None  # the workload's own end came first: what follows is its consequence
        return st.describe_disruption((name_of or st.replica_name)(pod), *found), pod
    return None


def _before(disrupted: dict[str, Any], other: dict[str, Any] | None, main: frozenset[str]) -> bool:
    """Whether ``disrupted`` was stopped no later than ``other``'s container ended (whole seconds;
    seen at the same moment, so told apart by the pods' own times)."""
    if other is None:
        return True
    start, end = disruption_time(disrupted), container_end(other, main)
    return start is None or end is None or end[1] is None or start <= end[1]


def disruption_time(pod: dict[str, Any]) -> float | None:
    """When the cluster began stopping the pod: its ``DisruptionTarget`` condition, else the DELETE
    (``deletionTimestamp`` less ``deletionGracePeriodSeconds``); unix seconds."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            return api_time(condition.get("lastTransitionTime"))
    meta = pod.get("metadata") or {}
    deleted = api_time(meta.get("deletionTimestamp"))
    return None if deleted is None else deleted - float(meta.get("deletionGracePeriodSeconds") or 0)


def container_end(pod: dict[str, Any], main: frozenset[str] = frozenset()) -> tuple[int, float | None] | None:
    """``(exit code, finishedAt in unix seconds)`` of the first of the pod's containers (of ``main``,
    when given) that ended, this instance or a restarted one's; an init container only when it failed."""
    for status in st.container_statuses(pod):
        init = status in ((pod.get("status") or {}).get("initContainerStatuses") or [])
        if main and not init and status.get("name") not in main:
            continue
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            ended = state.get("terminated")
            if ended and "exitCode" in ended and (not init or ended["exitCode"]):
                return int(ended["exitCode"]), api_time(ended.get("finishedAt"))
    return None
