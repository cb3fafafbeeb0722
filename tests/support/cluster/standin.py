"""A test-only stand-in for what runs jobs on a cluster: Kubeflow's operators, the Job and JobSet
controllers, Kueue, the scheduler and the kubelet, on one node.

It subscribes to the emulator's store as a controller's informer would and follows the operators,
not kubebench: each kind's controller (:mod:`.operators`, :mod:`.trainer`) creates the pods its operator would
(names, labels, owner references, the environment that operator injects and nothing more), reacts
to failures, deadlines and suspension as that operator does at the version chosen
(``training_operator`` 1.9.3 / 1.9.4, ``trainer`` 2.1 … 2.3), and writes the job's status with its
conditions and reasons. The kubelet (:mod:`.kubelet`) runs each container as a local process with
the claim's mount path mapped to a local folder, serves its log through the emulator, restarts it
under ``restartPolicy: OnFailure``, and stops it when its pod is deleted (graceful deletion).
Kueue (:mod:`.kueue`) is there when ``kueue`` is given. Deployments have their controller
(:mod:`.apps`), and pods and Services their network (:mod:`.network`: pod IPs, ClusterIPs,
kube-proxy, DNS).
"""

from __future__ import annotations

import copy
import os
import queue
import random
import socket
import string
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .apps import DeploymentController
from .emulator import KINDS, PODS, ApiError, ContainerLog, Emulator
from .gang import PodGroupControl
from .kubelet import SSHD, Box, Kubelet, PodSim, local_argv, path_of
from .kueue import Kueue
from .network import Network
from .operators import INIT_PYTORCH, INIT_TRIES, JobController, MpiOperator, TrainingOperator
from .scheduler import requests_of
from .trainer import TrainerController

JOB_KINDS = ("PyTorchJob", "TFJob", "JAXJob", "XGBoostJob", "MPIJob", "TrainJob", "Job")
#: The Kubeflow v1 kinds: their suspend and status live under runPolicy and replicaStatuses.
KUBEFLOW_V1 = ("PyTorchJob", "TFJob", "JAXJob", "XGBoostJob", "MPIJob")
#: What the stand-in's controllers follow: the job kinds and Deployments.
WORKLOAD_KINDS = (*JOB_KINDS, "Deployment")
CLAIMS = ("", "v1", "persistentvolumeclaims")
__all__ = ["CLAIMS", "JOB_KINDS", "KUBEFLOW_V1", "OperatorStandIn", "Tracked", "quantity"]
from .kubelet import quantity  # noqa: E402  (re-exported)


@dataclass
class Tracked:
    """A job the stand-in runs."""

    key: tuple[str, str, str]
    namespace: str
    name: str
    kind: str
    api_version: str
    uid: str
    obj: dict[str, Any]
    created: float = field(default_factory=time.monotonic)
    created_wall: float = 0.0
    start_time: float | None = None  # status.startTime (epoch seconds)
    conditions: list[dict] = field(default_factory=list)
    pods: list[PodSim] = field(default_factory=list)
    finished: float | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def replicas(self) -> list[PodSim]:
        """The job's pods that still exist."""
        return [p for p in self.pods if p.stage != "gone"]


