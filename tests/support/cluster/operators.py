"""What each controller of the stand-in does with a job, version by version where upstream differs.

Sources (read at the tags named; see docs/kubernetes-conformance.md for the table):

- training-operator v1 (PyTorchJob, TFJob, JAXJob, XGBoostJob, MPIJob v1): ``pkg/controller.v1/common/job.go`` (backoff
  limit and deadline: ≤ v1.9.3 deletes every pod before it marks the job Failed, v1.9.4 marks it
  Failed first and then honours cleanPodPolicy; suspend deletes the pods; resume resets startTime),
  ``pkg/controller.v1/<kind>/…_controller.go`` (Failed when a Never replica fails; a PyTorchJob succeeds with
  its master), ``pytorch/initcontainer.go`` (the workers' ``init-pytorch``, played by the stand-in: it waits
  for the master to be Ready), ``control/pod_control.go`` (a refused pod: ``FailedCreatePod`` on the job),
  ``envvar.go`` and
  ``master.go`` (MASTER_ADDR/PORT and PET_MASTER_ADDR/PORT, WORLD_SIZE = replicas × nprocPerNode when
  that is a number, RANK, PET_NODE_RANK, PET_NNODES, PET_NPROC_PER_NODE, PYTHONUNBUFFERED), ``jax/envvar.go``
  (COORDINATOR_ADDRESS/PORT, NUM_PROCESSES, PROCESS_ID), ``xgboost/xgboost.go`` (MASTER_*, WORLD_SIZE,
  RANK after the master, WORKER_ADDRS/PORT), ``jaxjob_controller.go`` / ``xgboostjob_controller.go``
  (a JAXJob succeeds with all its workers, an XGBoostJob with its master), ``pod.go`` (the
  SetPodTemplateRestartPolicy warning, pod names and labels; a deleted pod is created again).
- mpi-operator v0.8 (MPIJob v2beta1): ``v2beta1/default.go`` (launcher OnFailure, AtStartup,
  cleanPodPolicy None), ``mpi_job_controller.go`` (workers as pods, a refused one an ``MPIJobFailed``
  event; the launcher as a batch Job taking runPolicy's backoffLimit and deadline, so no deadline before
  it exists; WaitForWorkersReady, the Failed reason from the launcher Job, cleanPodPolicy on workers,
  suspend).
- the Job controller (batch/v1 Indexed): at most ``parallelism`` active pods, replacement pods until
  more than backoffLimit failed or the restarts reach it, DeadlineExceeded from status.startTime (set
  with or without pods), suspend deletes active pods; the TTL-after-finished controller deletes a
  finished Job with ``ttlSecondsAfterFinished`` in the foreground.
- Trainer v2 + JobSet (TrainJob): :mod:`.trainer`.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from .jobpolicy import judge
from .kubelet import PodSim
from .store import ApiError

if TYPE_CHECKING:
    from .standin import OperatorStandIn, Tracked

REPLICA_FIELDS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs",
                  "JAXJob": "jaxReplicaSpecs", "XGBoostJob": "xgbReplicaSpecs"}
ORDER = ["Master", "Chief", "Launcher", "Worker", "PS", "Evaluator"]
JOBSETS = ("jobset.x-k8s.io", "v1alpha2", "jobsets")
TORCH_PORT = 29400
#: training-operator v1.9's PyTorchJob worker init container (``pytorch/initcontainer.go``, ``config/config.go``).
INIT_PYTORCH, INIT_IMAGE, INIT_TRIES = "init-pytorch", "alpine:3.10", 100


def condition(type_: str, status: str, reason: str, message: str = "") -> dict:
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def set_condition(job: "Tracked", new: dict) -> None:
    job.conditions = [c for c in job.conditions if c["type"] != new["type"]] + [new]


def is_true(job: "Tracked", type_: str) -> bool:
    return any(c["type"] == type_ and c["status"] == "True" for c in job.conditions)


class Controller:
    """What every controller shares: suspension, pods by replica, cleanup."""

    def __init__(self, standin: "OperatorStandIn") -> None:
        self.s = standin

    def suspended(self, job: "Tracked") -> bool:
        spec = job.obj.get("spec") or {}
        return bool(spec.get("suspend") or (spec.get("runPolicy") or {}).get("suspend"))

    def live(self, job: "Tracked", rtype: str | None = None) -> list[PodSim]:
        return [p for p in job.pods if p.stage not in ("gone",) and (rtype is None or p.type == rtype)]

    def delete_pods(self, job: "Tracked", which: str = "All") -> None:
        """Delete the job's pods: All, or only Running/Pending ones (cleanPodPolicy Running)."""
        for pod in self.live(job):
            if which == "All" or pod.phase in ("Running", "Pending"):
                self.s.delete_pod(pod)

    def finish(self, job: "Tracked", outcome: str, reason: str, message: str, clean: str | None) -> None:
        if job.kind in REPLICA_FIELDS:  # Kubeflow's conditions: Running turns False as the job ends
            set_condition(job, condition("Running", "False", reason, message))
        set_condition(job, condition(outcome, "True", reason, message))
        job.finished = time.monotonic()
        if clean and clean != "None":
            self.delete_pods(job, clean)
        if self.s.podgroups is not None:
            self.s.podgroups.delete(job)
        self.s.finished(job)

    def start(self, job: "Tracked") -> None:
        raise NotImplementedError

    def tick(self, job: "Tracked") -> None:
        raise NotImplementedError


