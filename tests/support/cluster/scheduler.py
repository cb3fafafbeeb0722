"""The stand-in cluster's schedulers: the default scheduler, placing one pod at a time on nodes of
finite capacity, and the gang schedulers (Volcano, scheduler-plugins' coscheduling) that place a
PodGroup's pods all together or none; plus the latencies a test injects (:class:`Delays`).

- capacity: each node's ``allocatable`` less the requests of the pods bound to it that have not
  ended (a pod's request is the sum of its containers', or its largest init container's if more:
  ``pkg/api/v1/resource``); a pod that fits no node gets ``PodScheduled=False/Unschedulable`` with
  the default scheduler's message, ``0/<n> nodes are available: <count> Insufficient <resource>.``
  (``pkg/scheduler/framework/types.go``, ``FitError.Error``); pods are taken in the order they were
  created, each bound before the next is tried (``schedule_one.go``);
- Volcano (``schedulerName: volcano``, annotation ``scheduling.k8s.io/group-name``): a PodGroup
  whose phase is empty becomes ``Pending``, then ``Inqueue`` once its ``minResources`` fit the free
  capacity (the enqueue action; Inqueue groups not yet bound are counted as taken), and ``Running``
  once ``minMember`` of its pods run; its pods are bound only when ``minMember`` of them are there and
  fit at once, otherwise each gets the gang's message (volcano-sh/volcano
  ``pkg/scheduler/api/job_info.go``: ``pod group is not ready, 4 Pending, 4 minAvailable; Pending:
  4 Unschedulable``) and the group an ``Unschedulable`` condition (reason ``NotEnoughResources``);
- coscheduling (label ``scheduling.x-k8s.io/pod-group``, a ``schedulerName`` the stand-in serves):
  the same all-or-nothing placement, with the plugin's PreFilter message while the group has fewer
  than ``minMember`` pods (``pkg/coscheduling/core/core.go``) and ``scheduleStartTime`` on the group.

A pod whose ``schedulerName`` no scheduler of the stand-in serves stays Pending without a condition,
as it does on a cluster.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .store import ApiError

if TYPE_CHECKING:
    from .kubelet import Kubelet, Node, PodSim

VOLCANO_PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")
COSCHEDULING_PODGROUPS = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_SCHEDULER = "default-scheduler"


@dataclass
class Delays:
    """Latencies of the stand-in cluster a test sets (seconds): the scheduler binding a pod after its
    creation, the kubelet pulling an image its node does not have yet, and creating and starting a
    container once its image is there."""

    schedule: float = 0.0
    pull: float = 0.0
    start: float = 0.0


def micro_now() -> str:
    """Now as a ``metav1.MicroTime`` (RFC 3339 with microseconds), as events.k8s.io recorders write it."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def requests_of(spec: dict[str, Any], quantity) -> dict[str, float]:
    """What a pod asks for: its containers' requests (limits where a request is not given), or its
    largest init container's where that is more."""
    def amounts(container: dict[str, Any]) -> dict[str, float]:
        resources = container.get("resources") or {}
        given = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        return {k: quantity(v) for k, v in given.items()}

    total: Counter = Counter()
    for container in spec.get("containers") or []:
        total.update(amounts(container))
    for container in spec.get("initContainers") or []:
        for k, v in amounts(container).items():
            total[k] = max(total[k], v)
    return dict(total)