class OperatorStandIn:
    """Runs the jobs created in the emulator; ``start()`` and ``stop()`` it around a test."""

    def __init__(self, emulator: Emulator, local_root: Path, workdir: Path, logs: Path, mount_path: str = "/kubebench",
                 simulate: float | None = None, training_operator: str = "1.9.4", trainer: str = "2.3",
                 kueue: Kueue | None = None, gang_scheduler: str | None = None) -> None:
        self.emulator, self.store = emulator, emulator.store
        self.local_root, self.workdir, self.logs, self.mount_path = local_root, workdir, logs, mount_path
        self.simulate = simulate
        self.host = "127.0.0.1"  # every pod's DNS name resolves to the one node
        self.network = Network(self.store, logs)
        self.kubelet = Kubelet(self)
        self.node = self.kubelet.node
        self.kueue = kueue
        #: The training operator started with ``--gang-scheduler-name`` (``volcano`` | ``scheduler-plugins``),
        #: and that gang scheduler running (:mod:`.gang`, :mod:`.scheduler`); None: no gang scheduling.
        self.podgroups = PodGroupControl(self, gang_scheduler) if gang_scheduler else None
        if self.podgroups is not None:
            self.kubelet.scheduler.gang[self.podgroups.scheduler_name] = (
                "volcano" if gang_scheduler == "volcano" else "coscheduling")
        #: Seconds between two pods the training operator creates for one job (0: all at once): an
        #: operator whose work queue is busy (kubeflow/trainer#1407), so jobs started together interleave.
        self.pod_interval = 0.0
        self.refuse_pods: str | None = None  # a reason every pod create is refused (PodSecurity …)
        #: init-pytorch's lookups of the master (see ``waiter``): every 2 s on a cluster, here quicker.
        self.init_period, self.dns_delay = 0.5, 0.25
        #: A container a mutating webhook adds first to every pod (a service mesh's proxy).
        self.inject_sidecar: dict | None = None
        v1 = TrainingOperator(self, training_operator)
        self.trainer = TrainerController(self, trainer)
        self.controllers = {"PyTorchJob": v1, "TFJob": v1, "JAXJob": v1, "XGBoostJob": v1, "MPIJob/kubeflow.org/v1": v1,
                            "Job": JobController(self), "TrainJob": self.trainer, "MPIJob": MpiOperator(self),
                            "Deployment": DeploymentController(self)}
        self.jobs: dict[tuple[str, str], Tracked] = {}
        self.pods: dict[tuple[str, str], PodSim] = {}
        self.timings: dict[str, tuple[float, float]] = {}  # job name → (created, finished)
        self.max_active = 0  # most jobs running at once
        self.started_processes: list[subprocess.Popen] = []
        self._events: queue.Queue = queue.Queue()
        self.errors: list[Exception] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="operator-stand-in")

    @property
    def unpullable(self) -> tuple[str, ...]:
        return self.kubelet.unpullable

    def start(self) -> "OperatorStandIn":
        """Subscribe to the store and start working."""
        self.logs.mkdir(parents=True, exist_ok=True)
        self.network.start()
        self.store.listeners.append(self._on_event)
        self.store.kubelets.add(self.node.name)
        if self.kueue is not None:
            self.store.admission.append(self.kueue.webhook)
        self.store.admission.append(self.trainer.webhook)
        self.store.create(("", "v1", "nodes"), "", {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": self.node.name, "labels": self.node.labels}, "status": {}})
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop working and kill every process still running."""
        self.store.listeners.remove(self._on_event)
        self.store.admission.remove(self.trainer.webhook)
        self.store.kubelets.discard(self.node.name)
        self._stopped.set()
        self._thread.join(timeout=10)
        for pod in list(self.pods.values()):
            self.kubelet.kill(pod)
        for process in self.started_processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        self.network.stop()
        self.errors += self.network.errors

    def set_nodes(self, count: int, allocatable: dict[str, str]) -> None:
        """Make the cluster ``count`` nodes of ``allocatable`` each (``node-1`` … ``node-<count>``)."""
        from .kubelet import Node

        nodes = [Node(f"node-{i}", {"kubernetes.io/hostname": f"node-{i}", "kubernetes.io/os": "linux"},
                      dict(allocatable)) for i in range(1, count + 1)]
        for node in nodes:
            self.store.kubelets.add(node.name)
            if self.store.find(("", "v1", "nodes"), "", node.name) is None:
                self.store.create(("", "v1", "nodes"), "", {"apiVersion": "v1", "kind": "Node", "metadata": {
                    "name": node.name, "labels": node.labels}, "status": {"allocatable": node.allocatable}})
        self.kubelet.node, self.kubelet.nodes = nodes[0], nodes
        self.node = nodes[0]

    def processes(self) -> list[subprocess.Popen]:
        """Every process started, ended or not."""
        return list(self.started_processes)

    # --- events and the loop ------------------------------------------------------------------

    def _on_event(self, kind: str, key: tuple, obj: dict) -> None:
        # Called under the store's lock: only queue the change.
        if KINDS.get(key) in WORKLOAD_KINDS or key == PODS:
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
            while True:
                self._apply(*self._events.get(timeout=0.01))
        except queue.Empty:
            pass
        if self.kueue is not None:
            self.kueue.tick(self)
        self.kubelet.scheduler.tick()
        for job in list(self.jobs.values()):
            self._controller(job).tick(job)
        for pod in list(self.pods.values()):
            if pod.stage not in ("done", "terminating", "gone"):
                self.kubelet.step(pod)

    def _apply(self, kind: str, key: tuple, obj: dict) -> None:
        meta = obj["metadata"]
        name = (meta["namespace"], meta["name"])
        if key == PODS:
            pod = self.pods.get(name)
            if pod is None or pod.uid != meta.get("uid"):
                return
            if kind == "DELETED":
                pod.stage = "gone"
                self.kubelet.kill(pod)
            elif meta.get("deletionTimestamp") and pod.stage not in ("terminating", "gone"):
                pod.stage = "terminating"
                grace = float(meta.get("deletionGracePeriodSeconds") or 0)
                threading.Thread(target=self.kubelet.terminate, args=(pod, grace), daemon=True).start()
            return
        if kind == "ADDED":
            self._start_job(key, obj)
        elif kind == "MODIFIED" and name in self.jobs and self.jobs[name].uid == meta.get("uid"):
            self.jobs[name].obj = obj
        elif kind == "DELETED" and name in self.jobs and self.jobs[name].uid == meta.get("uid"):
            self.jobs.pop(name)  # its pods go with the garbage collector

    def _start_job(self, key: tuple, obj: dict) -> None:
        meta = obj["metadata"]
        if any(r.get("kind") == "JobSet" for r in meta.get("ownerReferences") or []):
            return  # a TrainJob's child Job: the stand-in's Trainer runs its pods (see .trainer)
        job = Tracked(key, meta["namespace"], meta["name"], obj["kind"], obj["apiVersion"], meta["uid"], obj)
        self.jobs[(job.namespace, job.name)] = job
        self.max_active = max(self.max_active, sum(j.finished is None for j in self.jobs.values()))
        self._controller(job).start(job)

    def _controller(self, job: Tracked):
        if job.kind == "MPIJob" and job.api_version == "kubeflow.org/v1":
            return self.controllers["MPIJob/kubeflow.org/v1"]
        return self.controllers[job.kind]

    # --- what the controllers call ------------------------------------------------------------

    def create_pod(self, job: Tracked, rtype: str, index: int, template: dict, env: dict[str, str],
                   restart_policy: str, name: str, labels: dict[str, str], owner: dict | None = None,
                   refused: Callable[[str], None] | None = None) -> PodSim | None:
        """Create a pod of ``job`` from ``template``; a refused create is reported by ``refused`` (with
        the API server's message), by default as the Job controller does: FailedCreate on the job."""
        spec = copy.deepcopy(template.get("spec") or {})
        spec["restartPolicy"] = restart_policy
        if self.inject_sidecar is not None:  # injected first, as Linkerd does
            spec["containers"] = [copy.deepcopy(self.inject_sidecar)] + spec.get("containers", [])
        meta = template.get("metadata") or {}
        owner = owner or {"apiVersion": job.api_version, "kind": job.kind, "name": job.name, "uid": job.uid,
                          "controller": True, "blockOwnerDeletion": True}
        body = {"apiVersion": "v1", "kind": "Pod", "spec": spec, "metadata": {
            "name": name, "labels": {**(meta.get("labels") or {}), **labels},
            "annotations": dict(meta.get("annotations") or {}), "ownerReferences": [owner]}}
        try:
            if self.refuse_pods:
                raise ApiError(403, "Forbidden", f'pods "{name}" is forbidden: {self.refuse_pods}')
            created = self.store.create(PODS, job.namespace, body)
        except ApiError as e:
            if not job.data.get("failed_create"):
                job.data["failed_create"] = True
                (refused or (lambda m: self.event(job, "FailedCreate", f"Error creating: {m}")))(e.message)
            return None
        boxes = []
        for container, init in [(c, True) for c in spec.get("initContainers") or []] + \
                               [(c, False) for c in spec.get("containers") or []]:
            log = ContainerLog()
            self.emulator.logs[(job.namespace, name, container["name"])] = log
            boxes.append(Box(container["name"], container, init, log))
        pod = PodSim(job, name, rtype, index, spec, env, boxes, restart_policy, uid=created["metadata"]["uid"],
                     labels=dict(created["metadata"].get("labels") or {}),
                     annotations=dict(created["metadata"].get("annotations") or {}),
                     requests=requests_of(spec, quantity))
        job.pods.append(pod)
        self.pods[(job.namespace, name)] = pod
        self.kubelet.write(pod)
        return pod

    def delete_pod(self, pod: PodSim) -> None:
        """Delete a pod through the API (its kubelet then stops it)."""
        try:
            self.store.delete(PODS, pod.job.namespace, pod.name, "Background")
        except ApiError:
            pass

    def event(self, about: Tracked | PodSim | dict, reason: str, message: str, source: str = "", type: str = "Warning",
              field_path: str = "", event_time: str = "") -> None:
        """Record an Event about a job, a pod, or another object (``field_path``: the container it is
        about; ``event_time``: a MicroTime, as events.k8s.io recorders such as the scheduler's set)."""
        if isinstance(about, PodSim):
            involved = {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": about.name, "uid": about.uid}}
            namespace = about.job.namespace
        elif isinstance(about, dict):
            meta = about["metadata"]
            involved = {"kind": about["kind"], "apiVersion": about["apiVersion"],
                        "metadata": {"name": meta["name"], "uid": meta["uid"]}}
            namespace = meta["namespace"]
        else:
            involved = {"kind": about.kind, "apiVersion": about.api_version, "metadata": {"name": about.name, "uid": about.uid}}
            namespace = about.namespace
        self.store.record_event(namespace, involved, reason, message, kind=type,
                                source=source or f"{about.__class__.__name__}", field_path=field_path,
                                event_time=event_time)

    def finished(self, job: Tracked) -> None:
        self.timings[job.name] = (job.created, job.finished or time.monotonic())
        self.write_job(job)

    def write_job(self, job: Tracked) -> None:
        """Write the job's status (only when it changed, as controllers do)."""
        status: dict[str, Any] = {"conditions": list(job.conditions)}
        if job.start_time is not None and job.kind != "TrainJob":
            status["startTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(job.start_time))
        if job.kind in KUBEFLOW_V1:
            status["replicaStatuses"] = {p.type.capitalize(): {"active": sum(q.type == p.type and q.phase == "Running"
                                                                             for q in job.replicas)} for p in job.replicas}
        if status == job.data.get("written"):
            return
        job.data["written"] = status
        try:
            self.store.update(job.key, job.namespace, job.name, lambda o: {**o, "status": status}, status=True)
        except ApiError:
            pass  # deleted meanwhile

    def set_suspend(self, job: Tracked, value: bool) -> None:
        """Set the job's ``suspend`` (Kueue does it through the API)."""
        def change(obj: dict) -> dict:
            spec = obj.setdefault("spec", {})
            (spec.setdefault("runPolicy", {}) if job.kind in KUBEFLOW_V1 else spec)["suspend"] = value
            return obj

        try:
            job.obj = self.store.update(job.key, job.namespace, job.name, change)
        except ApiError:
            pass

    def evict(self, pod: PodSim, message: str = "The node was low on resource: memory. Threshold quantity: 100Mi.") -> None:
        """Evict a pod as the kubelet does under node pressure: its containers are killed and it stays
        Failed with reason Evicted and a DisruptionTarget condition."""
        self.kubelet.kill(pod)
        for box in pod.boxes:
            if box.state == "running":
                box.state, box.code, box.reason = "terminated", 137, "Error"
        pod.phase, pod.stage, pod.reason, pod.message = "Failed", "done", "Evicted", message
        pod.conditions = [*pod.conditions, {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                                            "message": message}]
        self.kubelet.write(pod)

    def preempt_pod(self, pod: PodSim) -> None:
        """Preempt a pod as the scheduler does: a DisruptionTarget condition, then the pod is deleted
        (and a Kubeflow v1 operator creates it again under the same name)."""
        pod.conditions = [*pod.conditions, {"type": "DisruptionTarget", "status": "True",
                                            "reason": "PreemptionByScheduler",
                                            "message": "Preempted in order to admit critical pod"}]
        self.kubelet.write(pod)
        self.delete_pod(pod)

    def free_port(self) -> int:
        with socket.socket() as s:
            s.bind((self.host, 0))
            return s.getsockname()[1]

    def suffix(self) -> str:
        return "".join(random.choices(string.ascii_lowercase + string.digits, k=5))

    def mpi_env(self, job: Tracked, role: str) -> dict[str, str]:
        """What mpi-operator gives the launcher (and the training operator's MPIJob): a hostfile with
        ``slotsPerWorker`` slots for each worker, and for the launcher when it runs as a worker
        (``newConfigMap``; every host is this machine here), v2beta1's launcher
        ``OMPI_MCA_orte_set_default_slots`` (``newLauncherPodTemplate``), and a launcher that is not
        a worker ``NVIDIA_VISIBLE_DEVICES=""`` (both operators)."""
        spec = job.obj["spec"]
        replicas = spec.get("mpiReplicaSpecs") or {}
        workers = int((replicas.get("Worker") or {}).get("replicas", 0))
        slots = int(spec.get("slotsPerWorker") or 1)
        launcher = (((replicas.get("Launcher") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        # v2beta1: runLauncherAsWorker; training-operator's v1: a launcher that asks for a GPU (isGPULauncher)
        as_worker = spec.get("runLauncherAsWorker") if job.api_version == "kubeflow.org/v2beta1" else any(
            "gpu" in key for c in launcher for key in ((c.get("resources") or {}).get("limits") or {}))
        hosts = workers + (1 if as_worker else 0)
        hostfile = self.logs / f"{job.namespace}_{job.name}.hostfile"
        hostfile.write_text(f"localhost slots={max(1, hosts) * slots}\n")
        env = {"OMPI_MCA_orte_default_hostfile": str(hostfile), "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
               "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10", "OMPI_MCA_hwloc_base_binding_policy": "none",
               "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "K_MPI_JOB_ROLE": role}
        if role == "launcher" and job.api_version == "kubeflow.org/v2beta1":
            env["OMPI_MCA_orte_set_default_slots"] = str(slots)
        if role == "launcher" and not as_worker:  # nvidiaDisableEnvVars: the node's GPUs are hidden from it
            env |= {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
        return env

    # --- what the kubelet calls ---------------------------------------------------------------

    def argv(self, spec: dict) -> tuple[str, ...] | None:
        """The container's command as this machine runs it; SSHD for an SSH server; None for an image's
        default that ends at once (images with ``mpi`` in their name default to an SSH server)."""
        argv = tuple(path_of(str(a), self.mount_path, self.local_root)
                     for a in (spec.get("command") or []) + (spec.get("args") or []))
        if not argv:
            return SSHD if "mpi" in spec.get("image", "") else None
        if os.path.basename(argv[0]) == "sshd":
            return SSHD
        return local_argv(argv)

    def env_of(self, spec: dict, namespace: str = "") -> dict[str, str]:
        """The container's own environment, with the claim mapped to its local folder: values, and
        keys of Secrets and ConfigMaps (``valueFrom``), as the kubelet resolves them."""
        env = {}
        for e in spec.get("env") or []:
            value = e.get("value") if "value" in e else self._value_from(e.get("valueFrom") or {}, namespace)
            if value is not None:
                env[e["name"]] = path_of(str(value), self.mount_path, self.local_root)
        return env

    def _value_from(self, source: dict, namespace: str) -> str | None:
        import base64

        for key, plural in (("secretKeyRef", "secrets"), ("configMapKeyRef", "configmaps")):
            ref = source.get(key)
            if ref is not None:
                obj = self.store.find(("", "v1", plural), namespace, ref.get("name", ""))
                value = ((obj or {}).get("data") or {}).get(ref.get("key", ""))
                return base64.b64decode(value).decode() if value is not None and key == "secretKeyRef" else value
        return None

    def waiter(self, pod: PodSim, box: Box, path: Path) -> Callable[[], int | None] | None:
        """How a container the stand-in plays instead of running ends: training-operator's
        ``init-pytorch`` looks up the master's headless Service (``nslookup <job>-master-0``, then
        "waiting for master" and 2 s of sleep, 100 times), whose name resolves only while the master
        is Ready (no ``publishNotReadyAddresses``: ``service.go``), and a moment after it became Ready
        (endpoints, then DNS). Here a lookup every ``init_period`` seconds, answered once the master has
        been Ready ``dns_delay`` seconds; exit 1 after the last try. None for any other container."""
        if box.name != INIT_PYTORCH or not box.init or pod.job.kind != "PyTorchJob":
            return None
        job, started, seen = pod.job, time.monotonic(), {"ready_at": None, "tries": 0}
        master = f"{job.name}-master-0"
        path.write_text("")

        def until() -> int | None:
            now = time.monotonic()
            found = next((p for p in job.replicas if p.type == "master" and p.index == 0), None)
            if found is None or not (found.ready and self.kubelet.pod_ready(found)):
                seen["ready_at"] = None
            elif seen["ready_at"] is None:
                seen["ready_at"] = now
            due = int((now - started) / self.init_period) + 1
            with open(path, "a") as log:
                while seen["tries"] < min(due, INIT_TRIES):
                    seen["tries"] += 1
                    if seen["ready_at"] is not None and now - seen["ready_at"] >= self.dns_delay:
                        log.write(f"Server:\t\t10.96.0.10\nName:\t{master}.{job.namespace}.svc.cluster.local\n"
                                  f"Address: {found.ip if found is not None else ''}\n")
                        return 0
                    log.write(f"nslookup: can't resolve '{master}'\nwaiting for master\n")
            return 1 if seen["tries"] >= INIT_TRIES else None

        return until

    def before_start(self, pod: PodSim, box: Box, path: Path) -> tuple[int, str] | str | None:
        """What the cluster does to a container about to start: None (it runs), ``"wait"`` (not yet),
        or ``(exit code, log)`` when it fails before its command can do anything.

        - mpi-operator v2: a launcher started before its workers are Ready cannot resolve them (their
          headless Service publishes only Ready pods): mpirun's ssh fails;
        - training-operator v1 MPIJob: the launcher's init container waits for every worker to run,
          and its ``kubectl exec`` into a worker that has ended fails.
        """
        job = pod.job
        if job.kind != "MPIJob" or pod.type != "launcher" or box.init:
            return None
        workers = [p for p in job.replicas if p.type == "worker"]
        if job.api_version.endswith("v2beta1"):
            late = next((p for p in workers if not p.ready), None)
            if late is not None:
                return 1, (f"ssh: Could not resolve hostname {late.name}.{job.name}.{job.namespace}.svc: "
                           "Name or service not known\nORTE was unable to reliably start one or more daemons.\n")
            return None
        ended = next((p for p in workers if p.phase in ("Succeeded", "Failed")), None)
        if ended is not None:
            return 1, f"error: cannot exec into a container in a completed pod; current phase is {ended.phase}\n"
        return "wait" if any(p.phase != "Running" for p in workers) else None
