"""The training operator's gang scheduling, as training-operator v1.9.4 does it when started with
``--gang-scheduler-name=volcano`` or ``=scheduler-plugins``: one PodGroup per job, named after it,
before any pod (kubeflow/trainer v1.9.4 ``pkg/controller.v1/common/job.go`` ``ReconcileJobs`` and
``scheduling.go`` ``SyncPodGroup``; ``pkg/controller.v1/control/podgroup_control.go``):

- the PodGroup carries the job's annotations and an owner reference to it; ``minMember`` is
  ``runPolicy.schedulingPolicy.minAvailable``, else every replica; ``queue`` is the policy's, else
  ``default`` (Volcano); ``priorityClassName``, ``scheduleTimeoutSeconds`` (scheduler-plugins) and
  ``minResources`` (the policy's, else the requests of the first ``minMember`` replicas,
  ``calcPGMinResources``) likewise;
- every pod template gets ``schedulerName`` (``volcano``, or the scheduler-plugins scheduler's name)
  unless it sets one, and Volcano's annotations ``scheduling.k8s.io/group-name`` and
  ``volcano.sh/task-spec``, or scheduler-plugins' label ``scheduling.x-k8s.io/pod-group``;
- with Volcano, pods are not created until the PodGroup's phase is set and is not ``Pending``
  (``DelayPodCreationDueToPodGroup``); with scheduler-plugins they are created at once;
- the PodGroup is deleted once the job has ended (event ``JobTerminated``).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import TYPE_CHECKING, Any

from .scheduler import (
    COSCHEDULING_LABEL,
    COSCHEDULING_PODGROUPS,
    VOLCANO_GROUP_ANNOTATION,
    VOLCANO_PODGROUPS,
    requests_of,
)
from .store import ApiError

if TYPE_CHECKING:
    from .standin import OperatorStandIn, Tracked

#: The scheduler-plugins scheduler's name as its Helm chart installs it (the operator's --gang-scheduler-name).
SCHEDULER_PLUGINS = "scheduler-plugins-scheduler"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"


class PodGroupControl:
    """The operator's side of gang scheduling for ``scheduler``: ``volcano`` or ``scheduler-plugins``."""

    def __init__(self, standin: OperatorStandIn, scheduler: str) -> None:
        self.s, self.scheduler = standin, scheduler
        self.key = VOLCANO_PODGROUPS if scheduler == "volcano" else COSCHEDULING_PODGROUPS
        self.made: set[tuple[str, str]] = set()

    @property
    def scheduler_name(self) -> str:
        return "volcano" if self.scheduler == "volcano" else SCHEDULER_PLUGINS

    def sync(self, job: Tracked, replicas: list[tuple[str, int, dict, str]]) -> bool:
        """Create the job's PodGroup if it has none; whether the job's pods may be created now."""
        found = self.s.store.find(self.key, job.namespace, job.name)
        if found is None:
            found = self._create(job, replicas)
        if self.scheduler != "volcano":
            return True
        return (found.get("status") or {}).get("phase") not in (None, "", "Pending")

    def _create(self, job: Tracked, replicas: list[tuple[str, int, dict, str]]) -> dict:
        policy = ((job.obj.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy") or {}
        members = int(policy.get("minAvailable") or len(replicas))
        resources = policy.get("minResources") or _min_resources(replicas, members)
        if self.scheduler == "volcano":
            spec: dict[str, Any] = {"minMember": members, "queue": policy.get("queue") or "default",
                                    "minResources": resources}
            if policy.get("priorityClass"):
                spec["priorityClassName"] = policy["priorityClass"]
        else:
            spec = {"minMember": members, "minResources": resources}
            if policy.get("scheduleTimeoutSeconds") is not None:
                spec["scheduleTimeoutSeconds"] = policy["scheduleTimeoutSeconds"]
        group, version, _ = self.key
        body = {"apiVersion": f"{group}/{version}", "kind": "PodGroup", "spec": spec, "metadata": {
            "name": job.name, "annotations": dict(job.obj["metadata"].get("annotations") or {}),
            "ownerReferences": [{"apiVersion": job.api_version, "kind": job.kind, "name": job.name, "uid": job.uid,
                                 "controller": True, "blockOwnerDeletion": True}]}}
        self.made.add((job.namespace, job.name))
        return self.s.store.create(self.key, job.namespace, body)

    def decorate(self, template: dict, job: Tracked, rtype: str) -> dict:
        """The pod template as the operator decorates it (``DecoratePodTemplateSpec``)."""
        decorated = copy.deepcopy(template)
        spec = decorated.setdefault("spec", {})
        spec.setdefault("schedulerName", self.scheduler_name)
        meta = decorated.setdefault("metadata", {})
        if self.scheduler == "volcano":
            meta.setdefault("annotations", {}).update({VOLCANO_GROUP_ANNOTATION: job.name, TASK_SPEC_ANNOTATION: rtype})
        else:
            meta.setdefault("labels", {})[COSCHEDULING_LABEL] = job.name
        return decorated

    def delete(self, job: Tracked) -> None:
        """The job has ended: its PodGroup goes (a ``JobTerminated`` event on the job)."""
        if (job.namespace, job.name) not in self.made:
            return
        self.made.discard((job.namespace, job.name))
        self.s.event(job, "JobTerminated", "Job has been terminated. Deleting PodGroup", type="Normal")
        try:
            self.s.store.delete(self.key, job.namespace, job.name, "Background")
        except ApiError:
            pass


def _min_resources(replicas: list[tuple[str, int, dict, str]], members: int) -> dict[str, str]:
    """The requests of the first ``members`` replicas (``calcPGMinResources``, in rank order here)."""
    from .kubelet import quantity

    total: Counter = Counter()
    for _, _, template, _ in replicas[:members]:
        total.update(requests_of(template.get("spec") or {}, quantity))
    return {k: str(int(v)) if v == int(v) else str(v) for k, v in total.items()}
