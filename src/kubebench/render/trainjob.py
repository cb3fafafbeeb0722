"""Kubeflow Trainer v2's TrainJob from the shorthand: the trainer (image, command, env, nodes and their
resources) on the (Cluster)TrainingRuntime ``job.runtime`` names (``torch-distributed`` unless
another), and kubebench's runtime patch, the one way to reach the nodes' pods.

What each built-in runtime gives its nodes comes from its ML policy (Trainer v2.3,
``manifests/base/runtimes``): ``torch`` torchrun's ``PET_*``, ``jax`` the ``JAX_*`` of
``jax.distributed``, ``xgboost`` the ``DMLC_*`` of XGBoost's tracker (which it reserves: a TrainJob
setting one is refused by Trainer's webhook, so the shorthand refuses it first). A runtime of another
name (one of the cluster's own) is taken as written; locally it runs as a torch one.
"""

from __future__ import annotations

from typing import Any

from ..errors import SpecError
from ..rules import DEFAULT_RUNTIME
from .pods import JobShape, scheduling, torchrun

#: The `manager` of the TrainJob runtime patch through which kubebench reaches the pods.
PATCH_MANAGER = "kubebench.io/kubebench"
#: Name of the replicated job and of the container of the trainer's nodes in Trainer's runtimes.
TRAINER_NODE = "node"
#: Trainer v2.3's built-in ClusterTrainingRuntimes and the ML policy of each (jax and xgboost since v2.2).
RUNTIME_POLICIES = {"torch-distributed": "torch", "jax-distributed": "jax", "xgboost-distributed": "xgboost",
                    "deepspeed-distributed": "mpi", "mlx-distributed": "mpi"}
#: A TrainJob's command runs in a folder through this shell script (``$0``: the folder, ``$@``: the
#: command): a runtime patch cannot set the node container's ``workingDir`` (Trainer v2.3's CRD allows
#: only ``env``, ``name``, ``securityContext`` and ``volumeMounts`` there), and ``trainer`` has none.
IN_FOLDER = 'cd "$0" && exec "$@"'
#: What the xgboost plugin injects and its webhook forbids in ``spec.trainer.env`` (``XGBoostReservedEnvNames``).
XGBOOST_RESERVED_ENV = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")


def runtime_of(manifest: dict[str, Any]) -> str:
    """The runtime a TrainJob manifest names."""
    return str(((manifest.get("spec") or {}).get("runtimeRef") or {}).get("name") or DEFAULT_RUNTIME)


def policy_of(runtime: str) -> str:
    """The ML policy of a runtime by its name: a built-in's, else ``torch``."""
    return RUNTIME_POLICIES.get(runtime, "torch")


def build(job: JobShape, container: dict[str, Any], deadline: int) -> tuple[str, str, dict[str, Any]]:
    """The TrainJob of the shorthand."""
    reserved = [k for k, _ in job.env if k in XGBOOST_RESERVED_ENV]
    if reserved and policy_of(job.runtime) == "xgboost":
        raise SpecError(f"job.env: {', '.join(reserved)} is reserved for the XGBoost runtime "
                        f"({job.runtime!r}): Trainer sets it on every node and refuses a TrainJob that does")
    gpus = next((v for k, v in job.resources if k in ("gpu", "nvidia.com/gpu")), "0")
    if policy_of(job.runtime) == "xgboost" and _number(gpus) > 1:
        raise SpecError(f"job.resources.gpu: {gpus} per node on {job.runtime!r}: Trainer counts one XGBoost worker "
                        "per GPU (DMLC_NUM_WORKER = nodes x GPUs) but a node runs its command once, so the tracker "
                        "would wait for workers that never come; give each node one GPU and more workers")
    trainer: dict[str, Any] = {"image": job.image, "command": list(job.command), "numNodes": job.workers}
    if policy_of(job.runtime) == "torch":
        # Trainer's torch plugin gives the number as PET_NPROC_PER_NODE (unset, it gives "auto" with GPUs
        # and the CPU count without); torchrun starts that many ranks on each node.
        trainer |= {"command": torchrun(job.command, job.processes), "numProcPerNode": job.processes}
    if "env" in container:
        trainer["env"] = container["env"]
    if "resources" in container:
        trainer["resourcesPerNode"] = container["resources"]
    spec: dict[str, Any] = {"runtimeRef": {"name": job.runtime}, "trainer": trainer, "activeDeadlineSeconds": deadline}
    placement = scheduling(job)
    if placement:
        node_pod(spec)["spec"].update(placement)
    return "trainer.kubeflow.org/v1alpha1", "TrainJob", spec


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0  # not a count: the API server says so


def run_in(spec: dict[str, Any], folder: str) -> None:
    """Run the trainer's command in ``folder`` (``sh -c 'cd "$0" && exec "$@"' <folder> <command>…``),
    once; a TrainJob without a command (the runtime's own) is left as it is."""
    trainer = spec.get("trainer") or {}
    command = trainer.get("command")
    if command and command[:3] != ["sh", "-c", IN_FOLDER]:
        trainer["command"] = ["sh", "-c", IN_FOLDER, folder, *command]


def node_pod(spec: dict[str, Any]) -> dict[str, Any]:
    """The pod template of the trainer's nodes in kubebench's runtime patch (created if missing).

    Kubeflow Trainer v2 reaches a TrainJob's pods only through ``runtimePatches``; the trainer's
    container there is the one named ``node``.
    """
    patches = spec.setdefault("runtimePatches", [])
    patch = next((p for p in patches if p.get("manager") == PATCH_MANAGER), None)
    if patch is None:
        patch = {"manager": PATCH_MANAGER}
        patches.append(patch)
    jobs = patch.setdefault("trainingRuntimeSpec", {}).setdefault("template", {}).setdefault("spec", {})
    replicated = jobs.setdefault("replicatedJobs", [])
    node = next((j for j in replicated if j.get("name") == TRAINER_NODE), None)
    if node is None:
        node = {"name": TRAINER_NODE}
        replicated.append(node)
    pod: dict[str, Any] = node.setdefault("template", {}).setdefault("spec", {}).setdefault("template", {})
    pod.setdefault("spec", {})
    return pod
