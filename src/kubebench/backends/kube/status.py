"""Reading job and pod objects (pure): has the job ended or is it suspended, which replica failed,
which pod is stuck and by what kind of problem, where a pod ran."""

from __future__ import annotations

from typing import Any, Callable

from ..reasons import exit_reason

#: Condition types that end a job, per API: Kubeflow v1 and mpi-operator use Succeeded/Failed,
#: batch/v1 Jobs and Kubeflow Trainer's TrainJobs use Complete/Failed, JobSets Completed/Failed.
_SUCCEEDED = ("Succeeded", "Complete", "Completed")
_FAILED = ("Failed",)
#: Container waiting reasons that do not mend by themselves, by class of problem: the kubelet moves
#: between the reasons of one class (ErrImagePull ↔ ImagePullBackOff on every pull attempt).
PROBLEM_CLASSES = {
    "ImagePullBackOff": "image", "ErrImagePull": "image", "InvalidImageName": "image", "ErrImageNeverPull": "image",
    "CrashLoopBackOff": "crash", "RunContainerError": "crash",
    "CreateContainerConfigError": "config", "CreateContainerError": "config",
}
STUCK_REASONS = frozenset(PROBLEM_CLASSES)
#: Waiting reasons of a container that has not started yet: stuck only once they last (FailedMount,
#: Multi-Attach of a ReadWriteOnce claim, no IP address left for the pod …).
STARTING_REASONS = frozenset({"ContainerCreating", "PodInitializing"})
_MESSAGE_CHARS = 300
#: Pod reasons (``status.reason``) of a pod that the cluster stopped, not its workload: eviction
#: under node pressure, a node that stopped answering or shut down, preemption.
_DISRUPTED_REASONS = {"Evicted": "evicted", "NodeLost": "node lost", "Shutdown": "node shut down",
                      "NodeShutdown": "node shut down", "Terminated": "node shut down", "Preempting": "preempted",
                      "UnexpectedAdmissionError": "not admitted by its node"}
#: Reasons of the ``DisruptionTarget`` pod condition (Kubernetes 1.26+) in the same words.
_DISRUPTION_TARGET = {"PreemptionByScheduler": "preempted", "PreemptionByKubeScheduler": "preempted",
                      "EvictionByEvictionAPI": "evicted", "TerminationByKubelet": "evicted",
                      "DeletionByTaintManager": "node lost", "DeletionByPodGC": "node lost"}


def suspended(obj: dict[str, Any]) -> bool:
    """Whether the job is suspended (Kueue holds it, or preempted it): ``spec.suspend`` of batch/v1
    Jobs and TrainJobs, ``spec.runPolicy.suspend`` of Kubeflow v1 jobs and MPIJobs."""
    spec = obj.get("spec") or {}
    return bool(spec.get("suspend") or (spec.get("runPolicy") or {}).get("suspend"))


