"""When a run's pods cannot start: by pod and class of problem, with the grace each class gets.

A pod that cannot be scheduled, cannot pull its image, crash-loops or cannot get its container
configured fails the run once the problem lasts ``unschedulable_grace``; the kubelet moving between
the reasons of one class (ErrImagePull ↔ ImagePullBackOff) does not reset the clock. Problems that
show no reason of their own are caught too: a container still being created (FailedMount,
Multi-Attach, no IP address) and a job that gets no pods at all (PodSecurity, ResourceQuota, a
webhook, an operator that is not running); their events say why. Capacity being added (a pod asking
for GPUs, or events of the cluster-autoscaler or Karpenter) gets ``scale_up_grace`` instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ...errors import BackendError
from . import status as st
from .api import JOBS

if TYPE_CHECKING:
    from .api import Api
    from .config import KubernetesConfig

#: Event reasons saying that nodes are being added for a pod.
SCALE_UP_EVENTS = frozenset({"TriggeredScaleUp", "Nominated"})
#: Event reasons that explain a pod that does not start, or a job that gets no pods: the kubelet's and
#: scheduler's; the Job controller's ``FailedCreate`` (on a batch Job, a TrainJob's child Job, an MPIJob's
#: launcher Job); training-operator v1's ``FailedCreatePod`` (``control/pod_control.go``); mpi-operator's
#: ``MPIJobFailed`` ("worker pod created failed: …", ``mpi_job_controller.go``).
EXPLAINING_EVENTS = frozenset({"FailedMount", "FailedAttachVolume", "FailedCreatePodSandBox", "FailedCreate",
                               "FailedCreatePod", "MPIJobFailed", "FailedScheduling", "Failed", "BackOff"})
#: The label naming its job on the child Jobs that create a job's pods: a TrainJob's JobSet makes one
#: per replicated job (``<jobset>-<replicatedJob>-<index>``), mpi-operator an MPIJob's launcher Job.
CHILD_JOB_LABELS = {"TrainJob": "jobset.sigs.k8s.io/jobset-name", "MPIJob": "training.kubeflow.org/job-name"}


@dataclass
class Problems:
    """What one run's pods are stuck on: (pod, class) → (first seen, description)."""

    seen: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)
    scaling: set[str] = field(default_factory=set)  # pods capacity is being added for
    explained: dict[str, str] = field(default_factory=dict)  # pod or job uid → what its events say
    stuck: bool = False

    def first(self) -> str:
        """The description of the problem seen first."""
        return min(self.seen.values())[1]


