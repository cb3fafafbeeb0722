"""What every kind's manifest is built from: the shorthand's values once a trial's parameters are in
(:class:`JobShape`), its container, its pod template, a Kubeflow replica spec and run policy, and the
job's own deadline.

- ``restartPolicy`` is set on a Kubeflow replica spec only (in the pod template too, the operators
  warn on every pod);
- the job's own deadline is the run's timeout plus a margin, so that kubebench's clock always fires
  first and reads the logs before anything is deleted (the operators count from creation or from
  their first reconcile, to the second).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from ..rules import DEFAULT_RUNTIME
from . import serving

#: The job's activeDeadlineSeconds exceeds the run's timeout by this much (seconds, or share of it).
DEADLINE_MARGIN_S, DEADLINE_MARGIN_SHARE = 60, 0.1
MPI_API_VERSIONS = ("kubeflow.org/v2beta1", "kubeflow.org/v1")
#: How the shorthand's ``resources`` names GPUs (``gpu`` is ``nvidia.com/gpu``).
GPU_KEYS = ("gpu", "nvidia.com/gpu", "amd.com/gpu")
#: Commands that are torchrun already.
TORCHRUN = ("torchrun",)


@dataclass(frozen=True)
class JobShape:
    """The concrete values of the job shorthand once a trial's parameters are filled in."""

    kind: str
    workers: int
    image: str
    command: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    resources: tuple[tuple[str, str], ...]
    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[dict[str, Any], ...] = ()
    mpi_api_version: str = MPI_API_VERSIONS[0]
    #: ``kind: Serving``: the server; ``workers`` then counts load-generator replicas.
    server: serving.ServerShape | None = None
    #: ``kind: TrainJob``: the (Cluster)TrainingRuntime it runs on.
    runtime: str = DEFAULT_RUNTIME
    #: Processes (ranks) each replica starts (``job.processes_per_replica`` resolved: see :func:`processes`).
    processes: int = 1


def container(job: JobShape, name: str) -> dict[str, Any]:
    """The job's one container, named ``name``: image, command, env and resources (requests = limits)."""
    spec: dict[str, Any] = {"name": name, "image": job.image}
    spec["command"] = list(job.command)
    if job.env:
        spec["env"] = [{"name": k, "value": v} for k, v in job.env]
    if job.resources:
        amounts = {("nvidia.com/gpu" if k == "gpu" else k): v for k, v in job.resources}
        spec["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    return spec


def gpus(resources: tuple[tuple[str, str], ...]) -> int:
    """The GPUs one replica asks for in the shorthand's ``resources`` (0 when none, or not a number)."""
    for key, value in resources:
        if key in GPU_KEYS:
            try:
                return max(0, int(float(value)))
            except ValueError:
                return 0  # not a count: the API server says so
    return 0


def torchrun(command: tuple[str, ...], processes: int) -> list[str]:
    """``command`` started as ``processes`` ranks of one pod by ``torchrun --nproc-per-node``, which
    takes the nodes, this node's rank and rank 0's address from the operator's ``PET_*`` variables
    (training-operator v1's PyTorchJob and Trainer's torch plugin give them). A command that is
    torchrun already is left as written (it reads ``PET_NPROC_PER_NODE`` itself), and so is one rank."""
    if processes == 1 or command[0] in TORCHRUN or command[:3] == ("python", "-m", "torch.distributed.run"):
        return list(command)
    head = ["torchrun", f"--nproc-per-node={processes}"]
    if command[0] in ("python", "python3") and len(command) > 2 and command[1] == "-m":
        return [*head, "-m", *command[2:]]  # torchrun runs a module with its own interpreter
    if command[0] in ("python", "python3") and len(command) > 1 and not command[1].startswith("-"):
        return [*head, *command[1:]]  # and a script
    return [*head, "--no-python", *command]


def cpu_quantity(value: object) -> float:
    """A Kubernetes CPU quantity (``2``, ``"500m"``, ``"1.5"``) in cores."""
    text = str(value).strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0


def scheduling(job: JobShape) -> dict[str, Any]:
    """The pod spec's node selector and tolerations, where the shorthand has them."""
    spec: dict[str, Any] = {}
    if job.node_selector:
        spec["nodeSelector"] = dict(job.node_selector)
    if job.tolerations:
        spec["tolerations"] = copy.deepcopy(list(job.tolerations))
    return spec


def active_deadline(timeout: float) -> int:
    """The job's activeDeadlineSeconds for a run's ``timeout``: later than kubebench's own clock."""
    return max(1, math.ceil(timeout + max(DEADLINE_MARGIN_S, DEADLINE_MARGIN_SHARE * timeout)))


def pod(spec: dict[str, Any], job: JobShape, restart: bool = True) -> dict[str, Any]:
    """A pod template of one container ``spec`` (copied: shared objects would become YAML aliases and
    share later edits), with ``restartPolicy: Never`` unless ``restart`` is off."""
    pod_spec = {**({"restartPolicy": "Never"} if restart else {}), "containers": [copy.deepcopy(spec)], **scheduling(job)}
    return {"spec": pod_spec}


def replica(count: int, spec: dict[str, Any], job: JobShape) -> dict[str, Any]:
    """A Kubeflow replica spec: the operators take restartPolicy from here and warn when the template has one too."""
    return {"replicas": count, "restartPolicy": "Never", "template": pod(spec, job, restart=False)}


def run_policy(deadline: int, clean: str = "None") -> dict[str, Any]:
    """A Kubeflow ``runPolicy``: the deadline and what to delete once the job has ended."""
    return {"activeDeadlineSeconds": deadline, "cleanPodPolicy": clean}
