"""The handle of a job on the cluster, as the Kubernetes backend returns it from ``submit``."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .api import Resource
from .logs import RunLogs
from .stuck import Problems


@dataclass(eq=False)
class KubeJob:
    """Handle of a job on the cluster."""

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
    problems: Problems = field(default_factory=Problems)
    admitted_at: float | None = None
    succeeded: bool = False
    deleted: bool = False
    timed_out: bool = False
    #: Set when the watches report a change of this job or its pods (or on an interrupt).
    wakeup: threading.Event = field(default_factory=threading.Event)

    @property
    def title(self) -> str:
        """``<Kind> <namespace>/<name>``."""
        return f"{self.resource.kind} {self.namespace}/{self.name}"

    def objects(self) -> list[tuple[Resource, str]]:
        """What the run created on the cluster, in the order it is deleted: here the job."""
        return [(self.resource, self.name)]

    @property
    def all_ended(self) -> bool:
        """Whether every container of the job ends by itself now (it succeeded, or was deleted):
        the end of the run waits for all their logs."""
        return self.deleted or self.succeeded

    @property
    def stuck(self) -> bool:
        """Whether the run failed for a pod or job that could not start."""
        return self.problems.stuck
