"""Failure reasons and retries on Kubernetes (emulator + operator stand-in): an OOMKilled container,
an evicted pod and an API server error are told apart; only the last two are the infrastructure's
and are tried again (`retries`), each attempt recorded; SIGTERM deletes the jobs in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.cluster.emulator import Faults
from support.runs import workload_metrics
from support.timing import wait_for

PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
SPEC = """
name: k8s-reasons
job:
  kind: PyTorchJob
  workers: {workers}
  command: [python, -c, "{code}"]
backend: {{kind: kubernetes, api_retries: 1}}
retries: 2
metrics: [{{name: v}}]
"""


def spec(code: str, workers: int = 1) -> str:
    return SPEC.format(code=code, workers=workers)


def attempts(ran) -> list[tuple[int, str]]:
    (found,) = ran.store.attempts(ran.experiment_id).values()
    return [(a.attempt, a.status) for a in found]


def test_an_oomkilled_container_is_out_of_memory_and_not_retried(cluster: Cluster, run_spec) -> None:
    # what the kubelet reports when the container's cgroup ran out of memory: SIGKILL, OOMKilled
    cluster.operator.kubelet.oom_on_sigkill = True
    ran = run_spec(spec("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    (run,) = ran.runs
    assert (run.status, run.exit_code) == ("failed", 137)
    assert run.reason.startswith("master-0 out of memory (OOMKilled): exited with code 137; job failed: PyTorchJobFailed")
    assert attempts(ran) == [(1, "failed")]


def test_a_workload_failure_is_not_retried(cluster: Cluster, run_spec) -> None:
    ran = run_spec(spec("import sys; sys.exit(1)"))
    (run,) = ran.runs
    assert run.reason.startswith("master-0 exited with code 1; job failed:")
    assert attempts(ran) == [(1, "failed")]


def test_an_api_server_error_on_create_is_retried(cluster: Cluster, run_spec) -> None:
    cluster.api.faults = Faults(rate=1.0, kinds=(500,), methods=("POST",), limit=1, path="pytorchjobs")
    ran = run_spec(spec("import kubebench; kubebench.report(v=1)"))
    (run,) = ran.runs
    assert (run.status, workload_metrics(run.metrics), run.attempts) == ("succeeded", {"v": 1.0}, 2)
    (found,) = ran.store.attempts(ran.experiment_id).values()
    assert [(a.attempt, a.status) for a in found] == [(1, "failed"), (2, "succeeded")]
    assert found[0].reason == (f"create PyTorchJob bench/kb-{run.run_id}: HTTP 500 Internal Server Error: "
                               "injected fault: please try again")


def test_an_evicted_pod_is_retried(cluster: Cluster, run_spec, tmp_path: Path) -> None:
    second = tmp_path / "second-attempt"
    code = f"import os, time, kubebench; os.path.exists('{second}') or time.sleep(60); kubebench.report(v=1)"
    evictor = threading.Thread(target=_evict_first_job, args=(cluster, second), daemon=True)
    evictor.start()
    ran = run_spec(spec(code, workers=2))
    evictor.join(timeout=5)
    (run,) = ran.runs
    assert (run.status, run.attempts) == ("succeeded", 2), run.reason
    (found,) = ran.store.attempts(ran.experiment_id).values()
    assert [(a.attempt, a.status) for a in found] == [(1, "failed"), (2, "succeeded")]
    assert found[0].reason.startswith("master-0 evicted (TerminationByKubelet): The node was low on resource: memory.")
    assert cluster.api.store.list(PYTORCHJOBS, cluster.namespace)[0] == []


def _evict_first_job(cluster: Cluster, second: Path) -> None:
    """Evict the first job's master pod once it runs, as the kubelet does under memory pressure."""
    operator = cluster.operator
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for job in list(operator.jobs.values()):
            if job.finished is None and job.replicas and all(r.state == "running" for r in job.replicas):
                second.touch()
                operator.evict(next(r for r in job.replicas if r.type == "master"))
                return
        time.sleep(0.02)


