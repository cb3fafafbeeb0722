"""The Deployment controller of the stand-in, with the ReplicaSet controller's part folded in.

Sources (kubernetes/kubernetes, 1.31): ``pkg/controller/deployment/sync.go`` (``calculateStatus``,
``syncRolloutStatus``), ``pkg/controller/deployment/util/deployment_util.go`` (``MaxUnavailable``:
25 % of the replicas rounded down by default; the Available and Progressing conditions and their
reasons and messages), ``pkg/controller/replicaset/replica_set.go`` (``manageReplicas``: as many
active pods as replicas, a pod that failed or is being deleted no longer counts and is replaced;
pods named ``<replicaset>-<random>``, the ReplicaSet ``<deployment>-<pod-template-hash>``, and
labelled with ``pod-template-hash``).

Left out (see docs/kubernetes-conformance.md): ReplicaSet objects (the pods' owner is the
Deployment itself, so deleting it still deletes them through the garbage collector), rollouts of a
changed template, ``minReadySeconds``, and the ReplicaFailure condition.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING

from .operators import Controller, condition
from .store import ApiError

if TYPE_CHECKING:
    from .standin import Tracked

DEPLOYMENTS = ("apps", "v1", "deployments")


class DeploymentController(Controller):
    """Keeps a Deployment's replicas running and writes its status (see the module's docstring)."""

    def start(self, job: Tracked) -> None:
        template = (job.obj.get("spec") or {}).get("template") or {}
        digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        job.data["hash"] = "".join(c for c in digest if c in "bcdfghjklmnpqrstvwxz2456789")[:10]
        job.data["progress"] = time.monotonic()
        job.start_time = time.time()
        self.tick(job)

    def tick(self, job: Tracked) -> None:
        spec = job.obj.get("spec") or {}
        wanted = int(spec.get("replicas", 1))
        active = [p for p in self.live(job) if p.phase not in ("Succeeded", "Failed") and p.stage != "terminating"]
        for _ in range(wanted - len(active)):
            self._pod(job, spec.get("template") or {})
        for pod in active[wanted:]:
            self.s.delete_pod(pod)
        self._status(job, wanted, active[:wanted])

    def _pod(self, job: Tracked, template: dict) -> None:
        index = job.data["created"] = job.data.get("created", -1) + 1
        labels = {"pod-template-hash": job.data["hash"]}
        restart = (template.get("spec") or {}).get("restartPolicy") or "Always"
        self.s.create_pod(job, "replica", index, template, {}, restart,
                          f"{job.name}-{job.data['hash']}-{self.s.suffix()}", labels)

    def _status(self, job: Tracked, wanted: int, active: list) -> None:
        ready = sum(self.s.kubelet.pod_ready(p) for p in active)
        minimum = wanted - _max_unavailable(job.obj, wanted)
        replica_set = f"{job.name}-{job.data['hash']}"
        if ready > job.data.get("ready", 0):
            job.data["progress"] = time.monotonic()
        job.data["ready"] = ready
        available = condition("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability.") \
            if ready >= minimum else condition("Available", "False", "MinimumReplicasUnavailable",
                                               "Deployment does not have minimum availability.")
        deadline = float((job.obj.get("spec") or {}).get("progressDeadlineSeconds", 600))
        if ready >= wanted:
            progressing = condition("Progressing", "True", "NewReplicaSetAvailable",
                                    f'ReplicaSet "{replica_set}" has successfully progressed.')
        elif time.monotonic() - job.data["progress"] > deadline:
            progressing = condition("Progressing", "False", "ProgressDeadlineExceeded",
                                    f'ReplicaSet "{replica_set}" has timed out progressing.')
        else:
            progressing = condition("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{replica_set}" is progressing.')
        counts = {"replicas": len(active), "updatedReplicas": len(active), "readyReplicas": ready,
                  "availableReplicas": ready, "unavailableReplicas": max(0, wanted - ready)}
        status = {"observedGeneration": job.obj["metadata"].get("generation", 1),
                  **{k: v for k, v in counts.items() if v},  # omitempty: a count of 0 is not written
                  "conditions": [_keep_time(job, available), _keep_time(job, progressing)]}
        if status == job.data.get("written"):
            return
        job.data["written"] = status
        try:
            self.s.store.update(DEPLOYMENTS, job.namespace, job.name, lambda o: {**o, "status": status}, status=True)
        except ApiError:
            pass  # deleted meanwhile


def _max_unavailable(deployment: dict, replicas: int) -> int:
    """``strategy.rollingUpdate.maxUnavailable`` as a number of pods (default 25 %, rounded down)."""
    strategy = (deployment.get("spec") or {}).get("strategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", "25%")
    if isinstance(value, str) and value.endswith("%"):
        return int(replicas * float(value[:-1]) / 100)
    return int(value)


def _keep_time(job: Tracked, new: dict) -> dict:
    """A condition keeps its lastTransitionTime while its status and reason stay the same."""
    old = job.data.setdefault("conditions", {}).get(new["type"])
    if old and (old["status"], old["reason"]) == (new["status"], new["reason"]):
        return old
    job.data["conditions"][new["type"]] = new
    return new
