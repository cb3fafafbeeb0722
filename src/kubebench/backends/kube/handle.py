"""The seam between the Kubernetes backend and its job kinds: a job kind's driver
(:class:`KindDriver`, the job verbs for that kind), the handle of one run on the cluster
(:class:`KubeJob`, which carries its driver from ``submit`` on), what a driver is given to submit
(:class:`Submission`), and the labels that tie the cluster's objects to their experiment, run and
submission. The backend never looks at a handle's kind: it asks ``handle.driver``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from ...render import kinds
from ..base import JobStatus
from .api import JOBS, Resource
from .disruptions import Sightings
from .kueue import QueueWatch
from .logs import RunLogs
from .podgroup import Gang
from .stuck import Problems
from .timeline import Clock

if TYPE_CHECKING:
    from ...render.job import RenderedJob
    from ...timeline import Boundary
    from .config import KubernetesConfig

EXPERIMENT_LABEL = kinds.LABEL_PREFIX + "experiment"
RUN_LABEL = kinds.LABEL_PREFIX + "run"
#: Annotation telling kubebench's own create from an object of the same name left over earlier.
SUBMISSION_ANNOTATION = "kubebench.io/submission"
#: Label (on the job's pod templates, so on its pods) telling this submission's pods from those of
#: an earlier attempt at the same run (same job name, same run label); the job carries it as annotation.
SUBMISSION_LABEL = SUBMISSION_ANNOTATION


@dataclass(eq=False)
class KubeJob:
    """Handle of a job on the cluster; ``driver``: its kind's, which answers the job verbs for it."""

    driver: KindDriver[Self]
    name: str
    namespace: str
    resource: Resource
    run_id: str
    selector: str
    replicas: int
    token: str = ""
    #: Names of the containers the job's manifest defines (not injected sidecars).
    main: frozenset[str] = frozenset()
    uid: str | None = None
    logs: RunLogs | None = None
    #: Every pod of this submission as last seen, by uid, deleted ones too (their exit codes, nodes,
    #: a DisruptionTarget condition: one an operator created again under its name is another pod).
    seen: dict[str, dict] = field(default_factory=dict)
    #: When each pod was first seen disrupted, or a container of it ended (see :mod:`.disruptions`).
    sightings: Sightings = field(default_factory=Sightings)
    problems: Problems = field(default_factory=Problems)
    #: What its Kueue Workload says while it waits in the queue (see :mod:`.kueue`).
    queue: QueueWatch = field(default_factory=QueueWatch)
    admitted_at: float | None = None
    succeeded: bool = False
    deleted: bool = False
    timed_out: bool = False
    #: Set when the watches report a change of this job or its pods (or on an interrupt).
    wakeup: threading.Event = field(default_factory=threading.Event)
    #: When kubebench saw each moment of the run (its timeline, see :mod:`.timeline`).
    clock: Clock = field(default_factory=Clock)
    #: The run's PodGroup, when its job is gang-scheduled (see :mod:`.podgroup`).
    gang: Gang | None = None
    #: What the run's info should say about it (``gang_warning`` …).
    notes: dict[str, str] = field(default_factory=dict)
    #: The batch Job holding the job's deadline of kubebench's own, when it has one (see :mod:`.keeper`).
    keeper: str | None = None

    @property
    def title(self) -> str:
        """``<Kind> <namespace>/<name>``."""
        return f"{self.resource.kind} {self.namespace}/{self.name}"

    def objects(self) -> list[tuple[Resource, str]]:
        """What the run created on the cluster, in the order it is deleted: here the job (and its keeper)."""
        return [(self.resource, self.name)] + ([(JOBS, self.keeper)] if self.keeper else [])

    @property
    def all_ended(self) -> bool:
        """Whether every container of the job ends by itself now (it succeeded, or was deleted):
        the end of the run waits for all their logs."""
        return self.deleted or self.succeeded

    @property
    def stuck(self) -> bool:
        """Whether the run failed for a pod or job that could not start."""
        return self.problems.stuck

    def owns(self, pod: dict[str, Any]) -> bool:
        """Whether a pod belongs to this submission, not to an earlier attempt at the same run."""
        return ((pod.get("metadata") or {}).get("labels") or {}).get(SUBMISSION_LABEL) == self.token


J = TypeVar("J", bound=KubeJob)


@dataclass(frozen=True)
class Submission:
    """One run's job to create: its manifest (prepared, and marked with the submission's ``token``
    on the object and on its pod templates), the job's name, the run, where its logs go, and the
    experiment's label selector (what the shared watches follow)."""

    manifest: dict[str, Any]
    name: str
    run_id: str
    output: Path
    selector: str
    token: str


class KindDriver(ABC, Generic[J]):
    """The job verbs of one job kind on the cluster, for its handles ``J``.

    What every kind shares (the watches, the log streams, the job object's phase) is in
    :class:`~.driver.ClusterDriver`; a new kind subclasses it and is registered by its manifest
    ``kind`` in ``KubernetesBackend.kinds``.
    """

    @abstractmethod
    def prepare(self, manifest: dict[str, Any], config: KubernetesConfig) -> None:
        """Refuse what this kind cannot do with these options (a SpecError), add what it needs."""

    @abstractmethod
    def objects(self, manifest: dict[str, Any]) -> list[dict[str, Any]]:
        """What submitting ``manifest`` creates (``kubebench render`` prints it)."""

    @abstractmethod
    def resources(self, manifest: dict[str, Any]) -> list[Resource]:
        """The kinds of object a run of ``manifest`` creates and follows (checked before it runs)."""

    @abstractmethod
    def submit(self, submission: Submission) -> J:
        """Create the run's objects (the shared watches started first); its handle."""

    @abstractmethod
    def status(self, handle: J) -> JobStatus:
        """The run's phase, from the watches' cache."""

    @abstractmethod
    def collect(self, handle: J) -> list[str]:
        """Each replica's log into the run's ``output/``; warnings for what could not be read."""

    @abstractmethod
    def release(self, handle: J) -> None:
        """Delete (or, with ``keep_jobs``, keep) what the ended run created, once its logs are in."""

    @abstractmethod
    def cancel(self, handle: J) -> None:
        """Delete everything the run created; safe to call twice."""

    @abstractmethod
    def reclaim(self, job: RenderedJob) -> None:
        """Delete what an earlier attempt at this run left running (``job``: as rendered now)."""

    def pause(self, handle: J, seconds: float) -> float:
        """How long the wait loop may sleep before the next status check (at most ``seconds``)."""
        return seconds

    def timeline(self, handle: J) -> list[Boundary]:
        """The run's moments as the cluster saw them (see :mod:`.timeline`); none by default."""
        return []
