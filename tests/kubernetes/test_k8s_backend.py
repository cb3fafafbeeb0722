"""The Kubernetes backend against the emulator and the operator stand-in: success, failures, stuck
pods, cleanup, keeping jobs, resubmission over a leftover, and the API calls it makes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.cluster.emulator import ApiError, Faults
from support.runs import workload_metrics
from support.timing import wait_for

QUICK = """
name: k8s-quick
job:
  kind: {kind}
  workers: {workers}
  image: {image}
  command: [python, -c, "{code}"]
  resources: {resources}
backend: {{kind: kubernetes, unschedulable_grace: {grace}, keep_jobs: {keep}}}
metrics: [{{name: v}}]
timeout: {timeout}
repeats: {repeats}
"""
REPORT = "import os, kubebench; print('rank', os.environ.get('RANK', os.environ.get('JOB_COMPLETION_INDEX'))); kubebench.report(v=1)"


def spec(kind: str = "PyTorchJob", workers: int = 2, code: str = REPORT, image: str = "python:3.11-slim",
         resources: str = "{cpu: 1}", grace: str = "1s", keep: bool = False, timeout: str = "60s", repeats: int = 1) -> str:
    return QUICK.format(kind=kind, workers=workers, code=code, image=image, resources=resources, grace=grace,
                        keep=str(keep).lower(), timeout=timeout, repeats=repeats)


def jobs_left(cluster: Cluster, plural: str = "pytorchjobs", group: str = "kubeflow.org", version: str = "v1") -> list:
    return cluster.api.store.list((group, version, plural), cluster.namespace)[0]


#: Every rank waits for the other before it reports, as a rendezvous does: the master must stay up until
#: its worker left init-pytorch (training-operator ends the job when the master succeeds).
BARRIER = ("import os, time, kubebench; out = os.environ['KUBEBENCH_EXP_OUTPUT_PATH']; "
           "open(out + '/up-' + os.environ['RANK'], 'w').close(); "
           "[time.sleep(0.05) for _ in range(600) if len([f for f in os.listdir(out) if f.startswith('up-')]) < 2]; "
           "print('rank', os.environ['RANK']); kubebench.report(v=1)")


def test_pytorchjob_succeeds_with_logs_per_replica_and_is_deleted(cluster: Cluster, run_spec) -> None:
    ran = run_spec(spec(code=BARRIER))
    (run,) = ran.runs
    assert (run.status, workload_metrics(run.metrics), run.exit_code) == ("succeeded", {"v": 1.0}, 0), (run.reason, run.info)
    output = cluster.home / "experiments" / "exp-1" / run.run_id / "output"
    assert (output / "master-0.log").read_text().startswith("rank 0")
    assert (output / "worker-0.log").read_text().startswith("rank 1")
    assert jobs_left(cluster) == []
    # Background propagation: the garbage collector deletes the pods after the job, a moment later
    wait_for(lambda: cluster.api.store.list(("", "v1", "pods"), cluster.namespace)[0] == [], 30,
             "the job's pods to be garbage collected")


def test_the_run_folders_are_writable_by_a_container_of_any_user(cluster: Cluster, run_spec) -> None:
    # A container running as root on an NFS claim with root_squash is "nobody" there: the folders it
    # writes must be open to every user, as an emptyDir is (review kubernetes.md MED-12)
    code = ("import os, stat, kubebench; names = ('KUBEBENCH_EXP_OUTPUT_PATH', 'KUBEBENCH_EXP_RESULT_PATH', 'KUBEBENCH_DATA_ROOT'); "
            "modes = [stat.S_IMODE(os.stat(os.environ[n]).st_mode) for n in names]; print(modes); "
            "kubebench.report(v=int(all(m == 0o1777 for m in modes)))")
    (run,) = run_spec(spec(workers=1, code=code)).runs
    assert (run.status, workload_metrics(run.metrics)) == ("succeeded", {"v": 1.0}), (run.reason, run.log_tail)


def test_a_failing_replica_fails_the_run_with_its_exit_code_and_log(cluster: Cluster, run_spec) -> None:
    # rank 0 waits for its peer, as a DDP master would
    code = "import os, sys, time; print('worker says bye'); os.environ['RANK'] == '1' and sys.exit(3); time.sleep(60)"
    (run,) = run_spec(spec(code=code)).runs
    assert (run.status, run.exit_code) == ("failed", 3)
    assert run.reason == (f"worker-0 exited with code 3; job failed: PyTorchJobFailed: PyTorchJob kb-{run.run_id} "
                          "is failed because 1 Worker replica(s) failed.")  # training-operator's own words
    assert "worker says bye" in run.log_tail
    assert jobs_left(cluster) == []


def test_a_pod_that_never_schedules_fails_after_the_grace_with_the_reason(cluster: Cluster, run_spec) -> None:
    started = time.monotonic()
    (run,) = run_spec(spec(resources="{cpu: 1000}", grace="1s", timeout="60s")).runs
    assert time.monotonic() - started < 15
    assert run.status == "failed"
    assert run.reason.startswith(f"pod kb-{run.run_id}-master-0: Unschedulable: 0/1 nodes are available: "
                                 "1 Insufficient cpu.") or "worker-0: Unschedulable" in run.reason
    assert jobs_left(cluster) == [] and cluster.operator.processes() == []


def test_a_stuck_pod_is_the_reason_even_when_the_timeout_comes_first(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(spec(resources="{gpu: 1}", grace="10m", timeout="2s")).runs
    assert run.status == "failed"
    assert run.reason.startswith(f"pod kb-{run.run_id}-master-0: Unschedulable: ")
    assert run.reason.endswith("(timed out after 2s)")  # kubebench's clock fires before the job's deadline
    assert jobs_left(cluster) == []


def test_an_image_that_cannot_be_pulled_fails_the_run(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(spec(image="registry.example/does-not-exist:1", grace="0.5s")).runs
    assert run.status == "failed"
    # the kubelet alternates the two reasons: whichever it showed last
    assert (f"pod kb-{run.run_id}-master-0: ImagePullBackOff: Back-off pulling image" in run.reason
            or f"pod kb-{run.run_id}-master-0: ErrImagePull: failed to pull and unpack image" in run.reason)
    assert jobs_left(cluster) == []


def test_kept_jobs_stay_and_a_rerun_replaces_the_leftover(cluster: Cluster, run_spec, tmp_path: Path) -> None:
    marker = tmp_path / "second-time"
    code = f"import os, sys, kubebench; kubebench.report(v=1); sys.exit(0 if os.path.exists('{marker}') else 5)"
    (first,) = run_spec(spec(workers=1, code=code, keep=True)).runs
    assert first.status == "failed"
    (kept,) = jobs_left(cluster)
    marker.write_text("")
    (second,) = run_spec(spec(workers=1, code=code, keep=True)).runs
    assert second.status == "succeeded" and second.run_id == first.run_id
    (job,) = jobs_left(cluster)
    assert job["metadata"]["uid"] != kept["metadata"]["uid"]
    calls = lambda what: [(r.method, r.code) for r in cluster.api.requests  # noqa: E731
                          if r.method in ("POST", "DELETE") and what in r.path]
    assert calls("pytorchjobs") == [("POST", 201), ("POST", 409), ("DELETE", 200), ("POST", 201)]
    # so is the spec folder's ConfigMap, kept with the jobs
    assert calls("configmaps") == [("POST", 201), ("POST", 409), ("DELETE", 200), ("POST", 201)]


@pytest.mark.parametrize(("kind", "logs"), [
    ("Job", ["worker-0", "worker-1"]),
    ("TFJob", ["worker-0", "worker-1"]),
    ("TrainJob", ["node-0", "node-1"]),
    ("MPIJob", ["launcher-0", "worker-0", "worker-1"]),
])
def test_every_kind_runs_with_a_log_per_pod(cluster: Cluster, run_spec, kind: str, logs: list, fake_mpirun) -> None:
    code = "import os, kubebench; print(os.environ.get('TF_CONFIG') or os.environ.get('PET_NODE_RANK') or os.environ.get('JOB_COMPLETION_INDEX') or 'mpi'); kubebench.report(v=1)"
    (run,) = run_spec(spec(kind=kind, code=code)).runs
    assert run.status == "succeeded", run.reason
    output = cluster.home / "experiments" / "exp-1" / run.run_id / "output"
    assert sorted(p.stem for p in output.glob("*.log")) == logs
    first = (output / f"{logs[0]}.log").read_text()
    expected = {"Job": "0", "TrainJob": "0", "MPIJob": "mpi"}.get(kind)
    assert first.splitlines()[0] == expected if expected else json.loads(first.splitlines()[0])["task"]["index"] == 0


def calls(cluster: Cluster) -> dict[str, int]:
    """The emulator's requests by what they were for."""
    found: dict[str, int] = {}
    for r in list(cluster.api.requests):
        if r.watch:
            what = "watch"
        elif r.path.endswith("/log"):
            what = "follow log" if r.query.get("follow") == "true" else "read log"
        elif r.path.rstrip("/") == "/version":
            what = "version"
        elif r.method == "GET" and r.path.count("/") <= 3:
            what = "discovery"
        elif "/nodes/" in r.path:
            what = "read node"
        elif r.path.startswith("/api/v1/namespaces/") and r.path.count("/") == 4:
            what = "read namespace"
        elif r.method == "GET" and "kubebench.io/run=" in r.query.get("labelSelector", ""):
            what = "list a run's pods"
        elif r.method == "GET" and "involvedObject.uid=" in r.query.get("fieldSelector", ""):
            what = "list a pod's events"
        else:
            what = {"POST": "create", "DELETE": "delete"}.get(r.method, "list" if r.path.endswith("s") else "get")
        found[what] = found.get(what, 0) + 1
    return found


