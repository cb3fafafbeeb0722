"""A gang-scheduled run's PodGroup: read now and then while its pods wait, it tells a gang that waits
by design (all its pods or none: the run is ``queued``, not stuck) from a job whose operator was not
started with gang scheduling (no PodGroup appears: a warning on the run), and gives the gang's moments
to the timeline.

Upstream: training-operator v1.9.4 names the PodGroup after the job (``scheduling.go``); Volcano's
``phase`` is ``Pending`` (cannot be allocated), ``Inqueue`` (pods may be created), ``Running``
(``minMember`` run), ``Unknown``, ``Completed``, with ``Unschedulable``/``Scheduled`` conditions
(volcano-sh/apis ``pkg/apis/scheduling/v1beta1/types.go``); scheduler-plugins' is ``Pending``,
``Scheduling``, ``Scheduled``, ``Running``, ``Finished``, ``Failed`` with ``scheduleStartTime``
(``apis/scheduling/v1alpha1/types.go``). A gang's pods wait with ``PodScheduled=False/Unschedulable``
(Volcano: "pod group is not ready, …"; coscheduling: "… cannot find enough sibling pods …").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import BackendError
from ...timeline import Boundary
from .api import Resource
from .timeline import SECOND, api_time

if TYPE_CHECKING:
    from ..base import Check
    from .api import Api

VOLCANO = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
COSCHEDULING = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
RESOURCES = {"volcano": VOLCANO, "scheduler-plugins": COSCHEDULING}
#: PodGroup phases of a gang that is placed (its pods may run).
READY_PHASES = frozenset({"Inqueue", "Running", "Scheduled", "Completed", "Finished"})
#: Seconds between two reads of a waiting gang's PodGroup (one GET each); until it appears, fewer.
READ_EVERY, READ_MISSING_EVERY = 5.0, 1.0
#: Seconds after admission without a PodGroup before the run is warned that none was made.
MISSING_GRACE = 30.0
WARNING_KEY = "gang_warning"
#: What a pod waiting for its gang is told by the gang schedulers.
GANG_MESSAGES = ("pod group is not ready", "cannot find enough sibling pods", "PodGroup", "pod group")


@dataclass
class Gang:
    """One run's PodGroup as last read (``scheduler``: ``volcano`` | ``scheduler-plugins``)."""

    scheduler: str
    name: str
    found: dict[str, Any] | None = None
    read_at: float = 0.0
    missing: bool = False
    warning: str = ""
    #: moment (``gang_created``, ``gang_ready``) → (when, resolution, origin).
    moments: dict[str, tuple[float, float, str]] = field(default_factory=dict)

    @property
    def resource(self) -> Resource:
        return RESOURCES[self.scheduler]

    def read(self, api: Api, namespace: str, now: float | None = None) -> dict[str, Any] | None:
        """Read the PodGroup (a failure keeps what was read before)."""
        now = time.monotonic() if now is None else now
        self.read_at = now
        try:
            self.found = api.get(self.resource, namespace, self.name)
        except BackendError:
            return self.found
        self.missing = self.found is None
        if self.found is not None:
            self._note(self.found)
        return self.found

    def _note(self, pg: dict[str, Any]) -> None:
        created = api_time((pg.get("metadata") or {}).get("creationTimestamp"))
        if created is not None:
            self.moments.setdefault("gang_created", (created, SECOND, "PodGroup creationTimestamp"))
        if phase(pg) in READY_PHASES and "gang_ready" not in self.moments:
            ready = [api_time(c.get("lastTransitionTime")) for c in (pg.get("status") or {}).get("conditions") or []
                     if c.get("type") == "Scheduled" and c.get("status") == "True"]
            known = [t for t in ready if t is not None]
            self.moments["gang_ready"] = (known[0], SECOND, "PodGroup Scheduled condition") if known \
                else (time.time(), 1e-6, f"PodGroup read {phase(pg)}")

    def due(self, every: float = READ_EVERY, now: float | None = None) -> bool:
        """Whether it is time to read the PodGroup again (``every`` seconds after the last read)."""
        return (time.monotonic() if now is None else now) - self.read_at >= every

    def boundaries(self) -> list[Boundary]:
        """The gang's moments for the run's timeline."""
        return [Boundary(name, t, "server" if precision >= SECOND else "observed", precision, "", origin)
                for name, (t, precision, origin) in self.moments.items()]


def phase(pg: dict[str, Any] | None) -> str:
    """A PodGroup's phase (empty while its scheduler has not looked at it)."""
    return str(((pg or {}).get("status") or {}).get("phase") or "")


def why(pg: dict[str, Any]) -> str:
    """What a waiting PodGroup says: its Unschedulable condition's message, else its phase."""
    for condition in (pg.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Unschedulable" and condition.get("status") == "True":
            message = " ".join(str(condition.get("message") or condition.get("reason") or "").split())
            return f"{phase(pg) or 'Pending'}: {message[:300]}"
    return phase(pg) or "not yet looked at by its scheduler"


def waiting(pg: dict[str, Any] | None, pods: list[dict[str, Any]], members: int) -> bool:
    """Whether the run's pods are held by their gang: the PodGroup is not placed yet (Volcano creates
    no pod before ``Inqueue``), or some of its pods wait unscheduled with the gang's message."""
    if pg is None:
        return False
    unplaced = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
    if phase(pg) not in READY_PHASES:
        return len(pods) < members or bool(unplaced)
    return any(_held(p) for p in unplaced)


def _held(pod: dict[str, Any]) -> bool:
    return bool(_gang_message(pod))


def _gang_message(pod: dict[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            message = " ".join(str(condition.get("message") or "").split())
            return message[:300] if any(text in message for text in GANG_MESSAGES) else ""
    return ""


def held(pods: list[dict[str, Any]]) -> str:
    """The gang scheduler's message on a pod of the run that waits unscheduled for its group, if any."""
    for pod in pods:
        if not (pod.get("spec") or {}).get("nodeName"):
            found = _gang_message(pod)
            if found:
                return f"pod {pod['metadata']['name']}: {found}"
    return ""


def missing_warning(scheduler: str, name: str) -> str:
    """The run's warning when no PodGroup was made for a job that asks for one."""
    return (f"no PodGroup {name} ({RESOURCES[scheduler].group}) was created: is the operator started with "
            f"--gang-scheduler-name={scheduler} (mpi-operator: --gang-scheduling)? The job ran without gang scheduling")


#: What to install for each gang scheduler, for doctor's message.
INSTALL = {"volcano": "Volcano (https://volcano.sh)", "scheduler-plugins": "scheduler-plugins' coscheduling "
           "(kubernetes-sigs/scheduler-plugins, its PodGroup CRD)"}


def doctor_checks(api: Api, schedulers: list[str]) -> list[Check]:
    """For each gang scheduler the jobs ask for: is its PodGroup CRD served here?"""
    from ..base import Check

    checks = []
    for scheduler in dict.fromkeys(schedulers):
        resource = RESOURCES[scheduler]
        plurals = api.served(resource.group, resource.version)
        served = plurals is not None and resource.plural in plurals
        checks.append(Check(f"gang scheduling ({scheduler})", "ok" if served else "fail",
                            f"PodGroup ({resource.api_version}) served; each run warns if its operator makes none "
                            f"(--gang-scheduler-name={scheduler})" if served else
                            f"PodGroup of {resource.api_version} is not served: install {INSTALL[scheduler]} and start "
                            f"the training operator with --gang-scheduler-name={scheduler}"))
    return checks
