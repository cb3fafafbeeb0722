"""A test-only stand-in for what runs jobs on a cluster: Kubeflow's operators, the Job and JobSet
controllers, the scheduler and the kubelet, on one node.

It subscribes to the emulator's store as a controller's informer would. For each new job it creates
the pods its operator would (names, operator labels, owner references), schedules them on its one
node (no GPUs; the claims must exist), runs every replica as a local process with the environment
the operator would give it (``kubebench.backends.local.plan_launches``, with the claim's mount path
mapped to a local folder), serves their output as pod logs, and writes pod and job status back:
Kubeflow's Created/Running/Succeeded/Failed conditions, a batch Job's Complete/Failed, a TrainJob's
Complete/Failed, with the reasons those controllers give. Deleting a job kills its processes.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import string
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from k8s_emulator import KINDS, PODS, ApiError, Emulator

from kubebench.backends.local import ReplicaLaunch, plan_launches
from kubebench.render.kinds import TRAINER_NODE, pod_templates, replica_groups

JOB_KINDS = ("PyTorchJob", "TFJob", "MPIJob", "TrainJob", "Job")
CLAIMS = ("", "v1", "persistentvolumeclaims")
_UNITS = {"m": 1e-3, "k": 1e3, "Ki": 2**10, "M": 1e6, "Mi": 2**20, "G": 1e9, "Gi": 2**30, "T": 1e12, "Ti": 2**40}


def quantity(text: Any) -> float:
    """A Kubernetes quantity as a number (``500m`` → 0.5, ``2Gi`` → 2147483648)."""
    text = str(text)
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * _UNITS[unit]
    return float(text)


@dataclass
class Node:
    """The one node pods are scheduled on."""

    labels: dict[str, str] = field(default_factory=lambda: {"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux"})
    allocatable: dict[str, str] = field(default_factory=lambda: {"cpu": "64", "memory": "256Gi"})


@dataclass
class Replica:
    """One pod of a job and the process playing its main container."""

    type: str
    index: int
    pod: str
    container: dict[str, Any]
    launch: ReplicaLaunch | None
    state: str = "pending"  # pending | running | succeeded | failed | stuck
    process: subprocess.Popen | None = None
    log: Path | None = None
    ends: float = 0.0  # when a simulated replica ends


@dataclass
class Tracked:
    """A job the stand-in runs."""

    key: tuple[str, str, str]
    namespace: str
    name: str
    kind: str
    api_version: str
    replicas: list[Replica]
    deadline: float | None
    created: float
    finished: float | None = None


class OperatorStandIn:
    """Runs the jobs created in the emulator; ``start()`` and ``stop()`` it around a test."""

    def __init__(self, emulator: Emulator, local_root: Path, workdir: Path, logs: Path,
                 mount_path: str = "/kubebench", simulate: float | None = None) -> None:
        self.emulator, self.store = emulator, emulator.store
        self.local_root, self.workdir, self.logs, self.mount_path = local_root, workdir, logs, mount_path
        self.simulate = simulate
        self.node = Node()
        self.unpullable = ("does-not-exist",)
        self.jobs: dict[tuple[str, str], Tracked] = {}
        self.timings: dict[str, tuple[float, float]] = {}  # job name → (created, finished)
        self.max_active = 0  # most jobs running at once
        self._started: list[subprocess.Popen] = []
        self._events: queue.Queue = queue.Queue()
        self.errors: list[Exception] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="operator-stand-in")

    def start(self) -> "OperatorStandIn":
        """Subscribe to the store and start working."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.store.listeners.append(self._on_event)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop working and kill every process still running."""
        self.store.listeners.remove(self._on_event)
        self._stopped.set()
        self._thread.join(timeout=10)
        for process in self._started:
            _kill(process)

    def processes(self) -> list[subprocess.Popen]:
        """Every process started, ended or not."""
        return list(self._started)

    def _on_event(self, kind: str, key: tuple, obj: dict) -> None:
        if KINDS.get(key) in JOB_KINDS and kind in ("ADDED", "DELETED"):
            self._events.put((kind, key, obj))

    def _loop(self) -> None:
        while not self._stopped.is_set():
            try:
                self._step()
            except ApiError:
                pass  # the job or a pod was deleted while being worked on, as happens on a cluster
            except Exception as e:  # noqa: BLE001  a bug of the stand-in: keep it for the test
                self.errors.append(e)

    def _step(self) -> None:
        try:
            kind, key, obj = self._events.get(timeout=0.01)
            if kind == "ADDED":
                self._start_job(key, obj)
            else:
                job = self.jobs.pop((obj["metadata"]["namespace"], obj["metadata"]["name"]), None)
                if job:
                    self._kill(job)
        except queue.Empty:
            pass
        for job in list(self.jobs.values()):
            if job.finished is None:
                self._tick(job)

    # --- starting a job ---------------------------------------------------------------------

    def _start_job(self, key: tuple, obj: dict) -> None:
        meta, kind = obj["metadata"], obj["kind"]
        deadline = _active_deadline(obj)
        job = Tracked(key, meta["namespace"], meta["name"], kind, obj["apiVersion"], [],
                      time.monotonic() + deadline if deadline else None, time.monotonic())
        self.jobs[(job.namespace, job.name)] = job
        self.max_active = max(self.max_active, sum(j.finished is None for j in self.jobs.values()))
        launches = {launch.name: launch for launch in plan_launches(self._local(obj), self.logs)}
        groups, templates = replica_groups(obj), pod_templates(_copy(obj))
        if kind == "TrainJob":  # one pod template (the runtime patch's) for its one group of nodes
            templates = templates * len(groups)
        for group, template in zip(groups, templates):
            for index in range(group.count):
                launch = launches.get(f"{group.type}-{index}")
                pod = self._pod(obj, job, group.type, index, template, group.template)
                container = pod["spec"]["containers"][0]
                job.replicas.append(Replica(group.type, index, pod["metadata"]["name"], container, launch))
                self.store.create(PODS, job.namespace, pod)
        self._job_status(job, "Running")
        for replica in job.replicas:
            self._schedule(job, replica)

    def _pod(self, obj: dict, job: Tracked, rtype: str, index: int, template: dict, group_template: dict) -> dict:
        spec = _copy(template.get("spec") or {})
        if job.kind == "TrainJob":  # the trainer's container, plus what the runtime patch adds to it
            patch = next((c for c in spec.get("containers", []) if c.get("name") == TRAINER_NODE), {})
            node = {**group_template["spec"]["containers"][0], **{k: v for k, v in patch.items() if k != "name"}}
            spec["containers"] = [node] + [c for c in spec.get("containers", []) if c.get("name") != TRAINER_NODE]
        labels = {**((template.get("metadata") or {}).get("labels") or {}), **_operator_labels(job, rtype, index)}
        owner = {"apiVersion": job.api_version, "kind": job.kind, "name": job.name,
                 "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": _pod_name(job, rtype, index), "labels": labels, "ownerReferences": [owner]},
                "spec": {**spec, "nodeName": self.node.labels["kubernetes.io/hostname"]},
                "status": {"phase": "Pending"}}

    def _schedule(self, job: Tracked, replica: Replica) -> None:
        pod = self.store.get(PODS, job.namespace, replica.pod)
        why = self._unschedulable(job.namespace, pod["spec"])
        if why:
            replica.state = "stuck"
            condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": why}
            return self._pod_status(job, replica, {"phase": "Pending", "conditions": [condition]})
        image = replica.container.get("image", "")
        if any(bad in image for bad in self.unpullable):
            replica.state = "stuck"
            waiting = {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{image}"'}
            return self._pod_status(job, replica, _pod_state("Pending", replica, {"waiting": waiting}))
        self._run(job, replica)

    def _unschedulable(self, namespace: str, spec: dict) -> str | None:
        selector = spec.get("nodeSelector") or {}
        if any(self.node.labels.get(k) != v for k, v in selector.items()):
            return "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
        for container in spec.get("containers", []):
            for resource, amount in ((container.get("resources") or {}).get("requests") or {}).items():
                if quantity(amount) > quantity(self.node.allocatable.get(resource, 0)):
                    return f"0/1 nodes are available: 1 Insufficient {resource}."
        for volume in spec.get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                try:
                    self.store.get(CLAIMS, namespace, claim)
                except ApiError:
                    return f'0/1 nodes are available: persistentvolumeclaim "{claim}" not found.'
        return None

    def _run(self, job: Tracked, replica: Replica) -> None:
        replica.log = self.logs / f"{job.namespace}_{replica.pod}.log"
        replica.state = "running"
        if self.simulate is not None:
            replica.log.write_text(f"{replica.type}-{replica.index} simulated\n")
            replica.ends = time.monotonic() + self.simulate
        elif replica.launch is not None:
            with open(replica.log, "wb") as log:
                replica.process = subprocess.Popen(
                    replica.launch.argv, env={**os.environ, **replica.launch.env}, cwd=self.workdir,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self._started.append(replica.process)
        else:
            replica.log.write_text("")  # an MPI worker: hosts ranks, runs nothing of its own
        self.emulator.logs[(job.namespace, replica.pod)] = replica.log
        self._pod_status(job, replica, _pod_state("Running", replica, {"running": {"startedAt": _now()}}))

    # --- following a job --------------------------------------------------------------------

    def _tick(self, job: Tracked) -> None:
        for replica in job.replicas:
            if replica.state == "running":
                code = self._exit_code(replica)
                if code is not None:
                    replica.state = "succeeded" if code == 0 else "failed"
                    terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": _now()}
                    phase = "Succeeded" if code == 0 else "Failed"
                    self._pod_status(job, replica, _pod_state(phase, replica, {"terminated": terminated}))
        failed = [r for r in job.replicas if r.state == "failed"]
        workers = [r for r in job.replicas if r.launch is not None or self.simulate is not None]
        if failed:
            self._finish(job, "Failed", _failure(job, failed[0]))
        elif job.deadline is not None and time.monotonic() > job.deadline:
            self._finish(job, "Failed", ("DeadlineExceeded", f"{job.kind} {job.name} was active longer than specified deadline"))
        elif workers and all(r.state == "succeeded" for r in workers):
            self._finish(job, "Succeeded", None)

    def _exit_code(self, replica: Replica) -> int | None:
        if self.simulate is not None:
            return 0 if time.monotonic() >= replica.ends else None
        if replica.process is None:
            return None
        code = replica.process.poll()
        return None if code is None else (128 - code if code < 0 else code)

    def _finish(self, job: Tracked, outcome: str, why: tuple[str, str] | None) -> None:
        job.finished = time.monotonic()
        self.timings[job.name] = (job.created, job.finished)
        self._kill(job)  # like cleanPodPolicy None, the pods keep the status they had
        self._job_status(job, outcome, why)

    def _kill(self, job: Tracked) -> None:
        for replica in job.replicas:
            if replica.process:
                _kill(replica.process)

    # --- writing status ---------------------------------------------------------------------

    def _pod_status(self, job: Tracked, replica: Replica, status: dict) -> None:
        self._write(PODS, job.namespace, replica.pod, status)

    def _job_status(self, job: Tracked, phase: str, why: tuple[str, str] | None = None) -> None:
        self._write(job.key, job.namespace, job.name, _job_status(job, phase, why))

    def _write(self, key: tuple, namespace: str, name: str, status: dict) -> None:
        try:
            self.store.update(key, namespace, name, lambda o: {**o, "status": status}, status=True)
        except ApiError:
            pass  # deleted meanwhile

    def _local(self, obj: dict) -> dict:
        """The manifest with the claim's mount path replaced by the local folder (env and commands)."""
        mount, root = self.mount_path.rstrip("/"), str(self.local_root)

        def swap(value: Any) -> Any:
            if isinstance(value, str) and (value == mount or value.startswith(mount + "/")):
                return root + value[len(mount):]
            if isinstance(value, list):
                return [swap(v) for v in value]
            if isinstance(value, dict):
                return {k: swap(v) for k, v in value.items()}
            return value

        return swap(obj)


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    process.wait()


def _copy(obj: Any) -> Any:
    import copy

    return copy.deepcopy(obj)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _suffix() -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=5))


