"""Kueue, as the stand-in plays it: one ClusterQueue of ``capacity`` workloads behind every LocalQueue.

Its webhook creates every job that names a queue (label ``kueue.x-k8s.io/queue-name``) suspended,
for the kinds Kueue manages (batch/v1 Job, Kubeflow v1 PyTorchJob/TFJob/JAXJob/XGBoostJob, MPIJob **v2beta1** only,
TrainJob); it admits suspended jobs in creation order while the quota allows (``suspend: false``);
``preempt`` suspends an admitted job again, as preemption or a ``waitForPodsReady`` eviction does, and
the job goes back to the queue. Sources: kueue ``pkg/controller/jobs/*`` (``IsSuspended`` / ``Suspend``
per integration; the MPIJob integration is ``kubeflow.org/v2beta1``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .store import Key

if TYPE_CHECKING:
    from .standin import OperatorStandIn, Tracked

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MANAGED = {("batch", "v1", "jobs"), ("kubeflow.org", "v1", "pytorchjobs"), ("kubeflow.org", "v1", "tfjobs"),
           ("kubeflow.org", "v1", "jaxjobs"), ("kubeflow.org", "v1", "xgboostjobs"),
           ("kubeflow.org", "v2beta1", "mpijobs"), ("trainer.kubeflow.org", "v1alpha1", "trainjobs")}


def _in_run_policy(key: Key) -> bool:
    return key[0] == "kubeflow.org"


class Kueue:
    """Admission in creation order up to ``capacity`` jobs at once (see the module's docstring)."""

    def __init__(self, capacity: int = 1) -> None:
        self.capacity = capacity
        self.admitted: set[tuple[str, str]] = set()
        self.held: set[tuple[str, str]] = set()  # not admitted again until released (a test's preemption)
        self.admissions: dict[str, int] = {}  # job name → how many times admitted
        self._lock = threading.Lock()

    def webhook(self, key: Key, obj: dict) -> dict:
        """Create a job that names a queue suspended."""
        if key in MANAGED and ((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
            spec = obj.setdefault("spec", {})
            (spec.setdefault("runPolicy", {}) if _in_run_policy(key) else spec)["suspend"] = True
        return obj

    def tick(self, standin: "OperatorStandIn") -> None:
        """Free the quota of finished jobs, then admit the oldest waiting ones while it allows."""
        with self._lock:
            queued = [j for j in standin.jobs.values() if QUEUE_LABEL in (j.obj["metadata"].get("labels") or {})
                      and j.key in MANAGED]
            self.admitted &= {(j.namespace, j.name) for j in queued if j.finished is None}
            for job in sorted(queued, key=lambda j: j.created):
                if len(self.admitted) >= self.capacity:
                    break
                name = (job.namespace, job.name)
                if job.finished is None and name not in self.admitted and name not in self.held:
                    self.admitted.add(name)
                    self.admissions[job.name] = self.admissions.get(job.name, 0) + 1
                    standin.set_suspend(job, False)

    def preempt(self, standin: "OperatorStandIn", job: "Tracked", hold: bool = False) -> None:
        """Suspend an admitted job again; with ``hold`` it is not admitted again until ``release``."""
        with self._lock:
            self.admitted.discard((job.namespace, job.name))
            if hold:
                self.held.add((job.namespace, job.name))
        standin.set_suspend(job, True)

    def release(self, job: "Tracked") -> None:
        """Let a held job be admitted again."""
        with self._lock:
            self.held.discard((job.namespace, job.name))