class Scheduler:
    """Places the stand-in's pods on its nodes (see the module's docstring)."""

    def __init__(self, kubelet: Kubelet) -> None:
        self.k = kubelet
        #: Gang schedulers the stand-in runs, by the ``schedulerName`` their pods carry.
        self.gang: dict[str, str] = {}  # schedulerName → "volcano" | "coscheduling"

    # --- capacity ------------------------------------------------------------------------------

    def used(self, node: Node) -> Counter:
        taken: Counter = Counter()
        for pod in self.k.s.pods.values():
            if pod.node == node.name and pod.stage != "gone" and pod.phase not in ("Succeeded", "Failed"):
                taken.update(pod.requests)
        return taken

    def _free(self) -> dict[str, Counter]:
        free = {}
        for node in self.k.nodes:
            left = Counter({k: self.k.quantity(v) for k, v in node.allocatable.items()})
            left.subtract(self.used(node))
            free[node.name] = left
        return free

    def _reasons(self, pod: PodSim, free: dict[str, Counter]) -> tuple[Node | None, Counter]:
        reasons: Counter = Counter()
        for node in self.k.nodes:
            if any(node.labels.get(k) != str(v) for k, v in (pod.spec.get("nodeSelector") or {}).items()):
                reasons["node(s) didn't match Pod's node affinity/selector"] += 1
                continue
            short = sorted(r for r, amount in pod.requests.items() if amount > free[node.name].get(r, 0.0) + 1e-9)
            if short:
                reasons.update(f"Insufficient {r}" for r in short)
                continue
            return node, reasons
        return None, reasons

    def why(self, pod: PodSim, free: dict[str, Counter] | None = None) -> str | None:
        """The default scheduler's message when the pod fits no node now; None when it fits one."""
        node, reasons = self._reasons(pod, free if free is not None else self._free())
        if node is not None:
            return None
        counts = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
        return f"0/{len(self.k.nodes)} nodes are available: {counts}."

    # --- placing -------------------------------------------------------------------------------

    def schedule(self, pod: PodSim) -> str | None:
        """Try to bind ``pod`` now: ``"bound"``, ``"wait"`` (its scheduler has not got to it: the
        injected delay, or no scheduler serves it), or the message of why it fits nowhere."""
        if time.monotonic() - pod.since < self.k.delays.schedule:
            return "wait"
        name = pod.spec.get("schedulerName") or DEFAULT_SCHEDULER
        if name in self.gang:
            return self._gang(pod, name)
        if name != DEFAULT_SCHEDULER:
            return "wait"
        free = self._free()
        node, _ = self._reasons(pod, free)
        if node is None:
            return self.why(pod, free)
        self.k.bind(pod, node, DEFAULT_SCHEDULER)
        return "bound"

    def _group(self, pod: PodSim) -> tuple[tuple[str, str, str], str] | None:
        labels, notes = pod.labels, pod.annotations
        if self.gang.get(pod.spec.get("schedulerName") or "") == "volcano" and VOLCANO_GROUP_ANNOTATION in notes:
            return VOLCANO_PODGROUPS, notes[VOLCANO_GROUP_ANNOTATION]
        if COSCHEDULING_LABEL in labels:
            return COSCHEDULING_PODGROUPS, labels[COSCHEDULING_LABEL]
        return None

    def _gang(self, pod: PodSim, scheduler: str) -> str:
        found = self._group(pod)
        if found is None:
            return "wait"
        key, group = found
        pg = self.k.s.store.find(key, pod.job.namespace, group)
        if pg is None:
            return "wait"  # the scheduler waits for the group its pods name
        members = [p for p in self.k.s.pods.values() if p.job.namespace == pod.job.namespace
                   and p.stage != "gone" and self._group(p) == found]
        waiting = [p for p in members if p.stage == "scheduling"]
        bound = len(members) - len(waiting)
        need = int((pg.get("spec") or {}).get("minMember") or 1)
        if key == VOLCANO_PODGROUPS and (pg.get("status") or {}).get("phase") in (None, "", "Pending"):
            return "wait"  # not Inqueue yet: the enqueue action has not admitted the group
        if bound + len(waiting) < need:
            if key == COSCHEDULING_PODGROUPS:
                return (f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                        f"{bound + len(waiting)}, minMember of group: {need}")
            return self._not_ready(key, pg, waiting, need, "Pending")
        placed = self._place_all(waiting)
        if placed is None:
            return self._not_ready(key, pg, waiting, need, "Unschedulable")
        for member, node in placed:
            self.k.bind(member, node, scheduler)
        self._group_status(key, pg, scheduled=True)
        return "bound"

    def _place_all(self, pods: list[PodSim]) -> list[tuple[PodSim, Node]] | None:
        free, placed = self._free(), []
        for pod in pods:
            node, _ = self._reasons(pod, free)
            if node is None:
                return None
            free[node.name].subtract(pod.requests)
            placed.append((pod, node))
        return placed

    def _not_ready(self, key: tuple[str, str, str], pg: dict, waiting: list[PodSim], need: int, state: str) -> str:
        message = (f"{len(waiting)}/{len(waiting)} tasks in gang unschedulable: pod group is not ready, "
                   f"{len(waiting)} Pending, {need} minAvailable; Pending: {len(waiting)} {state}")
        self._group_status(key, pg, scheduled=False, message=message)
        return message.split(": ", 1)[1] if key == VOLCANO_PODGROUPS else message

    def _group_status(self, key: tuple[str, str, str], pg: dict, scheduled: bool, message: str = "") -> None:
        status = dict(pg.get("status") or {})
        if key == COSCHEDULING_PODGROUPS:
            status.setdefault("scheduleStartTime", _now())
            status["phase"] = "Scheduled" if scheduled else "Scheduling"
        else:
            kind, reason = ("Scheduled", "tasks in gang are ready to be scheduled") if scheduled \
                else ("Unschedulable", "NotEnoughResources")
            old = next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)
            if old is not None and old.get("message", "") == message:
                return
            condition = {"type": kind, "status": "True", "reason": reason, "message": message,
                         "transitionID": pg["metadata"]["uid"], "lastTransitionTime": _now()}
            status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != kind] + [condition]
        self._write(key, pg, status)

    def _write(self, key: tuple[str, str, str], pg: dict, status: dict) -> None:
        if status == pg.get("status"):
            return
        try:
            self.k.s.store.update(key, pg["metadata"]["namespace"], pg["metadata"]["name"],
                                  lambda o: {**o, "status": status}, status=True)
        except ApiError:
            pass  # deleted meanwhile

    # --- Volcano's controller of PodGroups ------------------------------------------------------

    def tick(self) -> None:
        """Volcano's enqueue: Pending groups become Inqueue once their ``minResources`` fit what is
        free (less what Inqueue groups not yet running will take); Running once ``minMember`` run."""
        if "volcano" not in self.gang.values():
            return
        free = Counter()
        for left in self._free().values():
            free.update({k: v for k, v in left.items() if v > 0})
        for pg in sorted(self._groups(), key=lambda g: g["metadata"]["creationTimestamp"]):
            status, spec = pg.get("status") or {}, pg.get("spec") or {}
            phase = status.get("phase") or ""
            running = self._running(pg)
            if phase in ("Inqueue", "Running") and running >= int(spec.get("minMember") or 1):
                self._write(VOLCANO_PODGROUPS, pg, {**status, "phase": "Running", "running": running})
                continue
            want = {k: self.k.quantity(v) for k, v in (spec.get("minResources") or {}).items()}
            if phase == "Inqueue":
                free.subtract({k: v for k, v in want.items() if running == 0})
            elif phase in ("", "Pending"):
                if all(free.get(k, 0.0) + 1e-9 >= v for k, v in want.items()):
                    free.subtract(want)
                    self._write(VOLCANO_PODGROUPS, pg, {**status, "phase": "Inqueue"})
                elif phase == "":
                    self._write(VOLCANO_PODGROUPS, pg, {**status, "phase": "Pending"})

    def _groups(self) -> list[dict]:
        with self.k.s.store.cond:
            return [o for (k, _, _), o in self.k.s.store.objects.items() if k == VOLCANO_PODGROUPS]

    def _running(self, pg: dict) -> int:
        name, namespace = pg["metadata"]["name"], pg["metadata"]["namespace"]
        return sum(1 for p in self.k.s.pods.values() if p.job.namespace == namespace and p.phase == "Running"
                   and p.annotations.get(VOLCANO_GROUP_ANNOTATION) == name)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
