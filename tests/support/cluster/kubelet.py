"""The kubelet and scheduler of the operator stand-in's one node: a pod's containers as local
processes, with the states, restarts and logs a real kubelet reports.

- scheduling (:mod:`.scheduler`): nodes of finite capacity (``nodes``, one by default), a pod at a
  time by the default scheduler or a PodGroup's pods all together by a gang scheduler; claims that
  exist; an unschedulable pod gets ``PodScheduled=False/Unschedulable`` and a FailedScheduling event;
  a bound one ``PodScheduled=True`` (its ``lastTransitionTime`` in whole seconds) and the scheduler's
  ``Scheduled`` event, whose ``eventTime`` has microseconds (an events.k8s.io recorder);
- events as the kubelet records them (client-go's ``makeEvent``: named ``<pod>.<hex UnixNano>``,
  whole-second timestamps): ``Pulling``/``Pulled`` (an image not on the node yet takes
  ``delays.pull``: "Successfully pulled image "X" in 1.2s (1.2s including waiting). Image size: N
  bytes."; then it is cached: "Container image "X" already present on machine"), ``Created`` and
  ``Started`` (``delays.start`` after the pull); a container's ``startedAt`` and ``finishedAt`` are when
  it started and ended;
- images: an unpullable image alternates ``ErrImagePull`` and ``ImagePullBackOff`` as the kubelet does;
- volumes: a claim in ``unmountable`` keeps the pod ``ContainerCreating`` with FailedMount events, and
  so does a ConfigMap volume whose ConfigMap is not there; a ConfigMap's files are written read-only
  into a folder of the pod, which stands for its mount path in the containers mounting it;
- a container's ``workingDir`` is where its process runs (else the image's: the stand-in's ``workdir``);
- containers: init containers one after the other, then the others (an operator's container the
  stand-in plays instead of running, ``init-pytorch``, runs until ``OperatorStandIn.waiter`` says how it ended); a container that fails under
  ``restartPolicy: OnFailure`` starts again with ``restartCount`` + 1 and its ``lastState`` (at once
  the first time, then after a ``CrashLoopBackOff`` of 10 s doubling, times ``backoff_scale``); each
  instance logs to its own file;
- deletion: a pod with a ``deletionTimestamp`` gets SIGTERM, then SIGKILL after its grace period
  (capped at ``max_grace`` here); its stopped containers (143 after a SIGTERM, 137 after a SIGKILL)
  and its terminal phase (Failed unless every container ended with 0; Kubernetes 1.27+) are
  published, and then it is removed;
- ``restartPolicy: Always`` (Deployments) restarts a container whatever its exit code;
- network and probes: each pod gets its own IP (``status.podIP``, :mod:`.network`), and its
  startup, readiness and liveness probes run against it (:mod:`.probes`); a pod is ``Ready`` when
  every container is.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import probes as k8s_probes
from .emulator import ContainerLog
from .scheduler import Delays, Scheduler, micro_now
from .store import PODS, ApiError

if TYPE_CHECKING:
    from .standin import OperatorStandIn, Tracked

_UNITS = {"m": 1e-3, "k": 1e3, "Ki": 2**10, "M": 1e6, "Mi": 2**20, "G": 1e9, "Gi": 2**30, "T": 1e12, "Ti": 2**40}
BACKOFF_FIRST, BACKOFF_MAX = 10.0, 300.0
PULL_PERIOD = 0.2  # seconds between ErrImagePull and ImagePullBackOff
SSHD = ("sshd",)  # what an MPI worker runs: a daemon until stopped


def quantity(text: Any) -> float:
    """A Kubernetes quantity as a number (``500m`` → 0.5, ``2Gi`` → 2147483648)."""
    text = str(text)
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * _UNITS[unit]
    return float(text)


def now_text(t: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass
class Node:
    """A node pods are scheduled on (its ``allocatable``: what pods may request of it in all)."""

    name: str = "node-1"
    labels: dict[str, str] = field(default_factory=lambda: {"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux"})
    allocatable: dict[str, str] = field(default_factory=lambda: {"cpu": "64", "memory": "256Gi"})


@dataclass
class Box:
    """One container of a pod and its current instance."""

    name: str
    spec: dict[str, Any]
    init: bool
    log: ContainerLog
    state: str = "waiting"  # waiting | running | terminated
    code: int | None = None
    restarts: int = 0
    last: dict | None = None  # lastState.terminated
    process: subprocess.Popen | None = None
    daemon: bool = False  # an sshd: runs until stopped
    started: float = 0.0
    started_wall: float = 0.0  # startedAt, unix seconds
    ended_wall: float = 0.0  # finishedAt of its last instance
    ends: float | None = None  # a simulated container's end
    restart_at: float | None = None
    reason: str = ""  # of a waiting or terminated state
    probe_started: bool = False  # this instance's startup probe has succeeded
    probe_ready: bool = False  # this instance's readiness probe has succeeded
    #: An operator's container the stand-in plays (init-pytorch): its exit code once it has one.
    until: Any = None


@dataclass
class PodSim:
    """One pod of a job, as its kubelet sees it."""

    job: "Tracked"
    name: str
    type: str
    index: int
    spec: dict[str, Any]
    env: dict[str, str]
    boxes: list[Box]
    restart_policy: str
    uid: str = ""
    stage: str = "scheduling"  # scheduling | pulling | mounting | running | done | terminating | gone
    phase: str = "Pending"
    conditions: list[dict] = field(default_factory=list)
    reason: str = ""  # status.reason (Evicted …)
    message: str = ""
    since: float = field(default_factory=time.monotonic)
    ip: str = ""  # status.podIP, from when it is scheduled
    dirty: bool = False  # a probe changed what its status says: write it
    #: container → (mount path, local folder) of its ConfigMap volumes
    mounts: dict[str, list[tuple[str, Path]]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node: str = ""  # spec.nodeName once bound
    requests: dict[str, float] = field(default_factory=dict)  # what it takes of its node
    pulling: float | None = None  # when its images started being pulled (monotonic)
    pulled: float | None = None  # when they were all there
    fetching: list[str] = field(default_factory=list)  # containers whose image is being pulled
    #: condition type → (status, lastTransitionTime) of the readiness conditions
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """running | succeeded | failed | pending (what the tests ask of a replica)."""
        return {"Running": "running", "Succeeded": "succeeded", "Failed": "failed"}.get(self.phase, "pending")

    @property
    def ready(self) -> bool:
        """Every main container running (an sshd ready a moment after it starts)."""
        main = [b for b in self.boxes if not b.init]
        return self.phase == "Running" and all(b.state == "running" and time.monotonic() - b.started > 0.1 for b in main)


class Kubelet:
    """Drives the pods of the stand-in's node (see the module's docstring)."""

    def __init__(self, standin: "OperatorStandIn") -> None:
        self.s = standin
        self.node = Node()
        #: Every node of the cluster (the first is ``node``); each has its own allocatable.
        self.nodes = [self.node]
        self.delays = Delays()
        self.scheduler = Scheduler(self)
        #: Images each node has pulled (a later pull is a cache hit); image → bytes, as reported.
        self.images: dict[str, set[str]] = {}
        self.image_size = 543804759
        self.unpullable = ("does-not-exist",)
        self.unmountable: set[str] = set()
        self.backoff_scale = 0.02
        self.max_grace = 1.0
        #: Report a container killed by SIGKILL as its cgroup's OOM kill (reason OOMKilled).
        self.oom_on_sigkill = False
        #: The cluster-autoscaler: resource → (seconds to bring a node, amount it adds).
        self.autoscale: dict[str, tuple[float, str]] = {}
        self._scaling: dict[str, float] = {}

    # --- scheduling, pulling, mounting ---------------------------------------------------------

    def quantity(self, text: Any) -> float:
        return quantity(text)

    def step(self, pod: PodSim) -> None:
        """Move the pod on by what its state allows now."""
        if pod.stage == "scheduling":
            why = self.unschedulable(pod)
            if why is None:
                placed = self.scheduler.schedule(pod)
                why = None if placed in ("bound", "wait") else placed
                if placed == "wait":
                    return
            if why:
                self._scale_up(pod, why)
                return self._pending(pod, {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                           "message": why}, "FailedScheduling", why,
                                     pod.spec.get("schedulerName") or "default-scheduler")
        if pod.stage == "pulling":
            bad = next((b for b in pod.boxes if any(u in b.spec.get("image", "") for u in self.unpullable)), None)
            if bad is not None:
                return self._pull_failing(pod, bad)
            if not self._pulled(pod):
                return
            pod.stage = "mounting"
        if pod.stage == "mounting":
            claim = next((c for c in self._claims(pod) if c in self.unmountable), None)
            if claim is not None:
                return self._mount_failing(pod, claim)
            missing = self._mount_config_maps(pod)
            if missing is not None:
                return self._mount_failing(pod, *missing)
            self._make_sub_paths(pod)
            pod.stage = "running"
        if pod.stage == "running":
            self._containers(pod)

    def unschedulable(self, pod: PodSim) -> str | None:
        """Why no node can ever take the pod as it is (a claim that does not exist), else None."""
        for claim in self._claims(pod):
            if self.s.store.find(("", "v1", "persistentvolumeclaims"), pod.job.namespace, claim) is None:
                return f'0/{len(self.nodes)} nodes are available: persistentvolumeclaim "{claim}" not found.'
        return None

    def bind(self, pod: PodSim, node: Node, scheduler: str) -> None:
        """Bind the pod to ``node`` (``spec.nodeName``), as ``scheduler`` does, with its Scheduled event."""
        pod.node, pod.stage = node.name, "pulling"
        pod.conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now_text()}]
        pod.ip = self.s.network.pod_ip()
        self.s.store.update(PODS, pod.job.namespace, pod.name,
                            lambda o: {**o, "spec": {**o["spec"], "nodeName": node.name}})
        self.s.event(pod, "Scheduled", f"Successfully assigned {pod.job.namespace}/{pod.name} to {node.name}",
                     source=scheduler, type="Normal", event_time=micro_now())
        self.write(pod)

    def _pulled(self, pod: PodSim) -> bool:
        """Pull the pod's images the node does not have (``delays.pull`` each, all at once, as a kubelet
        pulling in parallel does), with the kubelet's Pulling and Pulled events; True once all are there."""
        now, cache = time.monotonic(), self.images.setdefault(pod.node, set())
        boxes = [b for b in pod.boxes if b.spec.get("image")]
        if pod.pulling is None:
            pod.pulling, pod.fetching = now, [b.name for b in boxes if b.spec["image"] not in cache and self.delays.pull > 0]
            for box in boxes:
                if box.name in pod.fetching:
                    self.s.event(pod, "Pulling", f'Pulling image "{box.spec["image"]}"', source="kubelet", type="Normal",
                                 field_path=_field_path(box))
        if pod.fetching and now - pod.pulling < self.delays.pull:
            return False
        if pod.pulled is None:
            took = _go_duration(now - pod.pulling)
            for box in boxes:
                image = box.spec["image"]
                message = (f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
                           f"Image size: {self.image_size} bytes." if box.name in pod.fetching
                           else f'Container image "{image}" already present on machine')
                self.s.event(pod, "Pulled", message, source="kubelet", type="Normal", field_path=_field_path(box))
                cache.add(image)
            pod.pulled = time.monotonic()
        return True

    def _scale_up(self, pod: PodSim, why: str) -> None:
        """The cluster-autoscaler: a pod short of a resource it can add triggers a scale-up (an event
        on the pod), and the node has the resource once the new node is up."""
        resource = next((r for r in self.autoscale if f"Insufficient {r}" in why), None)
        if resource is None:
            return
        seconds, amount = self.autoscale[resource]
        if resource not in self._scaling:
            self._scaling[resource] = time.monotonic() + seconds
        if pod.name not in self._scaling:
            self._scaling[pod.name] = 0.0
            self.s.event(pod, "TriggeredScaleUp", "pod triggered scale-up: [{gpu-pool 0->1 (max: 4)}]",
                         source="cluster-autoscaler")
        if time.monotonic() >= self._scaling[resource]:
            self.node.allocatable[resource] = amount

    def _claims(self, pod: PodSim) -> list[str]:
        return [v["persistentVolumeClaim"]["claimName"] for v in pod.spec.get("volumes") or [] if v.get("persistentVolumeClaim")]

    def _pending(self, pod: PodSim, condition: dict, reason: str, message: str, source: str) -> None:
        if pod.conditions != [condition]:
            pod.conditions = [condition]
            self.s.event(pod, reason, message, source=source)
            self.write(pod)

    def _pull_failing(self, pod: PodSim, box: Box) -> None:
        phase = int((time.monotonic() - pod.since) / PULL_PERIOD) % 2
        reason = "ErrImagePull" if phase == 0 else "ImagePullBackOff"
        if box.reason != reason:
            image = box.spec.get("image", "")
            box.reason = reason
            message = (f'failed to pull and unpack image "{image}": not found' if phase == 0
                       else f'Back-off pulling image "{image}"')
            box.last = {"message": message}
            self.s.event(pod, "Failed" if phase == 0 else "BackOff", message, source="kubelet")
            self.write(pod)

    def _mount_config_maps(self, pod: PodSim) -> tuple[str, str] | None:
        """Write each ConfigMap volume's files into a folder of the pod; (volume, why) when one is missing."""
        folders = {}
        for volume in pod.spec.get("volumes") or []:
            name = (volume.get("configMap") or {}).get("name")
            if name is None:
                continue
            found = self.s.store.find(("", "v1", "configmaps"), pod.job.namespace, name)
            if found is None:
                return volume["name"], f'configmap "{name}" not found'
            folder = self.s.logs / f"{pod.job.namespace}_{pod.name}_{pod.uid}_{volume['name']}"
            if not folder.exists():
                folder.mkdir(parents=True)
                for key, text in (found.get("data") or {}).items():
                    (folder / key).write_text(text)
                    (folder / key).chmod(0o444)
                folder.chmod(0o555)  # a ConfigMap volume is read-only
            folders[volume["name"]] = folder
        for box in pod.boxes:
            pod.mounts[box.name] = [(m["mountPath"], folders[m["name"]]) for m in box.spec.get("volumeMounts") or []
                                    if m.get("name") in folders]
        return None

    def _make_sub_paths(self, pod: PodSim) -> None:
        """A claim mounted by ``subPath`` that is not there yet: the kubelet makes the folder on the
        volume before the container starts (pkg/kubelet/kubelet_pods.go, makeMounts)."""
        claims = {v["name"] for v in pod.spec.get("volumes") or [] if v.get("persistentVolumeClaim")}
        for box in pod.boxes:
            for mount in box.spec.get("volumeMounts") or []:
                if mount.get("name") in claims and mount.get("subPath"):
                    (self.s.local_root / mount["subPath"]).mkdir(parents=True, exist_ok=True)

    def _mount_failing(self, pod: PodSim, claim: str, why: str = "") -> None:
        if not pod.reason:
            pod.reason = "mounting"
            why = why or "mount failed: exit status 32: mount.nfs: Connection timed out"
            self.s.event(pod, "FailedMount", f"MountVolume.SetUp failed for volume \"{claim}\" : {why}", source="kubelet")
            for box in pod.boxes:
                box.reason = "PodInitializing" if box.init else "ContainerCreating"
            self.write(pod)

    # --- containers ---------------------------------------------------------------------------

    def _containers(self, pod: PodSim) -> None:
        changed = False
        for box in pod.boxes:
            changed |= self._reap(pod, box)
        inits = [b for b in pod.boxes if b.init]
        waiting_init = next((b for b in inits if not (b.state == "terminated" and b.code == 0)), None)
        for box in ([waiting_init] if waiting_init else [b for b in pod.boxes if not b.init]):
            if box.state == "waiting" and (box.restart_at is None or time.monotonic() >= box.restart_at):
                changed |= self._start(pod, box)
        changed |= self._phase(pod)
        if changed or pod.dirty:
            pod.dirty = False
            self.write(pod)

    def _start(self, pod: PodSim, box: Box) -> bool:
        """Start the container's next instance; False if it has to wait (nothing changed then)."""
        if not box.log.instances and pod.pulled is not None and time.monotonic() < pod.pulled + self.delays.start:
            return False  # the runtime still creating the container
        path = self.s.logs / f"{pod.job.namespace}_{pod.name}_{box.name}_{len(box.log.instances)}.log"
        waiter = self.s.waiter(pod, box, path)
        if waiter is not None:  # played, not run: it ends when the cluster lets it
            return self._begin(pod, box, path, until=waiter)
        argv = self.s.argv(box.spec)
        mounts = pod.mounts.get(box.name) or []
        if argv not in (None, SSHD):  # $(VAR) in the command, from the container's environment
            argv = tuple(on_mounts(expand(a, {**self.s.env_of(box.spec, pod.job.namespace), **pod.env}), mounts) for a in argv)
        block = None if argv in (None, SSHD) or self.s.simulate is not None else self.s.before_start(pod, box, path)
        if block == "wait":  # an init container of the operator's is still waiting
            changed, box.reason = box.reason != "PodInitializing", "PodInitializing"
            return changed
        self._begin(pod, box, path)
        if self.s.simulate is not None and not box.init:
            path.write_text(f"{pod.type}-{pod.index} simulated\n")
            box.ends = time.monotonic() + self.s.simulate
        elif argv == SSHD:
            path.write_text("Server listening on 0.0.0.0 port 22.\n")
            box.daemon = True
        elif argv is None:  # the image's default command, which ends at once here
            path.write_text("")
            box.ends = time.monotonic()
        elif block is not None:  # the environment fails it before it can run (e.g. no DNS yet)
            path.write_text(block[1])
            box.ends, box.code = time.monotonic(), block[0]
        else:
            env = self.s.network.pod_env(pod, {**os.environ, **self.s.env_of(box.spec, pod.job.namespace), **pod.env})
            env = {k: on_mounts(v, mounts) for k, v in env.items()}
            workdir = on_mounts(path_of(box.spec.get("workingDir") or "", self.s.mount_path, self.s.local_root), mounts)
            with open(path, "wb") as log:
                box.process = subprocess.Popen(argv, env=env,
                                               cwd=workdir or self.s.workdir, stdin=subprocess.DEVNULL, stdout=log,
                                               stderr=subprocess.STDOUT, start_new_session=True)
            self.s.started_processes.append(box.process)
        box.log.instances.append(path)
        box.log.ended.clear()
        if box.process is not None and k8s_probes.has_probes(box.spec):
            k8s_probes.Prober(self, pod, box).start()
        return True

    def _begin(self, pod: PodSim, box: Box, path: Path, until: Any = None) -> bool:
        """The container's next instance is running (its Created and Started events)."""
        if box.restart_at is not None:
            box.restarts += 1
        box.restart_at, box.reason, box.code, box.until = None, "", None, until
        box.probe_started = box.probe_ready = False
        box.state, box.started, box.ends, box.daemon = "running", time.monotonic(), None, False
        box.started_wall = time.time()
        self.s.event(pod, "Created", f"Created container: {box.name}", source="kubelet", type="Normal",
                     field_path=_field_path(box))
        self.s.event(pod, "Started", f"Started container {box.name}", source="kubelet", type="Normal",
                     field_path=_field_path(box))
        if until is not None:
            box.log.instances.append(path)
            box.log.ended.clear()
        return True

    def _reap(self, pod: PodSim, box: Box) -> bool:
        if box.state != "running":
            return False
        code = self._exit_code(box)
        if code is None:
            return False
        box.state, box.code, box.process = "terminated", code, None
        box.reason = "Completed" if code == 0 else "OOMKilled" if code == 137 and self.oom_on_sigkill else "Error"
        box.ended_wall = time.time()
        box.last = {"exitCode": code, "reason": box.reason, "startedAt": now_text(box.started_wall),
                    "finishedAt": now_text(box.ended_wall)}
        box.log.ended.set()
        if (code != 0 and pod.restart_policy == "OnFailure" or pod.restart_policy == "Always") and pod.stage == "running":
            # The first restart is at once; then 10 s, doubling up to 5 min (the kubelet's back-off).
            delay = 0.0 if box.restarts == 0 else min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (box.restarts - 1)) * self.backoff_scale
            box.state, box.reason, box.restart_at = "waiting", "CrashLoopBackOff", time.monotonic() + delay
            self.s.event(pod, "BackOff", f"Back-off restarting failed container {box.name} in pod {pod.name}",
                         source="kubelet")
        return True

    def _exit_code(self, box: Box) -> int | None:
        if box.until is not None:
            return box.until()
        if box.process is not None:
            code = box.process.poll()
            return None if code is None else (128 - code if code < 0 else code)
        if box.ends is not None and time.monotonic() >= box.ends:
            return box.code if box.code is not None else 0
        return None

    def _phase(self, pod: PodSim) -> bool:
        main = [b for b in pod.boxes if not b.init]
        before = pod.phase
        if pod.restart_policy == "Never" and any(b.state == "terminated" and b.code for b in pod.boxes):
            if all(b.state == "terminated" for b in main) or any(b.init and b.code for b in pod.boxes):
                pod.phase = "Failed"
        if pod.phase not in ("Failed",) and main and all(b.state == "terminated" and b.code == 0 for b in main):
            pod.phase = "Succeeded"
        elif pod.phase == "Pending" and any(b.state in ("running", "terminated") or b.restarts for b in main):
            pod.phase = "Running"
        if pod.phase in ("Succeeded", "Failed"):
            pod.stage = "done"
        return pod.phase != before

    # --- deletion and eviction ------------------------------------------------------------------

    def terminate(self, pod: PodSim, grace: float) -> None:
        """SIGTERM the pod's containers, SIGKILL what is left after the grace, then remove the pod."""
        pod.stage = "terminating"
        for box in pod.boxes:
            if box.process is not None:
                _signal(box.process, signal.SIGTERM)
        deadline = time.monotonic() + min(grace, self.max_grace)
        for box in pod.boxes:
            if box.process is not None:
                try:
                    box.process.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    _signal(box.process, signal.SIGKILL)
                    box.process.wait()
            if box.state == "running":
                box.state, box.code, box.reason = "terminated", 137 if box.daemon else 143, "Error"
                box.ended_wall = time.time()
            box.log.ended.set()
        # The status manager publishes the stopped containers, and (1.27+) the pod's terminal phase,
        # before the kubelet lets the API server remove the pod.
        main = [b for b in pod.boxes if not b.init]
        started = any(b.state == "terminated" for b in main)
        self.write(pod, phase=("Succeeded" if all(b.code == 0 for b in main) else "Failed") if started else None)
        pod.stage = "gone"
        try:
            self.s.store.finalize(PODS, pod.job.namespace, pod.name)
        except ApiError:
            pass

    def fail(self, pod: PodSim, code: int, text: str) -> None:
        """End the pod's running containers with ``code``, ``text`` added to their logs (what a
        program does when the peers it talks to vanish)."""
        for box in pod.boxes:
            if box.state == "running":
                if box.process is not None:
                    _signal(box.process, signal.SIGKILL)
                    box.process.wait()
                    box.process = None
                with open(box.log.instances[-1], "a") as log:
                    log.write(text)
                box.ends, box.code = time.monotonic(), code

    def kill(self, pod: PodSim) -> None:
        """Stop the pod's processes at once (its job is gone, or the test ends)."""
        for box in pod.boxes:
            if box.process is not None:
                _signal(box.process, signal.SIGKILL)
                box.process.wait()
            box.log.ended.set()

    # --- status ---------------------------------------------------------------------------------

    def write(self, pod: PodSim, phase: str | None = None) -> None:
        """Write the pod's status as the kubelet reports it (``phase``: a terminal phase to report
        instead of the pod's own, that of a deleted pod whose containers have stopped)."""
        status: dict[str, Any] = {"phase": phase or pod.phase, "conditions": list(pod.conditions)}
        if pod.reason and pod.reason != "mounting":
            status |= {"reason": pod.reason, "message": pod.message}
        if pod.stage not in ("scheduling",):
            status["conditions"] += self._readiness(pod)
            status["hostIP"], status["startTime"] = "10.0.0.1", now_text()
            if pod.ip:
                status["podIP"], status["podIPs"] = pod.ip, [{"ip": pod.ip}]
            inits = [self._container_status(b) for b in pod.boxes if b.init]
            status["containerStatuses"] = [self._container_status(b) for b in pod.boxes if not b.init]
            if inits:
                status["initContainerStatuses"] = inits
        try:
            self.s.store.update(PODS, pod.job.namespace, pod.name, lambda o: {**o, "status": status}, status=True)
        except ApiError:
            pass  # deleted meanwhile

    def _readiness(self, pod: PodSim) -> list[dict]:
        """The pod's Initialized, ContainersReady and Ready conditions (``pkg/kubelet/status/generate.go``)."""
        initialized = all(b.state == "terminated" and b.code == 0 for b in pod.boxes if b.init)
        unready = [b.name for b in pod.boxes if not b.init and not k8s_probes.ready(b)]
        done = pod.phase in ("Succeeded", "Failed")
        if unready or done:
            why = {"status": "False", "reason": "PodCompleted" if done else "ContainersNotReady",
                   **({} if done else {"message": f"containers with unready status: [{' '.join(unready)}]"})}
        else:
            why = {"status": "True"}
        init = {"status": "True"} if initialized else {"status": "False", "reason": "ContainersNotInitialized"}
        found = [{"type": "Initialized", **init}, {"type": "ContainersReady", **why}, {"type": "Ready", **why}]
        for condition in found:  # lastTransitionTime: when its status last changed, whole seconds
            before = pod.transitions.get(condition["type"])
            if before is None or before[0] != condition["status"]:
                pod.transitions[condition["type"]] = before = (condition["status"], now_text())
            condition["lastTransitionTime"] = before[1]
        return found

    def pod_ready(self, pod: PodSim) -> bool:
        """Whether the pod's Ready condition is True."""
        return pod.phase == "Running" and all(k8s_probes.ready(b) for b in pod.boxes if not b.init)

    def _container_status(self, box: Box) -> dict:
        image = box.spec.get("image", "")
        status: dict[str, Any] = {"name": box.name, "image": image, "imageID": _digest(image),
                                  "ready": k8s_probes.ready(box), "restartCount": box.restarts,
                                  "started": k8s_probes.started(box)}
        if box.state == "running":
            status["state"] = {"running": {"startedAt": now_text(box.started_wall)}}
        elif box.state == "terminated":
            status["state"] = {"terminated": {"exitCode": box.code, "reason": box.reason,
                                              "startedAt": now_text(box.started_wall),
                                              "finishedAt": now_text(box.ended_wall or time.time())}}
        else:
            message = (box.last or {}).get("message") if box.reason in ("ErrImagePull", "ImagePullBackOff") else None
            status["state"] = {"waiting": {"reason": box.reason or "ContainerCreating",
                                           **({"message": message} if message else {})}}
        if box.restarts or (box.state == "waiting" and box.reason == "CrashLoopBackOff"):
            status["lastState"] = {"terminated": {k: v for k, v in (box.last or {}).items() if k != "message"}}
        return status