def _active_deadline(obj: dict) -> float | None:
    spec = obj.get("spec") or {}
    return (spec.get("runPolicy") or {}).get("activeDeadlineSeconds") or spec.get("activeDeadlineSeconds")


def _pod_name(job: Tracked, rtype: str, index: int) -> str:
    if job.kind == "Job":
        return f"{job.name}-{index}-{_suffix()}"
    if job.kind == "TrainJob":
        return f"{job.name}-node-0-{index}-{_suffix()}"
    if job.kind == "MPIJob" and job.api_version.endswith("v2beta1") and rtype == "launcher":
        return f"{job.name}-launcher-{_suffix()}"
    return f"{job.name}-{rtype}-{index}"


def _operator_labels(job: Tracked, rtype: str, index: int) -> dict[str, str]:
    if job.kind == "Job":
        return {"batch.kubernetes.io/job-name": job.name, "job-name": job.name,
                "batch.kubernetes.io/job-completion-index": str(index)}
    if job.kind == "TrainJob":
        return {"jobset.sigs.k8s.io/jobset-name": job.name, "jobset.sigs.k8s.io/replicatedjob-name": TRAINER_NODE,
                "jobset.sigs.k8s.io/job-index": "0", "batch.kubernetes.io/job-completion-index": str(index)}
    labels = {"training.kubeflow.org/job-name": job.name, "training.kubeflow.org/replica-index": str(index)}
    if job.kind == "MPIJob" and job.api_version.endswith("v2beta1"):
        return {**labels, "training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/job-role": rtype}
    labels |= {"training.kubeflow.org/operator-name": f"{job.kind.lower()}-controller",
               "training.kubeflow.org/replica-type": rtype}
    return labels | ({"training.kubeflow.org/job-role": "master"} if rtype == "master" else {})