def job_phase(obj: dict[str, Any]) -> tuple[str, str]:
    """``("running"|"succeeded"|"failed", reason)`` from the job's status conditions."""
    conditions = [c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    for condition in conditions:
        if condition.get("type") in _FAILED:
            return "failed", _describe(condition)
    for condition in conditions:
        if condition.get("type") in _SUCCEEDED:
            return "succeeded", ""
    return "running", ""


def _describe(condition: dict[str, Any]) -> str:
    reason, message = condition.get("reason") or "Failed", (condition.get("message") or "").strip()
    return f"{reason}: {_short(message)}" if message else reason


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


def replica_name(pod: dict[str, Any]) -> str:
    """``<replica-type>-<index>`` of a pod, from the labels its operator gives it (as the local backend names it)."""
    meta = pod.get("metadata") or {}
    labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
    rtype = (labels.get("training.kubeflow.org/replica-type") or labels.get("training.kubeflow.org/job-role")
             or labels.get("jobset.sigs.k8s.io/replicatedjob-name") or labels.get("kubebench.io/role") or "worker")
    index = (labels.get("training.kubeflow.org/replica-index")
             or labels.get("batch.kubernetes.io/job-completion-index")
             or notes.get("batch.kubernetes.io/job-completion-index") or "0")
    return f"{rtype.lower()}-{index}"


def rank(pod: dict[str, Any]) -> tuple[int, int, str]:
    """Sort key putting pods in rank order (master or launcher first, then workers by index)."""
    rtype, _, index = replica_name(pod).rpartition("-")
    order = ("master", "chief", "launcher", "node", "worker", "ps", "evaluator")
    return (order.index(rtype) if rtype in order else len(order), int(index) if index.isdigit() else 0, rtype)


def started(pod: dict[str, Any]) -> bool:
    """Whether a container of the pod ever ran (so that it has a log)."""
    for status in container_statuses(pod):
        state = status.get("state") or {}
        if "running" in state or "terminated" in state or status.get("lastState", {}).get("terminated"):
            return True
    return False


def exit_code(pod: dict[str, Any]) -> int | None:
    """The exit code of the pod's first container that ended with one other than 0."""
    terminated = _failed_container(pod)
    return int(terminated["exitCode"]) if terminated else None


def _failed_container(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The ``terminated`` state of the pod's first container that ended with a code other than 0
    (its last run's, when it was restarted since)."""
    for status in container_statuses(pod):
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            terminated = state.get("terminated") or {}
            if terminated.get("exitCode"):
                return terminated
    return None


def container_failure(pod: dict[str, Any]) -> str | None:
    """How the pod's failed container ended: ``out of memory (OOMKilled): exited with code 137``,
    ``exited with code 3``; None if none failed."""
    terminated = _failed_container(pod)
    if terminated is None:
        return None
    code = int(terminated["exitCode"])
    if terminated.get("reason") == "OOMKilled":
        return f"out of memory (OOMKilled): exited with code {code}"
    return exit_reason(code)


def disruption(pods: list[dict[str, Any]], name_of: Callable[[dict[str, Any]], str] | None = None) -> str | None:
    """``<replica> evicted (Evicted): <message>`` when the cluster stopped a pod (eviction,
    preemption, a lost node): a failure of the infrastructure, not of the workload. ``name_of``
    names a pod's replica (default :func:`replica_name`). A pod merely being deleted is not counted
    here (see :mod:`.disruptions`, which tells the cluster's deletions from an operator's)."""
    for pod in sorted(pods, key=rank):
        found = disrupted(pod, deleting=False)
        if found is not None:
            return describe_disruption((name_of or replica_name)(pod), *found)
    return None


#: What a pod being deleted with no other sign of the cluster's is called (see :func:`disrupted`).
TERMINATING = "Terminating"


def disrupted(pod: dict[str, Any], deleting: bool = True) -> tuple[str, str, str | None] | None:
    """``(what, reason, message)`` when the cluster is stopping or has stopped the pod: a
    ``DisruptionTarget`` condition, a pod reason such as ``Evicted``, or (``deleting``) a
    ``deletionTimestamp`` (``("deleted", "Terminating", None)``); None otherwise."""
    status = pod.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            reason = condition.get("reason") or "DisruptionTarget"
            return _DISRUPTION_TARGET.get(reason, "disrupted"), reason, condition.get("message")
    reason = status.get("reason") or ""
    if reason in _DISRUPTED_REASONS:
        return _DISRUPTED_REASONS[reason], reason, status.get("message")
    if deleting and (pod.get("metadata") or {}).get("deletionTimestamp"):
        return "deleted", TERMINATING, None
    return None


def describe_disruption(name: str, what: str, reason: str, message: str | None) -> str:
    """``<replica> <what> (<reason>): <message>``."""
    text = f"{name} {what} ({reason})"
    return f"{text}: {_short(message)}" if message and message.strip() else text


def problem(pod: dict[str, Any]) -> tuple[str, str] | None:
    """``(reason, message)`` if the pod cannot be scheduled or cannot start a container."""
    found = problem_class(pod)
    return (found[1], found[2]) if found and found[0] != "starting" else None


def problem_class(pod: dict[str, Any]) -> tuple[str, str, str] | None:
    """``(class, reason, message)`` of what keeps the pod from running: ``unschedulable``, ``image``,
    ``crash``, ``config``, or ``starting`` (a container still being created)."""
    status = pod.get("status") or {}
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                and condition.get("reason") == "Unschedulable":
            return "unschedulable", "Unschedulable", _short(condition.get("message") or "")
    starting = None
    for container in container_statuses(pod):
        waiting = (container.get("state") or {}).get("waiting") or {}
        reason = waiting.get("reason")
        if reason in PROBLEM_CLASSES:
            return PROBLEM_CLASSES[reason], reason, _short(waiting.get("message") or "")
        if reason in STARTING_REASONS and not container.get("restartCount"):
            starting = starting or ("starting", reason, _short(waiting.get("message") or ""))
    return starting


def requests_gpus(pod: dict[str, Any]) -> bool:
    """Whether a container of the pod asks for a GPU (their nodes often come from an autoscaler)."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        amounts = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        if any(name.endswith("/gpu") and str(value) not in ("0", "") for name, value in amounts.items()):
            return True
    return False


def restarted(pod: dict[str, Any], containers: frozenset[str] | None = None) -> tuple[str, int | None] | None:
    """``(how it ended, exit code)`` of a container of the pod that failed under ``restartPolicy:
    OnFailure`` (ended with a code other than 0, or restarted after that): the workload has failed
    even though its pod runs on, and will run it again. Not for a pod the cluster stops or deletes
    (its SIGTERM's exit code is not the workload's: see :mod:`.disruptions`)."""
    if disrupted(pod) is not None:
        return None
    for status in container_statuses(pod):
        if containers is not None and status.get("name") not in containers:
            continue
        ended = (status.get("state") or {}).get("terminated") or {}
        last = (status.get("lastState") or {}).get("terminated") or {}
        failed = last if status.get("restartCount") and last.get("exitCode") else ended if ended.get("exitCode") else None
        if failed:
            code = int(failed["exitCode"])
            text = f"out of memory (OOMKilled): exited with code {code}" if failed.get("reason") == "OOMKilled" \
                else exit_reason(code)
            again = ", then was restarted in place" if status.get("restartCount") else ""
            return f"{replica_name(pod)} {text}{again} (restartPolicy OnFailure)", code
    return None


def failure_reason(job_reason: str, pods: list[dict[str, Any]]) -> tuple[str, int | None]:
    """Why a failed job failed: the first failed replica and its exit code, then the job's reason."""
    for pod in sorted(pods, key=rank):
        failure = container_failure(pod)
        if failure is not None:
            return f"{replica_name(pod)} {failure}; job failed: {job_reason}", exit_code(pod)
    return f"job failed: {job_reason}", None


def container_statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The statuses of the pod's init containers, then of its containers."""
    status = pod.get("status") or {}
    return (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])


def unfinished(pods: list[dict[str, Any]], name_of: Callable[[dict[str, Any]], str] = replica_name,
               main: frozenset[str] | None = None) -> list[str]:
    """What a job that succeeded left unfinished: replicas that never ran (their init container still
    waiting: training-operator's ``init-pytorch`` waits for the master's address, and a PyTorchJob
    succeeds when its master does) and replicas still running (their log ends where the run stopped
    reading it). Pods that ended or are being deleted are not counted."""
    found = []
    for pod in sorted(pods, key=rank):
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        status = pod.get("status") or {}
        ours = [s for s in status.get("containerStatuses") or [] if main is None or s.get("name") in main]
        if any("running" in (s.get("state") or {}) for s in ours):
            found.append(f"{name_of(pod)} was still running when the job succeeded: its log ends there")
        elif not any(started({"status": {"containerStatuses": [s]}}) for s in ours):
            waiting = next((s["name"] for s in status.get("initContainerStatuses") or []
                            if "terminated" not in (s.get("state") or {})), None)
            where = f"its init container {waiting} had not finished" if waiting else "it had not started"
            found.append(f"{name_of(pod)} never ran: {where} when the job succeeded")
    return found