def past_backoff_limit(failed: int, pods: list[PodSim], limit: int) -> bool:
    """The Job controller's backoff (``job_controller.go``): more ``failed`` pods than ``limit``, or
    (``pastBackoffLimitOnFailure``) the restarts of the running and pending pods' containers reaching
    it (any restart when it is 0)."""
    restarts = sum(b.restarts for p in pods if p.phase in ("Running", "Pending") for b in p.boxes)
    return failed > limit or (restarts >= limit if limit else restarts > 0)


def _rank_order(spec: dict) -> list[tuple[str, dict]]:
    return sorted(spec.items(), key=lambda item: ORDER.index(item[0]) if item[0] in ORDER else len(ORDER))


class TrainingOperator(Controller):
    """training-operator v1 (``version``: 1.9.3 or 1.9.4) for PyTorchJob, TFJob, JAXJob, XGBoostJob and MPIJob v1."""

    def __init__(self, standin: "OperatorStandIn", version: str) -> None:
        super().__init__(standin)
        self.version = tuple(int(x) for x in version.split("."))

    def replicas(self, job: "Tracked") -> list[tuple[str, int, dict, str]]:
        specs = (job.obj.get("spec") or {}).get(REPLICA_FIELDS[job.kind]) or {}
        out = []
        for rtype, spec in _rank_order(specs):
            for index in range(int(spec.get("replicas", 1))):
                out.append((rtype, index, spec.get("template") or {}, spec.get("restartPolicy") or "Never"))
        return out

    def start(self, job: "Tracked") -> None:
        set_condition(job, condition("Created", "True", f"{job.kind}Created", f"{job.kind} {job.name} is created."))
        for _rtype, _, template, _ in self.replicas(job):
            if (template.get("spec") or {}).get("restartPolicy"):
                self.s.event(job, "SetPodTemplateRestartPolicy",
                             "Restart policy in pod template will be overwritten by restart policy in replica spec")
                break
        if not self.suspended(job):
            self._run(job)
        self.tick(job)

    def _run(self, job: "Tracked") -> None:
        job.start_time = float(int(time.time()))  # status.startTime: whole seconds
        job.data["port"], job.data["worker_port"] = self.s.free_port(), self.s.free_port()
        job.data["tf_ports"] = {(r, i): self.s.free_port() for r, i, _, _ in self.replicas(job)}
        self._create_missing(job)

    def _create_missing(self, job: "Tracked") -> None:
        existing = {(p.type, p.index) for p in self.live(job)}
        replicas = self.replicas(job)
        gang = self.s.podgroups
        if gang is not None and not gang.sync(job, replicas):
            return  # Volcano: no pod before the PodGroup is Inqueue (see .gang)
        for rank, (rtype, index, template, restart) in enumerate(replicas):
            if (rtype.lower(), index) not in existing:
                if self.s.pod_interval and time.monotonic() - job.data.get("pod_at", -1e9) < self.s.pod_interval:
                    return  # a busy operator: the next pod at a later reconcile (jobs started together interleave)
                job.data["pod_at"] = time.monotonic()
                template = gang.decorate(template, job, rtype) if gang is not None else template
                template = self._init_container(job, rtype, template)
                self.s.create_pod(job, rtype.lower(), index, template, self._env(job, rtype, index, rank, replicas),
                                  restart, self._pod_name(job, rtype, index), self._labels(job, rtype, index),
                                  refused=lambda message: self.s.event(job, "FailedCreatePod", f"Error creating: {message}"))

    def _init_container(self, job: "Tracked", rtype: str, template: dict) -> dict:
        """A PyTorchJob's workers wait for their master (``setInitContainer``): an ``init-pytorch``
        container looks up the master's headless Service until it resolves, as it does only while the
        master is Ready (see ``OperatorStandIn.waiter``)."""
        specs = (job.obj.get("spec") or {}).get(REPLICA_FIELDS[job.kind]) or {}
        if job.kind != "PyTorchJob" or rtype != "Worker" or "Master" not in specs:
            return template
        master = f"{job.name}-master-0"
        command = (f"err=1;for i in $(seq {INIT_TRIES}); do if nslookup {master}; then err=0 && break; fi;"
                   "echo waiting for master; sleep 2; done; exit $err")
        init = {"name": INIT_PYTORCH, "image": INIT_IMAGE, "imagePullPolicy": "IfNotPresent",
                "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}, "requests": {"cpu": "50m", "memory": "10Mi"}},
                "command": ["sh", "-c", command]}
        spec = template.get("spec") or {}
        return {**template, "spec": {**spec, "initContainers": [*(spec.get("initContainers") or []), init]}}

    def _pod_name(self, job: "Tracked", rtype: str, index: int) -> str:
        if job.kind == "MPIJob" and rtype == "Launcher":
            return f"{job.name}-launcher"
        return f"{job.name}-{rtype.lower()}-{index}"

    def _labels(self, job: "Tracked", rtype: str, index: int) -> dict[str, str]:
        labels = {"training.kubeflow.org/job-name": job.name, "training.kubeflow.org/operator-name":
                  f"{job.kind.lower()}-controller", "training.kubeflow.org/replica-type": rtype.lower(),
                  "training.kubeflow.org/replica-index": str(index)}
        # IsMasterRole: the Master or Chief; a JAXJob's worker 0 (jaxjob_controller.go)
        if rtype in ("Master", "Chief") or (job.kind == "JAXJob" and index == 0):
            labels["training.kubeflow.org/job-role"] = "master"
        elif job.kind == "MPIJob" and rtype == "Launcher":
            labels["training.kubeflow.org/job-role"] = "launcher"
        return labels

    def _env(self, job: "Tracked", rtype: str, index: int, rank: int, replicas: list) -> dict[str, str]:
        world = len(replicas)
        if job.kind == "PyTorchJob":  # envvar.go and master.go; nprocPerNode defaults to "auto" (pytorch_defaults.go)
            nproc = str((job.obj.get("spec") or {}).get("nprocPerNode") or "auto")
            port = str(job.data["port"])
            return {"PYTHONUNBUFFERED": "1", "MASTER_PORT": port, "PET_MASTER_PORT": port, "MASTER_ADDR": self.s.host,
                    "PET_MASTER_ADDR": self.s.host, "WORLD_SIZE": str(world * (int(nproc) if nproc.isdigit() else 1)),
                    "RANK": str(rank), "PET_NODE_RANK": str(rank), "PET_NPROC_PER_NODE": nproc, "PET_NNODES": str(world)}
        if job.kind == "JAXJob":  # jax/envvar.go: the coordinator is worker 0, at its jaxjob-port
            return {"PYTHONUNBUFFERED": "1", "COORDINATOR_PORT": str(job.data["port"]), "COORDINATOR_ADDRESS": self.s.host,
                    "NUM_PROCESSES": str(world), "PROCESS_ID": str(index)}
        if job.kind == "XGBoostJob":  # xgboost/xgboost.go: workers ranked after the master
            env = {"MASTER_PORT": str(job.data["port"]), "MASTER_ADDR": self.s.host, "WORLD_SIZE": str(world),
                   "RANK": str(rank), "PYTHONUNBUFFERED": "1"}
            if world > 1:  # LightGBM's: every worker's address and the workers' port
                env |= {"WORKER_PORT": str(job.data["worker_port"]), "WORKER_ADDRS": ",".join([self.s.host] * (world - 1))}
            return env
        if job.kind == "TFJob":
            cluster: dict[str, list[str]] = {}
            for (r, _), port in job.data["tf_ports"].items():
                cluster.setdefault(r.lower(), []).append(f"{self.s.host}:{port}")
            return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": rtype.lower(), "index": index},
                                             "environment": "cloud"})}
        return self.s.mpi_env(job, rtype.lower())

    def tick(self, job: "Tracked") -> None:
        if job.finished is not None:
            return self._after(job)
        if self._suspension(job):
            return self.s.write_job(job)
        pods = self.live(job)
        failed = [p for p in pods if p.phase == "Failed"]
        policy = (job.obj.get("spec") or {}).get("runPolicy") or {}
        clean = policy.get("cleanPodPolicy") or "None"
        # ReconcileJobs: a new failure once the retries exceed backoffLimit (previousRetry + 1 > limit: the
        # work queue's requeues, counted here as failed pods), or OnFailure restarts reaching it (PastBackoffLimit)
        if policy.get("backoffLimit") is not None and past_backoff_limit(len(failed), pods, int(policy["backoffLimit"])):
            return self._exceeds(job, f"Job {job.name} has failed because it has reached the specified backoff limit", clean)
        deadline = policy.get("activeDeadlineSeconds")
        if deadline and job.start_time is not None and time.time() - job.start_time >= deadline:
            return self._exceeds(job, f"Job {job.name} has failed because it was active longer than specified deadline", clean)
        if failed:
            first = failed[0]
            count = sum(p.type == first.type for p in failed)
            message = f"{job.kind} {job.name} is failed because {count} {first.type.capitalize()} replica(s) failed."
            return self.finish(job, "Failed", f"{job.kind}Failed", message, clean)
        if self._succeeded(job, pods):
            # with a master (PyTorchJob, XGBoostJob): "<Kind> <name> is successfully completed."
            headed = job.kind == "XGBoostJob" or job.kind == "PyTorchJob" and any(p.type == "master" for p in pods)
            done = (f"{job.kind} {job.name} is successfully completed." if headed
                    else f"{job.kind} {job.namespace}/{job.name} successfully completed.")
            return self.finish(job, "Succeeded", f"{job.kind}Succeeded", done, clean)
        self._lost_ranks(job, pods)
        self._create_missing(job)  # a pod deleted under a running job is created again
        if any(p.phase == "Running" for p in pods):
            set_condition(job, condition("Running", "True", f"{job.kind}Running", f"{job.kind} {job.name} is running."))
        self.s.write_job(job)

    def _lost_ranks(self, job: "Tracked", pods: list[PodSim]) -> None:
        """MPIJob v1: the launcher reaches its ranks through ``kubectl exec`` into the workers; a
        worker that has ended takes its ranks with it and mpirun fails."""
        if job.kind != "MPIJob":
            return
        ended = next((p for p in pods if p.type == "worker" and p.phase in ("Succeeded", "Failed")), None)
        launcher = next((p for p in pods if p.type == "launcher" and p.phase == "Running"), None)
        if ended is not None and launcher is not None:
            self.s.kubelet.fail(launcher, 1, f"error: cannot exec into a container in a completed pod; "
                                             f"current phase is {ended.phase}\n")

    def _exceeds(self, job: "Tracked", message: str, clean: str) -> None:
        if self.version <= (1, 9, 3):  # kubeflow/trainer#3419: every pod goes before the job is Failed
            self.delete_pods(job, "All")
            clean = "None"
        self.finish(job, "Failed", f"{job.kind}Failed", message, clean)

    def _succeeded(self, job: "Tracked", pods: list[PodSim]) -> bool:
        by_type = {p.type: p for p in pods if p.index == 0}
        for head in ("master", "chief", "launcher"):
            if head in by_type:
                return by_type[head].phase == "Succeeded"
        if job.kind == "TFJob" and "worker" in by_type:
            return by_type["worker"].phase == "Succeeded"
        return bool(pods) and all(p.phase == "Succeeded" for p in pods)

    def _suspension(self, job: "Tracked") -> bool:
        if self.suspended(job):
            if not is_true(job, "Suspended"):
                self.delete_pods(job, "All")
                set_condition(job, condition("Running", "False", f"{job.kind}Suspended", f"{job.kind} {job.name} is suspended."))
                set_condition(job, condition("Suspended", "True", f"{job.kind}Suspended", f"{job.kind} {job.name} is suspended."))
            return True
        if is_true(job, "Suspended") or job.start_time is None:
            if is_true(job, "Suspended"):
                set_condition(job, condition("Suspended", "False", f"{job.kind}Resumed", f"{job.kind} {job.name} is resumed."))
            self._run(job)
        return False

    def _after(self, job: "Tracked") -> None:
        """A finished job whose cleanPodPolicy is Running still stops the pods that keep running."""
        clean = ((job.obj.get("spec") or {}).get("runPolicy") or {}).get("cleanPodPolicy") or "None"
        if clean != "None":
            self.delete_pods(job, clean)