@pytest.mark.slow
def test_sigterm_on_the_runner_deletes_the_job_in_flight(cluster: Cluster, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kubebench.cli import app

    path = tmp_path / "long.yaml"
    path.write_text("name: long\njob:\n  kind: PyTorchJob\n  workers: 2\n"
                    "  command: [python, -c, \"import time; time.sleep(120)\"]\nbackend: {kind: kubernetes}\n")
    runner = subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(path), "--id", "term-k8s"],
                              env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len([p for p in cluster.operator.processes() if p.poll() is None]) < 2:
            assert time.monotonic() < deadline and runner.poll() is None, runner.communicate()
            time.sleep(0.05)
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 143, out + err
    assert "interrupted (SIGTERM)" in err and "resume with:" in err and " --id term-k8s\n" in err and "Traceback" not in err
    assert cluster.api.store.list(PYTORCHJOBS, cluster.namespace)[0] == []
    wait_for(lambda: all(p.poll() is not None for p in cluster.operator.processes()))  # the kubelet stops them
    runs = json.loads(CliRunner().invoke(app, ["results", "term-k8s", "--format", "json"]).output)
    assert [(r["status"], r["reason"]) for r in runs] == [("cancelled", "cancelled by the user")]



def _pod(rtype: str, index: int, **status) -> dict:
    labels = {"training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": str(index)}
    return {"metadata": {"name": f"p-{rtype}-{index}", "labels": labels}, "status": status}


def _terminated(code: int, reason: str, last: bool = False) -> list[dict]:
    state = {"terminated": {"exitCode": code, "reason": reason}}
    return [{"name": "main", **({"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": state}
                                if last else {"state": state})}]


def test_container_failures_and_disruptions_in_words() -> None:
    from kubebench.backends.kube import status as st

    oom = _pod("worker", 0, containerStatuses=_terminated(137, "OOMKilled", last=True))
    assert st.failure_reason("PyTorchJobFailed", [oom]) == (
        "worker-0 out of memory (OOMKilled): exited with code 137; job failed: PyTorchJobFailed", 137)
    segv = _pod("master", 0, containerStatuses=_terminated(139, "Error"))
    assert st.failure_reason("F", [oom, segv])[0] == "master-0 exited with code 139 (killed by signal SIGSEGV?); job failed: F"
    preempted = _pod("worker", 1, phase="Failed", conditions=[
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "Preempted by a\n pod"}])
    lost = _pod("worker", 2, phase="Failed", reason="NodeLost", message="Node node-3 which was running pod is unresponsive")
    assert st.disruption([oom, segv]) is None
    assert st.disruption([lost, preempted]) == "worker-1 preempted (PreemptionByScheduler): Preempted by a pod"
    assert st.disruption([lost]) == "worker-2 node lost (NodeLost): Node node-3 which was running pod is unresponsive"


@pytest.mark.slow
def test_a_job_left_running_by_a_killed_runner_is_deleted_before_the_run_is_redone(cluster: Cluster, run_spec,
                                                                                   tmp_path: Path) -> None:
    quick = tmp_path / "quick"
    text = spec(f"import os, time, kubebench; os.path.exists('{quick}') or time.sleep(120); kubebench.report(v=1)")
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    runner = subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(path), "--id", "exp-1"],
                              env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not [p for p in cluster.operator.processes() if p.poll() is None]:
        assert time.monotonic() < deadline and runner.poll() is None, runner.communicate()
        time.sleep(0.05)
    first = list(cluster.operator.processes())
    runner.kill()
    runner.communicate()
    (left,) = cluster.api.store.list(PYTORCHJOBS, cluster.namespace)[0]  # nobody deletes it now

    quick.touch()
    ran = run_spec(text, "exp-1")
    (run,) = ran.runs
    assert (run.status, workload_metrics(run.metrics)) == ("succeeded", {"v": 1.0}), run.reason
    assert [(a.attempt, a.status) for a in ran.store.attempts("exp-1")[run.run_id]] == [
        (1, "interrupted"), (2, "succeeded")]
    assert all(p.poll() is not None for p in first)
    calls = [(r.method, r.code, r.query.get("propagationPolicy")) for r in cluster.api.requests
             if r.method in ("POST", "DELETE") and "pytorchjobs" in r.path]
    # reclaimed (and awaited), submitted, cleaned up
    assert calls[-3:] == [("DELETE", 200, "Foreground"), ("POST", 201, None), ("DELETE", 200, "Background")]
    assert cluster.api.store.list(PYTORCHJOBS, cluster.namespace)[0] == [] and left["metadata"]["name"] == f"kb-{run.run_id}"
