"""Reading job and pod objects (pure): terminal conditions of each API, replica names from each
operator's labels, stuck pods, and which replica a failure is blamed on."""

from __future__ import annotations

import pytest

from kubebench.backends.kube import status as st
from kubebench.backends.kube.api import resource_of
from kubebench.backends.kube.config import KubernetesConfig
from kubebench.errors import SpecError


def job(*conditions: tuple[str, str], reason: str = "", message: str = "") -> dict:
    return {"status": {"conditions": [{"type": t, "status": s, "reason": reason, "message": message}
                                      for t, s in conditions]}}


@pytest.mark.parametrize(("conditions", "phase"), [
    ([], "running"),
    ([("Created", "True"), ("Running", "True")], "running"),
    ([("Created", "True"), ("Running", "False"), ("Succeeded", "True")], "succeeded"),  # Kubeflow v1, mpi-operator
    ([("Complete", "True")], "succeeded"),  # batch/v1 Job, TrainJob
    ([("Complete", "False"), ("Failed", "False")], "running"),
    ([("Running", "False"), ("Failed", "True")], "failed"),
    ([("Suspended", "True")], "running"),  # the phase of a suspended job is read from its spec (see below)
    ([("Completed", "True")], "succeeded"),  # a JobSet
])
def test_job_phase_of_each_api(conditions: list, phase: str) -> None:
    assert st.job_phase(job(*conditions))[0] == phase


@pytest.mark.parametrize(("spec", "suspended"), [
    ({"suspend": True}, True),  # batch/v1 Job, TrainJob
    ({"runPolicy": {"suspend": True}}, True),  # Kubeflow v1, MPIJob v2beta1
    ({"runPolicy": {"suspend": False}}, False),
    ({}, False),
])
def test_a_suspended_job_is_told_from_its_spec(spec: dict, suspended: bool) -> None:
    assert st.suspended({"spec": spec}) is suspended


def test_a_failed_condition_gives_its_reason_and_message() -> None:
    assert st.job_phase(job(("Failed", "True"), reason="BackoffLimitExceeded", message="Job has reached\n the limit")) \
        == ("failed", "BackoffLimitExceeded: Job has reached the limit")
    assert st.job_phase(job(("Failed", "True")))[1] == "Failed"
    long = st.job_phase(job(("Failed", "True"), reason="X", message="m" * 1000))[1]
    assert len(long) < 320 and long.endswith("…")


def pod(labels: dict, annotations: dict | None = None, **status) -> dict:
    return {"metadata": {"name": "p", "labels": labels, "annotations": annotations or {}}, "status": status}


@pytest.mark.parametrize(("labels", "name"), [
    ({"training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0",
      "training.kubeflow.org/job-role": "master"}, "master-0"),
    ({"training.kubeflow.org/replica-type": "Worker", "training.kubeflow.org/replica-index": "3"}, "worker-3"),
    ({"training.kubeflow.org/job-role": "launcher"}, "launcher-0"),  # mpi-operator's launcher
    ({"training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": "1"}, "worker-1"),
    ({"batch.kubernetes.io/job-completion-index": "2", "job-name": "j"}, "worker-2"),
    ({"jobset.sigs.k8s.io/replicatedjob-name": "node", "batch.kubernetes.io/job-completion-index": "1"}, "node-1"),
])
def test_replica_names_from_each_operators_labels(labels: dict, name: str) -> None:
    assert st.replica_name(pod(labels)) == name


def test_completion_index_annotation_of_older_clusters() -> None:
    assert st.replica_name(pod({}, {"batch.kubernetes.io/job-completion-index": "4"})) == "worker-4"


def waiting(reason: str, init: bool = False) -> dict:
    statuses = [{"name": "c", "state": {"waiting": {"reason": reason, "message": "because"}}}]
    return pod({}, **({"initContainerStatuses": statuses} if init else {"containerStatuses": statuses}))


def test_stuck_pods_are_recognised() -> None:
    unschedulable = pod({}, conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                         "message": "0/3 nodes are available"}])
    assert st.problem(unschedulable) == ("Unschedulable", "0/3 nodes are available")
    assert st.problem(waiting("ImagePullBackOff")) == ("ImagePullBackOff", "because")
    assert st.problem(waiting("CrashLoopBackOff", init=True)) == ("CrashLoopBackOff", "because")
    assert st.problem(waiting("ContainerCreating")) is None
    assert st.problem(pod({}, conditions=[{"type": "PodScheduled", "status": "True"}])) is None


def terminated(labels: dict, code: int) -> dict:
    return pod(labels, containerStatuses=[{"name": "c", "state": {"terminated": {"exitCode": code}}}])


def test_a_failure_is_blamed_on_the_first_failed_replica_in_rank_order() -> None:
    index = "training.kubeflow.org/replica-index"
    rtype = "training.kubeflow.org/replica-type"
    pods = [terminated({rtype: "worker", index: "10"}, 2), terminated({rtype: "worker", index: "2"}, 3),
            terminated({rtype: "master", index: "0"}, 0)]
    assert st.failure_reason("PyTorchJobFailed", pods) == ("worker-2 exited with code 3; job failed: PyTorchJobFailed", 3)
    assert st.failure_reason("DeadlineExceeded", []) == ("job failed: DeadlineExceeded", None)
    assert st.started(pods[0]) and not st.started(waiting("ContainerCreating"))


def test_resources_of_each_kind_and_refusal_of_process() -> None:
    plural = lambda api, kind: resource_of({"apiVersion": api, "kind": kind}).plural  # noqa: E731
    assert plural("kubeflow.org/v1", "PyTorchJob") == "pytorchjobs"
    assert plural("kubeflow.org/v2beta1", "MPIJob") == "mpijobs"
    assert plural("trainer.kubeflow.org/v1alpha1", "TrainJob") == "trainjobs"
    assert plural("batch/v1", "Job") == "jobs"
    with pytest.raises(SpecError, match="cannot run on Kubernetes"):
        resource_of({"apiVersion": "kubebench/v1", "kind": "Process"})


def test_config_durations_and_defaults() -> None:
    config = KubernetesConfig(unschedulable_grace="2m", storage={"claim": "data"})
    assert config.unschedulable_grace == 120 and config.storage.mount_path == "/kubebench"
    assert config.namespace is None and config.keep_jobs is False and config.propagation == "Background"
    with pytest.raises(ValueError):
        KubernetesConfig(namespace="Not_A_Namespace")
