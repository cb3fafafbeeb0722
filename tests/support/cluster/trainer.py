"""Kubeflow Trainer v2 with JobSet, as the stand-in plays it (``version`` 2.1 … 2.3): a TrainJob's
JobSet and its node pods, the nodes' environment from the runtime's ML policy, and the TrainJob
validating webhook, against the ClusterTrainingRuntime objects in the store (``install_runtimes`` makes
the release's built-in ones, as its ``runtimes`` overlay does; the fixture calls it unless a test asks for
a Trainer without them); the JobSet's child Job ``<job>-node-0``, which owns the node pods and gets the
Job controller's FailedCreate when one is refused. Sources (kubeflow/trainer at v2.1.0, v2.2.0, v2.3.0;
kubernetes-sigs/jobset v0.12):
the plugins ``pkg/runtime/framework/plugins/{torch,jax,xgboost}/*.go``, ``pkg/webhooks/trainjob_webhook.go``
and ``pkg/runtime/core/clustertrainingruntime.go``, ``manifests/base/runtimes/``, the JobSet webhook's
restartPolicy OnFailure (``jobset_webhook.go``) with the batch default backoffLimit 6, FailedJobs /
AllJobsCompleted, the deadline from creationTimestamp deleting the JobSet (``trainjob_controller.go``),
Suspended/Resumed conditions.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

from .kubelet import quantity
from .operators import JOBSETS, Controller, condition, is_true, past_backoff_limit, set_condition
from .store import ApiError

if TYPE_CHECKING:
    from .standin import OperatorStandIn, Tracked

#: Trainer's built-in ClusterTrainingRuntimes (``manifests/base/runtimes``): the first release that
#: ships each, and its ML policy (``mlPolicy``), which decides what the nodes are given.
TRAINER_RUNTIMES = {"torch-distributed": ((2, 0), "torch"), "deepspeed-distributed": ((2, 0), "mpi"),
                    "mlx-distributed": ((2, 0), "mpi"), "jax-distributed": ((2, 2), "jax"),
                    "xgboost-distributed": ((2, 2), "xgboost")}
#: ``constants.XGBoostReservedEnvNames``: what the xgboost plugin sets and its validation forbids in the trainer's env.
XGBOOST_RESERVED = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")
TRAINER_WEBHOOK = "validator.trainjob.trainer.kubeflow.org"
CLUSTER_RUNTIMES = ("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes")
NAMESPACED_RUNTIMES = ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes")
JOBS = ("batch", "v1", "jobs")
#: ``mlPolicy`` of each built-in runtime (``manifests/base/runtimes/*.yaml``).
ML_POLICIES = {"torch": {"numNodes": 1, "torch": {"numProcPerNode": "auto"}}, "jax": {"numNodes": 1, "jax": {}},
               "xgboost": {"numNodes": 1, "xgboost": {}}, "mpi": {"numNodes": 1, "mpi": {"numProcPerNode": 1}}}


def runtime_object(name: str, policy: str) -> dict[str, Any]:
    """A built-in ClusterTrainingRuntime: its ML policy and a ``node`` replicated job whose container is ``node``."""
    node = {"name": "node", "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                                         "spec": {"template": {"spec": {"containers": [
                                             {"name": "node", "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}]}}}}}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
            "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": name.split("-")[0]}},
            "spec": {"mlPolicy": ML_POLICIES[policy], "template": {"spec": {"replicatedJobs": [node]}}}}


def policy_of(runtime: dict[str, Any]) -> str:
    """The ML policy a runtime object names (``torch`` when it names none of Trainer's plugins)."""
    policy = (runtime.get("spec") or {}).get("mlPolicy") or {}
    return next((p for p in ("torch", "jax", "xgboost", "mpi") if p in policy), "torch")


class TrainerController(Controller):
    """Kubeflow Trainer (``version`` 2.1 … 2.3) with JobSet: a TrainJob's JobSet and its node pods, the
    nodes' environment from the runtime's ML policy, and the TrainJob validating webhook."""

    def __init__(self, standin: "OperatorStandIn", version: str) -> None:
        super().__init__(standin)
        self.version = version
        release = tuple(int(x) for x in version.split("."))
        #: The built-in runtimes of this release (``install_runtimes`` creates them, as the ``runtimes``
        #: overlay or the Helm chart's ``runtimes.*.enabled`` does; a cluster may have none).
        self.builtin = {name: policy for name, (since, policy) in TRAINER_RUNTIMES.items() if release >= since}

    def install_runtimes(self, names: tuple[str, ...] | None = None) -> None:
        """Create the release's built-in ClusterTrainingRuntimes (``names``: only those)."""
        for name, policy in self.builtin.items():
            if names is None or name in names:
                self.s.store.create(CLUSTER_RUNTIMES, "", runtime_object(name, policy))

    def _runtime_object(self, namespace: str, spec: dict) -> dict | None:
        """The (Cluster)TrainingRuntime the TrainJob's ``runtimeRef`` names, if it exists."""
        ref = spec.get("runtimeRef") or {}
        if ref.get("kind") == "TrainingRuntime":
            return self.s.store.find(NAMESPACED_RUNTIMES, namespace, ref.get("name", ""))
        return self.s.store.find(CLUSTER_RUNTIMES, "", ref.get("name", ""))

    def webhook(self, key: tuple, obj: dict) -> dict:
        """``ValidateCreate``: the runtime must exist (``clustertrainingruntime.go``), and on an xgboost
        one the trainer's env must not set what the plugin reserves (``xgboost.go``, ``Validate``)."""
        if key != ("trainer.kubeflow.org", "v1alpha1", "trainjobs"):
            return obj
        spec = obj.get("spec") or {}
        ref = spec.get("runtimeRef") or {}
        name, kind = ref.get("name", ""), ref.get("kind") or "ClusterTrainingRuntime"
        found = self._runtime_object((obj.get("metadata") or {}).get("namespace", ""), spec)
        if found is None:
            what = "trainingruntimes" if kind == "TrainingRuntime" else "clustertrainingruntimes"
            self._deny(f'spec.RuntimeRef: Invalid value: {{"name": "{name}"}}: {what}.trainer.kubeflow.org '
                       f'"{name}" not found: specified {kind[0].lower() + kind[1:]} must be created before the '
                       "TrainJob is created")
        if policy_of(found) == "xgboost":
            for i, env in enumerate((spec.get("trainer") or {}).get("env") or []):
                if env.get("name") in XGBOOST_RESERVED:
                    self._deny(f"spec.trainer.env[{i}]: Forbidden: {env['name']} is reserved for the XGBoost runtime")
        return obj

    def _deny(self, message: str) -> None:
        # controller-runtime answers a validation error 403; the API server prefixes the webhook's name.
        raise ApiError(403, "Forbidden", f'admission webhook "{TRAINER_WEBHOOK}" denied the request: {message}')

    def start(self, job: "Tracked") -> None:
        job.created_wall = float(int(time.time()))  # metadata.creationTimestamp: whole seconds
        self.tick(job)

    def _jobset(self, job: "Tracked") -> dict | None:
        if job.data.get("jobset") is None and not job.data.get("jobset_deleted"):
            owner = {"apiVersion": job.api_version, "kind": "TrainJob", "name": job.name, "uid": job.uid,
                     "controller": True, "blockOwnerDeletion": True}
            body = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                    "metadata": {"name": job.name, "ownerReferences": [owner]}, "spec": {}}
            try:
                job.data["jobset"] = self.s.store.create(JOBSETS, job.namespace, body)
            except ApiError:
                job.data["jobset"] = self.s.store.find(JOBSETS, job.namespace, job.name)
        return job.data.get("jobset")

    def tick(self, job: "Tracked") -> None:
        if job.finished is not None:
            return
        if self._suspension(job):
            return self.s.write_job(job)
        jobset = self._jobset(job)
        spec = job.obj.get("spec") or {}
        deadline = spec.get("activeDeadlineSeconds")
        started = job.data.get("resumed_at", job.created_wall)
        if deadline and time.time() - started >= deadline:
            self._delete_jobset(job)
            return self.finish(job, "Failed", "DeadlineExceeded", "TrainJob exceeded its active deadline", None)
        pods = job.pods
        # the child Job's backoff at the batch default of 6 (the runtime sets none): restarts >= 6
        if past_backoff_limit(sum(p.phase == "Failed" for p in pods), pods, 6):
            self.delete_pods(job, "Running")
            return self.finish(job, "Failed", "FailedJobs", "jobset failed due to one or more job failures", None)
        nodes = int((spec.get("trainer") or {}).get("numNodes", 1))
        if sum(p.phase == "Succeeded" for p in pods) >= nodes:
            return self.finish(job, "Complete", "AllJobsCompleted", "jobset completed successfully", None)
        existing = {p.index for p in self.live(job)}
        for index in range(nodes):
            if index not in existing and jobset is not None:
                self._pod(job, jobset, index, nodes)
        self.s.write_job(job)

    def _suspension(self, job: "Tracked") -> bool:
        if self.suspended(job):
            if not is_true(job, "Suspended"):
                self._delete_jobset(job)
                set_condition(job, condition("Suspended", "True", "Suspended", "TrainJob is suspended"))
            return True
        if is_true(job, "Suspended"):
            set_condition(job, condition("Suspended", "False", "Resumed", "TrainJob is resumed"))
            job.data["resumed_at"] = time.time()
            job.data.pop("jobset_deleted", None)
        return False

    def _delete_jobset(self, job: "Tracked") -> None:
        if job.data.get("jobset") is not None:
            try:
                self.s.store.delete(JOBSETS, job.namespace, job.name, "Background")
            except ApiError:
                pass
        job.data["jobset"], job.data["jobset_deleted"], job.data["child"] = None, True, None

    def _pod(self, job: "Tracked", jobset: dict, index: int, nodes: int) -> None:
        spec = job.obj.get("spec") or {}
        trainer = spec.get("trainer") or {}
        patch = self._patched_pod(spec)
        container = {"name": "node", "image": trainer.get("image", "pytorch/pytorch"),
                     **{k: trainer[k] for k in ("command", "args", "env") if k in trainer}}
        if trainer.get("resourcesPerNode"):
            container["resources"] = trainer["resourcesPerNode"]
        node_patch = next((c for c in (patch.get("spec") or {}).get("containers") or [] if c.get("name") == "node"), {})
        container.update({k: v for k, v in node_patch.items() if k not in ("name", "env")})
        pod_spec = {**(patch.get("spec") or {}), "containers": [container]}
        template = {"metadata": patch.get("metadata") or {}, "spec": pod_spec}
        if "port" not in job.data:
            job.data["port"] = self.s.free_port()
        env = {**self._policy_env(job, index, nodes), "JOB_COMPLETION_INDEX": str(index)}
        labels = {"jobset.sigs.k8s.io/jobset-name": job.name, "jobset.sigs.k8s.io/replicatedjob-name": "node",
                  "jobset.sigs.k8s.io/job-index": "0", "batch.kubernetes.io/job-completion-index": str(index),
                  "batch.kubernetes.io/job-name": f"{job.name}-node-0",
                  "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
        child = self._child_job(job, jobset, template, nodes)
        owner = {"apiVersion": child["apiVersion"], "kind": child["kind"], "name": child["metadata"]["name"],
                 "uid": child["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
        self.s.create_pod(job, "node", index, template, env, "OnFailure",
                          f"{job.name}-node-0-{index}-{self.s.suffix()}", labels, owner,
                          refused=lambda message: self.s.event(child, "FailedCreate", f"Error creating: {message}"))

    def _child_job(self, job: "Tracked", jobset: dict, template: dict, nodes: int) -> dict:
        """The JobSet's child Job ``<jobset>-node-0`` (an Indexed Job of the nodes, owned by the JobSet,
        labelled with its names), whose pods the nodes are: the Job controller's events (FailedCreate)
        are about it. The stand-in's Job controller leaves it to this controller."""
        if job.data.get("child") is None:
            labels = {"jobset.sigs.k8s.io/jobset-name": job.name, "jobset.sigs.k8s.io/replicatedjob-name": "node",
                      "jobset.sigs.k8s.io/job-index": "0"}
            owner = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": job.name,
                     "uid": jobset["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
            pod = {"metadata": {"labels": {**((template.get("metadata") or {}).get("labels") or {}), **labels}},
                   "spec": {**template["spec"], "restartPolicy": "OnFailure"}}
            body = {"apiVersion": "batch/v1", "kind": "Job",
                    "metadata": {"name": f"{job.name}-node-0", "labels": labels, "ownerReferences": [owner]},
                    "spec": {"completionMode": "Indexed", "completions": nodes, "parallelism": nodes, "backoffLimit": 6,
                             "template": pod}}
            try:
                job.data["child"] = self.s.store.create(JOBS, job.namespace, body)
            except ApiError:
                job.data["child"] = self.s.store.find(JOBS, job.namespace, body["metadata"]["name"])
        return job.data["child"]

    def _policy_env(self, job: "Tracked", index: int, nodes: int) -> dict[str, str]:
        """What the runtime's ML policy plugin gives node ``index`` (rank 0's address: the one node here)."""
        trainer = (job.obj.get("spec") or {}).get("trainer") or {}
        resources = trainer.get("resourcesPerNode") or {}
        runtime = self._runtime_object(job.namespace, job.obj.get("spec") or {})
        port, policy = str(job.data["port"]), policy_of(runtime) if runtime is not None else "torch"
        if policy == "jax":  # jax.go: the coordinator is node 0's pod
            return {"JAX_NUM_PROCESSES": str(nodes), "JAX_PROCESS_ID": str(index),
                    "JAX_COORDINATOR_ADDRESS": f"{self.s.host}:{port}"}
        if policy == "xgboost":  # xgboost.go: a worker per GPU (one per CPU node); the tracker on node 0
            gpus = _gpus(resources.get("requests") or {}) or _gpus(resources.get("limits") or {})
            return {"DMLC_TRACKER_URI": self.s.host, "DMLC_TRACKER_PORT": port, "DMLC_TASK_ID": str(index),
                    "DMLC_NUM_WORKER": str(nodes * max(1, gpus))}
        nproc = trainer.get("numProcPerNode") or ("auto" if _gpus(resources.get("requests") or {}) or
                                                   _gpus(resources.get("limits") or {}) else _cpus(resources))
        return {"PET_NNODES": str(nodes), "PET_NPROC_PER_NODE": str(nproc), "PET_NODE_RANK": str(index),
                "PET_MASTER_ADDR": self.s.host, "PET_MASTER_PORT": port}

    def _patched_pod(self, spec: dict) -> dict[str, Any]:
        """The node pod template the runtime patches give (Trainer ≥ 2.2: ``runtimePatches``)."""
        pod: dict[str, Any] = {}
        for patch in spec.get("runtimePatches") or []:
            for replicated in ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec", {}).get("replicatedJobs") or []:
                if replicated.get("name") == "node":
                    template = ((replicated.get("template") or {}).get("spec") or {}).get("template") or {}
                    pod = _merge(pod, template)
        return pod


def _gpus(amounts: dict) -> int:
    """``GetNumGPUPerNode``: the first resource whose name holds "gpu"."""
    return next((int(float(str(v))) for k, v in amounts.items() if "gpu" in k.lower()), 0)


def _cpus(resources: dict) -> int:
    """``getNumCPUPerNode``: the CPU request, else the limit, rounded up (``Quantity.Value()``), at least 1."""
    cpu = (resources.get("requests") or {}).get("cpu") or (resources.get("limits") or {}).get("cpu")
    return max(1, math.ceil(quantity(cpu))) if cpu else 1


def _merge(base: Any, patch: Any) -> Any:
    """A strategic-merge-like patch: maps merge, lists of named items merge by name, others replace."""
    if isinstance(base, dict) and isinstance(patch, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in patch.items()}}
    if isinstance(base, list) and isinstance(patch, list) and all(isinstance(x, dict) and "name" in x for x in base + patch):
        merged = {x["name"]: x for x in base}
        for item in patch:
            merged[item["name"]] = _merge(merged.get(item["name"]), item)
        return list(merged.values())
    return patch