def test_tracking_calls_do_not_grow_with_polls(cluster: Cluster, run_spec) -> None:
    code = "import time, kubebench; time.sleep(1); kubebench.report(v=1)"
    ran = run_spec(spec(workers=1, code=code, repeats=3))
    assert ran.by_status() == {"succeeded": 3}
    # once: the pre-flight check (discovery of the core API and of the kind, the Kubernetes version,
    # the namespace), the spec folder's ConfigMap (create, delete), one list + watch for the jobs and
    # for the pods, the node and the training operator's Deployment (provenance); per job: create, one
    # stream per container, the final list of its pods, delete, and the events of each pod once (its
    # timeline: one call per pod)
    assert calls(cluster) == {"discovery": 2, "version": 1, "read namespace": 1, "watch": 2, "list": 2, "read node": 1, "get": 1,
                              "create": 1 + 3, "follow log": 3, "list a run's pods": 3, "delete": 1 + 3,
                              "list a pod's events": 3}


def test_random_api_errors_are_retried(cluster: Cluster, run_spec) -> None:
    cluster.api.faults = Faults(rate=0.2, watch_cut=0.3, seed=7)
    ran = run_spec(spec(workers=2, repeats=4))
    assert ran.by_status() == {"succeeded": 4}, [r.reason for r in ran.runs]
    kinds = {fault for _, _, fault in cluster.api.faults.injected}
    assert len(cluster.api.faults.injected) >= 3 and kinds & {429, 500, 503} and kinds & {"reset-before", "reset-after"}
    assert jobs_left(cluster) == []