def _field_path(box: Box) -> str:
    return f"spec.{'initContainers' if box.init else 'containers'}{{{box.name}}}"


def _go_duration(seconds: float) -> str:
    """Seconds as Go prints a ``time.Duration`` cut to milliseconds (``796ms``, ``1.594s``, ``1m2.5s``)."""
    ms = int(seconds * 1000)
    if ms < 1000:
        return f"{ms}ms" if ms else "0s"
    minutes, rest = divmod(ms, 60_000)
    text = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{minutes}m{text}" if minutes else text


def _digest(image: str) -> str:
    import hashlib

    name = image.split("@")[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return f"docker.io/{name}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def _signal(process: subprocess.Popen, sig: signal.Signals) -> None:
    if process.poll() is None:
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def local_argv(argv: tuple[str, ...]) -> tuple[str, ...]:
    """An image's command as this machine runs it: ``python`` is this interpreter (with kubebench),
    ``torchrun`` its ``torch.distributed.run``, an MPI launcher's program likewise."""
    if argv[:3] == ("sh", "-c", 'cd "$0" && exec "$@"') and len(argv) > 4:  # a TrainJob run in a folder
        return (*argv[:4], *local_argv(argv[4:]))
    if argv[0] in ("python", "python3"):
        return (sys.executable, *argv[1:])
    if argv[0] == "torchrun":
        return (sys.executable, "-m", "torch.distributed.run", *argv[1:])
    if argv[0] in ("mpirun", "mpiexec"):
        first = next((i for i, a in enumerate(argv) if a in ("python", "python3")), None)
        if first is not None:
            return (*argv[:first], sys.executable, *argv[first + 1:])
    return argv


def expand(text: str, env: dict[str, str]) -> str:
    """``$(NAME)`` replaced by the variable's value as the kubelet does for a container's command and
    args (``third_party/forked/golang/expansion``): an unknown name stays as written, ``$$`` is ``$``."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        end = text.find(")", i + 2) if text.startswith("$(", i) else -1
        if end != -1:
            out.append(env.get(text[i + 2:end], text[i:end + 1]))
            i = end + 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def on_mounts(value: str, mounts: list[tuple[str, Path]]) -> str:
    """``value`` with a ConfigMap volume's mount path replaced by its local folder."""
    for mount, folder in mounts:
        value = path_of(value, mount, folder)
    return value


def path_of(value: str, mount: str, root: Path) -> str:
    """``value`` with the claim's mount path replaced by its local folder."""
    mount = mount.rstrip("/")
    if value == mount or value.startswith(mount + "/"):
        return str(root) + value[len(mount):]
    return value