class MpiOperator(Controller):
    """mpi-operator v0.8 for MPIJob v2beta1: worker pods, and the launcher as a batch Job."""

    def spec(self, job: "Tracked") -> dict:
        return job.obj.get("spec") or {}

    def start(self, job: "Tracked") -> None:
        set_condition(job, condition("Created", "True", "MPIJobCreated", f"MPIJob {job.namespace}/{job.name} is created."))
        launcher = self.spec(job)["mpiReplicaSpecs"].get("Launcher") or {}
        if (launcher.get("template", {}).get("spec") or {}).get("restartPolicy"):
            self.s.event(job, "SetPodTemplateRestartPolicy",
                         "Restart policy in pod template overridden by restart policy in replica spec")
        self.tick(job)

    def _workers(self, job: "Tracked") -> None:
        worker = self.spec(job)["mpiReplicaSpecs"].get("Worker") or {}
        existing = {p.index for p in self.live(job, "worker")}
        for index in range(int(worker.get("replicas", 0))):
            if index not in existing:
                labels = {"training.kubeflow.org/job-name": job.name, "training.kubeflow.org/operator-name": "mpi-operator",
                          "training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": str(index)}
                self.s.create_pod(job, "worker", index, worker.get("template") or {}, {"K_MPI_JOB_ROLE": "worker"},
                                  worker.get("restartPolicy") or "Never", f"{job.name}-worker-{index}", labels,
                                  refused=lambda message: self.s.event(job, "MPIJobFailed",
                                                                       f"worker pod created failed: {message}"))

    def _launcher(self, job: "Tracked") -> None:
        """The launcher Job's pods: one at a time, a new one after a failure, up to its backoffLimit."""
        spec = self.spec(job)
        launcher = spec["mpiReplicaSpecs"]["Launcher"]
        pods = [p for p in job.pods if p.type == "launcher"]
        if any(p.stage not in ("gone", "done") for p in pods) or job.data.get("launcher_done"):
            return
        if spec.get("launcherCreationPolicy") == "WaitForWorkersReady" and not all(p.ready for p in self.live(job, "worker")):
            return
        labels = {"training.kubeflow.org/job-name": job.name, "training.kubeflow.org/operator-name": "mpi-operator",
                  "training.kubeflow.org/job-role": "launcher", "batch.kubernetes.io/job-name": f"{job.name}-launcher"}
        job.data.setdefault("launcher_started", time.time())  # the launcher Job's startTime
        self.s.create_pod(job, "launcher", 0, launcher.get("template") or {}, self.s.mpi_env(job, "launcher"),
                          launcher.get("restartPolicy") or "OnFailure", f"{job.name}-launcher-{self.s.suffix()}", labels)

    def tick(self, job: "Tracked") -> None:
        policy = self.spec(job).get("runPolicy") or {}
        clean = policy.get("cleanPodPolicy") or "None"
        if job.finished is not None:
            return self.delete_pods(job, clean) if clean != "None" else None
        if self.suspended(job):
            if not is_true(job, "Suspended"):
                self.delete_pods(job, "All")
                set_condition(job, condition("Suspended", "True", "MPIJobSuspended", "MPIJob suspended"))
            return self.s.write_job(job)
        if is_true(job, "Suspended"):
            set_condition(job, condition("Suspended", "False", "MPIJobResumed", "MPIJob resumed"))
            job.start_time = None
            job.data.pop("launcher_started", None)
        if job.start_time is None:
            job.start_time = time.time()
        self._workers(job)
        outcome = self._launcher_outcome(job, policy)
        if outcome is not None:
            return self.finish(job, *outcome, clean=clean)
        self._launcher(job)
        launchers = [p for p in self.live(job, "launcher") if p.phase == "Running"]
        if launchers and all(p.phase == "Running" for p in self.live(job, "worker")):
            set_condition(job, condition("Running", "True", "MPIJobRunning", f"MPIJob {job.namespace}/{job.name} is running."))
        self.s.write_job(job)

    def _launcher_outcome(self, job: "Tracked", policy: dict) -> tuple[str, str, str] | None:
        pods = [p for p in job.pods if p.type == "launcher"]
        if any(p.phase == "Succeeded" for p in pods):
            job.data["launcher_done"] = True
            return "Succeeded", "MPIJobSucceeded", f"MPIJob {job.namespace}/{job.name} successfully completed."
        # The deadline is the launcher Job's (``newLauncherJob``), the only use of it: none before the
        # launcher exists (under WaitForWorkersReady, not before every worker is Ready).
        deadline, since = policy.get("activeDeadlineSeconds"), job.data.get("launcher_started")
        if deadline and since is not None and time.time() - since >= deadline:
            job.data["launcher_done"] = True
            for pod in self.live(job, "launcher"):
                self.s.delete_pod(pod)
            return "Failed", "DeadlineExceeded", "Job was active longer than specified deadline"
        limit = policy.get("backoffLimit")
        if past_backoff_limit(sum(p.phase == "Failed" for p in pods), pods, 6 if limit is None else int(limit)):
            job.data["launcher_done"] = True
            last = [p for p in pods if p.phase == "Failed"][-1:] or pods[-1:]
            for pod in self.live(job, "launcher"):
                if pod.phase != "Failed":
                    self.s.delete_pod(pod)
            return ("Failed", f"BackoffLimitExceeded/{last[0].reason}" if last else "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit: " + (last[0].message if last else ""))
        return None