class StuckCheck:
    """Finds stuck pods and jobs without pods (see the module's docstring)."""

    def __init__(self, api: Api, config: KubernetesConfig) -> None:
        self.api, self.config = api, config

    def check(self, problems: Problems, namespace: str, job: dict[str, Any], pods: list[dict[str, Any]],
              admitted_at: float, list_pods: Callable[[], list[dict[str, Any]]], expected: int = 0) -> str | None:
        """The description of a problem that lasted past its grace, else None (``list_pods`` asks
        the API for the pods when the watch shows none: it may only lag behind; ``expected``: how
        many pods the job has once all are made, when fewer are there for a reason, it is said)."""
        self._list_pods, self._expected = list_pods, expected
        now, seen = time.monotonic(), {}
        for pod in pods:
            found = st.problem_class(pod)
            if found:
                name = pod["metadata"]["name"]
                first = problems.seen.get((name, found[0]), (now, ""))[0]
                text = f"pod {name}: {found[1]}" + (f": {found[2]}" if found[2] else "")
                seen[(name, found[0])] = (first, text)
        title = f"{job.get('kind', 'job')} {namespace}/{job['metadata']['name']}"
        if not pods:
            first = problems.seen.get(("", "no pods"), (admitted_at, ""))[0]
            seen[("", "no pods")] = (first, f"{title} has no pods")
        elif len(pods) < expected:  # some made, the others not (yet): explained only by an event saying why
            first = problems.seen.get(("", "missing pods"), (now, ""))[0]
            seen[("", "missing pods")] = (first, f"{title} has {len(pods)} of its {expected} pods")
        problems.seen = seen
        for (pod_name, kind), (first, text) in sorted(seen.items(), key=lambda item: item[1]):
            if now - first >= self._grace(problems, namespace, job, pods, pod_name, kind):
                described = self._explained(problems, namespace, job, pods, pod_name, kind, text)
                if described is None:  # still starting for a reason that mends (a large image being pulled)
                    seen[(pod_name, kind)] = (now, text)
                    continue
                problems.stuck = True
                return described
        return None

    def _grace(self, problems: Problems, namespace: str, job: dict, pods: list[dict], pod_name: str, kind: str) -> float:
        grace = self.config.unschedulable_grace
        if kind != "unschedulable":
            return grace
        pod = next(p for p in pods if p["metadata"]["name"] == pod_name)
        if pod_name not in problems.scaling and (st.requests_gpus(pod) or self._scaling_up(problems, namespace, pod)):
            problems.scaling.add(pod_name)
        return max(grace, self.config.scale_up_grace) if pod_name in problems.scaling else grace

    def _scaling_up(self, problems: Problems, namespace: str, pod: dict) -> bool:
        """Whether events say capacity is being added for the pod (read once, when its grace is up)."""
        uid = pod["metadata"].get("uid", "")
        if uid in problems.explained:
            return False
        events = self.api.events(namespace, uid) if uid else []
        problems.explained[uid] = _describe(events)
        return any(e.get("reason") in SCALE_UP_EVENTS for e in events)

    def _explained(self, problems: Problems, namespace: str, job: dict, pods: list[dict], pod_name: str,
                   kind: str, text: str) -> str | None:
        """What is stuck, with what its events say; None for a container still starting without a
        warning event (its events are read again after another grace)."""
        if kind not in ("starting", "no pods", "missing pods"):
            return text
        if kind == "starting":
            uid = next(p for p in pods if p["metadata"]["name"] == pod_name)["metadata"].get("uid", "")
            why = _describe(self.api.events(namespace, uid) if uid else [])
            return f"{text}: {why}" if why else None
        if kind == "no pods" and self._list_pods() or kind == "missing pods" and len(self._list_pods()) >= self._expected:
            return None  # the watch lagged behind
        why = _describe(self._job_events(namespace, job))
        if kind == "missing pods" and not why:
            return None  # still being made (an MPIJob's launcher waits for its workers): looked at again later
        return f"{text}: {why}" if why else text

    def _job_events(self, namespace: str, job: dict[str, Any]) -> list[dict[str, Any]]:
        """The events of the job and of the child Jobs that make its pods (see ``CHILD_JOB_LABELS``)."""
        uid, name = job["metadata"].get("uid", ""), job["metadata"]["name"]
        events = self.api.events(namespace, uid) if uid else []
        label = CHILD_JOB_LABELS.get(str(job.get("kind")))
        if label is None:
            return events
        try:
            children = self.api.list(JOBS, namespace, f"{label}={name}").get("items") or []
        except BackendError:
            return events  # may not list Jobs: the job's own events are what there is
        for child in children:
            owners = {r.get("uid") for r in child["metadata"].get("ownerReferences") or []}
            if child["metadata"].get("uid") and (uid in owners or job.get("kind") == "TrainJob"):
                events += self.api.events(namespace, child["metadata"]["uid"])
        return events


def _describe(events: list[dict[str, Any]]) -> str:
    """The latest explaining event, as ``Reason: message``."""
    found = [e for e in events if e.get("reason") in EXPLAINING_EVENTS and e.get("type", "Warning") == "Warning"]
    if not found:
        return ""
    latest = max(found, key=lambda e: e.get("lastTimestamp") or e.get("firstTimestamp") or "")
    return f"{latest['reason']}: {' '.join(str(latest.get('message', '')).split())[:300]}"
