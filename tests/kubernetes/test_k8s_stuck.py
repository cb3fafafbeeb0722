"""Pods that cannot start (review finding MED-8): by class of problem, so that the kubelet moving
between the reasons of one class does not reset the clock; containers stuck being created and jobs
that get no pods, with what their events say; GPU pods given the time an autoscaler needs."""

from __future__ import annotations

import textwrap
import time

import pytest
from support.cluster.cluster import Cluster

QUICK = "import kubebench; kubebench.report(v=1)"


def spec(grace: str = "1s", resources: str = "{cpu: 1}", image: str = "python:3.11-slim", timeout: str = "40s",
         extra: str = "") -> str:
    return textwrap.dedent(f"""
        name: stuck
        job:
          kind: PyTorchJob
          workers: 1
          image: {image}
          command: [python, -c, "{QUICK}"]
          resources: {resources}
        backend: {{kind: kubernetes, unschedulable_grace: {grace}{extra}}}
        metrics: [{{name: v}}]
        timeout: {timeout}
        """)


def test_an_image_pull_failing_both_ways_is_stuck_after_the_grace(cluster: Cluster, run_spec) -> None:
    # the kubelet alternates ErrImagePull and ImagePullBackOff every 0.2 s here: one class of problem
    started = time.monotonic()
    (run,) = run_spec(spec(grace="1s", image="registry.example/does-not-exist:1")).runs
    assert run.status == "failed"
    assert run.reason.startswith(f"pod kb-{run.run_id}-master-0: ") and "(timed out" not in run.reason
    assert "ImagePullBackOff" in run.reason or "ErrImagePull" in run.reason
    assert time.monotonic() - started < 20


def test_a_container_that_cannot_be_created_is_stuck_with_the_event_that_says_why(cluster: Cluster, run_spec) -> None:
    cluster.operator.kubelet.unmountable.add("kubebench")  # the claim's NFS server does not answer
    (run,) = run_spec(spec(grace="1s")).runs
    assert run.status == "failed" and "(timed out" not in run.reason
    assert run.reason.startswith(f"pod kb-{run.run_id}-master-0: ContainerCreating: FailedMount: "
                                 'MountVolume.SetUp failed for volume "kubebench"')


#: What each operator records when the API server refuses its pod (review 2026-12-02 M-E): training-operator
#: v1 FailedCreatePod on the job, mpi-operator MPIJobFailed on the MPIJob, the Job controller FailedCreate on
#: the batch Job, for a TrainJob on its JobSet's child Job.
REFUSED = {"PyTorchJob": "FailedCreatePod: Error creating: pods ", "Job": "FailedCreate: Error creating: pods ",
           "MPIJob": "MPIJobFailed: worker pod created failed: pods ", "TrainJob": "FailedCreate: Error creating: pods "}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_job_that_gets_no_pods_is_stuck_with_the_event_that_says_why(cluster: Cluster, run_spec, kind: str) -> None:
    cluster.operator.refuse_pods = ('violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
                                    '(container "pytorch" must set securityContext.allowPrivilegeEscalation=false)')
    (run,) = run_spec(spec(grace="1s").replace("kind: PyTorchJob", f"kind: {kind}")).runs
    assert run.status == "failed" and "(timed out" not in run.reason
    assert run.reason.startswith(f"{kind} bench/kb-{run.run_id} has no pods: {REFUSED[kind]}"), run.reason
    assert 'violates PodSecurity "restricted:latest"' in run.reason


def test_a_gpu_pod_waits_for_the_autoscaler_beyond_the_grace(cluster: Cluster, run_spec) -> None:
    cluster.operator.kubelet.autoscale["nvidia.com/gpu"] = (4.0, "8")  # a GPU node is up after 4 s
    (run,) = run_spec(spec(grace="1s", resources="{gpu: 1}", extra=", scale_up_grace: 30s")).runs
    assert run.status == "succeeded", run.reason


def test_a_cpu_pod_waits_for_the_autoscaler_when_its_events_say_it_scales_up(cluster: Cluster, run_spec) -> None:
    cluster.operator.kubelet.autoscale["cpu"] = (4.0, "2000")
    (run,) = run_spec(spec(grace="1s", resources="{cpu: 1000}", extra=", scale_up_grace: 30s")).runs
    assert run.status == "succeeded", run.reason


def test_a_preempted_pod_created_again_by_its_operator_makes_the_failure_the_infrastructures(
        cluster: Cluster, run_spec, tmp_path) -> None:
    marker = tmp_path / "preempted"
    code = ("import os, sys, time, kubebench; out = os.environ['KUBEBENCH_EXP_OUTPUT_PATH'] + '/started-' + os.environ['RANK']; "
            "again = os.path.exists(out); open(out, 'w').close(); "
            f"again and sys.exit('rendezvous with the old peers failed'); os.path.exists('{marker}') or time.sleep(60); "
            "kubebench.report(v=1)")
    operator = cluster.operator

    def preempt_master() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            started = list(cluster.home.glob("experiments/exp-1/*/output/started-*"))
            for job in list(operator.jobs.values()):
                if len(started) == 2 and len(job.replicas) == 2 and all(p.phase == "Running" for p in job.replicas):
                    marker.touch()
                    operator.preempt_pod(next(p for p in job.replicas if p.type == "master"))
                    return
            time.sleep(0.05)

    import threading

    threading.Thread(target=preempt_master, daemon=True).start()
    text = spec(grace="30s").replace("workers: 1", "workers: 2").replace(QUICK, code) + "retries: 1\n"
    ran = run_spec(text)
    (run,) = ran.runs
    assert (run.status, run.attempts) == ("succeeded", 2), run.reason
    (attempts,) = ran.store.attempts(ran.experiment_id).values()
    assert attempts[0].reason.startswith("master-0 preempted (PreemptionByScheduler)")