class JobController(Controller):
    """The batch/v1 Job controller, for Indexed Jobs."""

    def start(self, job: "Tracked") -> None:
        self.tick(job)

    def tick(self, job: "Tracked") -> None:
        spec = job.obj.get("spec") or {}
        if job.finished is not None:
            return self._expire(job, spec.get("ttlSecondsAfterFinished"))
        if self.suspended(job):
            if not is_true(job, "Suspended"):
                self.delete_pods(job, "Running")
                set_condition(job, condition("Suspended", "True", "JobSuspended", "Job suspended"))
            return self.s.write_job(job)
        if is_true(job, "Suspended"):
            set_condition(job, condition("Suspended", "False", "JobResumed", "Job resumed"))
            job.start_time = None
        if job.start_time is None:
            job.start_time = float(int(time.time()))
        completions = int(spec.get("completions") or spec.get("parallelism") or 1)
        pods = job.pods
        judged = {p.name: judge(spec.get("podFailurePolicy"), p, job.namespace) for p in pods if p.phase == "Failed"}
        fail_job = next((message for action, message in judged.values() if action == "FailJob"), None)
        if fail_job is not None:
            self.delete_pods(job, "Running")
            return self.finish(job, "Failed", "PodFailurePolicy", fail_job, None)
        counted = sum(action == "Count" for action, _ in judged.values())
        if past_backoff_limit(counted, pods, int(spec.get("backoffLimit", 6))):
            self.delete_pods(job, "Running")
            return self.finish(job, "Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit", None)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline and time.time() - job.start_time >= deadline:
            self.delete_pods(job, "Running")
            return self.finish(job, "Failed", "DeadlineExceeded", "Job was active longer than specified deadline", None)
        done = {p.index for p in pods if p.phase == "Succeeded"}
        if len(done) >= completions:
            set_condition(job, condition("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"))
            return self.finish(job, "Complete", "CompletionsReached", "Reached expected number of succeeded pods", None)
        active = {p.index for p in pods if p.phase not in ("Failed", "Succeeded") and p.stage != "gone"}
        parallelism = int(spec.get("parallelism", completions))
        for index in range(completions):
            if index not in done and index not in active and len(active) < parallelism:
                self._pod(job, index)
                active.add(index)
        self.s.write_job(job)

    def _expire(self, job: "Tracked", ttl: int | None) -> None:
        """The TTL-after-finished controller: a finished Job with ``ttlSecondsAfterFinished`` is deleted
        that long after it finished, in the foreground (``ttlafterfinished_controller.go``); the
        garbage collector deletes what it owns."""
        if ttl is None or job.data.get("expired") or time.monotonic() - (job.finished or 0) < ttl:
            return
        job.data["expired"] = True
        try:
            self.s.store.delete(job.key, job.namespace, job.name, "Foreground")
        except ApiError:
            pass

    def _pod(self, job: "Tracked", index: int) -> None:
        template = (job.obj.get("spec") or {}).get("template") or {}
        labels = {"batch.kubernetes.io/job-name": job.name, "job-name": job.name, "controller-uid": job.uid,
                  "batch.kubernetes.io/controller-uid": job.uid, "batch.kubernetes.io/job-completion-index": str(index)}
        self.s.create_pod(job, "worker", index, template, {"JOB_COMPLETION_INDEX": str(index)},
                          (template.get("spec") or {}).get("restartPolicy") or "Never",
                          f"{job.name}-{index}-{self.s.suffix()}", labels)