def _pod_state(phase: str, replica: Replica, state: dict) -> dict:
    status = {"name": replica.container.get("name", "main"), "image": replica.container.get("image", ""),
              "ready": "running" in state, "restartCount": 0, "state": state}
    return {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}], "containerStatuses": [status]}


def _failure(job: Tracked, replica: Replica) -> tuple[str, str]:
    if job.kind == "Job":
        return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    if job.kind == "TrainJob":
        return "FailedJobs", f"jobset {job.name} failed: job {job.name}-node-0 failed"
    return f"{job.kind}Failed", f"{job.kind} {job.namespace}/{job.name} is failed because 1 {replica.type.capitalize()} replica(s) failed."


def _job_status(job: Tracked, phase: str, why: tuple[str, str] | None) -> dict:
    now = _now()
    if job.kind in ("Job", "TrainJob"):
        conditions = []
        if phase == "Succeeded":
            conditions = [{"type": "Complete", "status": "True", "reason": "CompletionsReached",
                           "message": "Reached expected number of succeeded pods", "lastTransitionTime": now}]
        elif phase == "Failed":
            conditions = [{"type": "Failed", "status": "True", "reason": why[0], "message": why[1], "lastTransitionTime": now}]
        return {"startTime": now, "conditions": conditions, **({"completionTime": now} if phase == "Succeeded" else {})}
    conditions = [{"type": "Created", "status": "True", "reason": f"{job.kind}Created", "lastTransitionTime": now},
                  {"type": "Running", "status": "True" if phase == "Running" else "False", "reason": f"{job.kind}Running",
                   "lastTransitionTime": now}]
    if phase == "Succeeded":
        conditions.append({"type": "Succeeded", "status": "True", "reason": f"{job.kind}Succeeded",
                           "message": f"{job.kind} {job.namespace}/{job.name} successfully completed.", "lastTransitionTime": now})
    elif phase == "Failed":
        conditions.append({"type": "Failed", "status": "True", "reason": why[0], "message": why[1], "lastTransitionTime": now})
    active = {r.type.capitalize(): {"active": sum(x.type == r.type and x.state == "running" for x in job.replicas)}
              for r in job.replicas}
    return {"startTime": now, "conditions": conditions, "replicaStatuses": active,
            **({"completionTime": now} if phase == "Succeeded" else {})}