def test_a_create_whose_answer_was_lost_is_not_done_twice(cluster: Cluster, run_spec) -> None:
    cluster.api.faults = Faults(rate=1.0, kinds=("reset-after",), methods=("POST",), limit=1, path="pytorchjobs")
    (run,) = run_spec(spec(workers=1)).runs
    assert run.status == "succeeded", run.reason
    posts = [(r.method, r.code) for r in cluster.api.requests if r.method == "POST" and "pytorchjobs" in r.path]
    assert posts == [("POST", 0), ("POST", 409)]  # created, answer lost; the retry finds its own object
    assert cluster.api.count("DELETE", "pytorchjobs") == 1 and len(cluster.operator.timings) == 1


def test_an_api_refusal_fails_the_run_with_the_status_and_object(cluster: Cluster, run_spec) -> None:
    cluster.api.refuse[("POST", "pytorchjobs")] = ApiError(
        403, "Forbidden", 'pytorchjobs.kubeflow.org is forbidden: User "system:serviceaccount:bench:default" '
                          'cannot create resource "pytorchjobs"')
    (run,) = run_spec(spec()).runs
    assert run.status == "failed"
    assert run.reason.startswith(f"create PyTorchJob bench/kb-{run.run_id}: HTTP 403 Forbidden: pytorchjobs.kubeflow.org is forbidden")


def test_a_refused_watch_fails_the_run_at_once(cluster: Cluster, run_spec) -> None:
    cluster.api.refuse[("GET", "pods")] = ApiError(403, "Forbidden", 'pods is forbidden: cannot list resource "pods"')
    started = time.monotonic()
    (run,) = run_spec(spec(code="import time; time.sleep(30)")).runs
    assert time.monotonic() - started < 15
    assert run.status == "failed" and "list pods in bench" in run.reason and "HTTP 403" in run.reason
    assert jobs_left(cluster) == []


def test_a_job_deleted_by_someone_else_fails_the_run(cluster: Cluster, run_spec) -> None:
    store = cluster.api.store

    def delete_soon() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            for job in store.list(("kubeflow.org", "v1", "pytorchjobs"), cluster.namespace)[0]:
                if job.get("status"):
                    store.delete(("kubeflow.org", "v1", "pytorchjobs"), cluster.namespace, job["metadata"]["name"])
                    return
            time.sleep(0.05)

    threading.Thread(target=delete_soon, daemon=True).start()
    (run,) = run_spec(spec(code="import time; time.sleep(30)")).runs
    assert (run.status, run.reason) == ("failed", f"PyTorchJob bench/kb-{run.run_id} was deleted by someone else")
