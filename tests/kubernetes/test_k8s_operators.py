"""kubebench against the operators as they really behave (the stand-in follows upstream, version by
version; see docs/kubernetes-conformance.md): each test here is a finding of the 2026-11-30 review
that failed on the backend before its fix."""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml
from support.cluster.cluster import Cluster
from support.cluster.emulator import ApiError
from support.cluster.kueue import DEFAULT_FRAMEWORKS
from support.timing import wait_for

PODS = ("", "v1", "pods")


def output_of(cluster: Cluster, run) -> Path:
    return cluster.home / "experiments" / "exp-1" / run.run_id / "output"


def job_spec(kind: str, workers: int, code: str, extra: str = "", timeout: str = "60s", backend: str = "") -> str:
    return textwrap.dedent(f"""
        name: fidelity
        job:
          kind: {kind}
          workers: {workers}
          command: [python, -c, "{code}"]
          resources: {{cpu: 1}}
          {extra}
        backend: {{kind: kubernetes, unschedulable_grace: 30s{backend}}}
        metrics: [{{name: v}}]
        timeout: {timeout}
        """)


# --- HIGH-1: a TrainJob's nodes get only Trainer's PET_* ---------------------------------------------

ENV = "import os, kubebench; print(sorted(k for k in os.environ if k in ('WORLD_SIZE', 'RANK', 'MASTER_ADDR') or k.startswith('PET_'))); kubebench.report(v=1)"


def test_trainjob_nodes_get_only_what_trainer_injects(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(job_spec("TrainJob", 2, ENV)).runs
    assert run.status == "succeeded", run.reason
    first = (output_of(cluster, run) / "node-0.log").read_text().splitlines()[0]
    assert first == str(["PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE"])


TRAINJOB_CNN = """
name: trainjob-cnn
job:
  kind: TrainJob
  workers: 2
  command: [python, -m, kubebench.workloads.cnn, --steps, "2", --warmup-steps, "1", --batch-size, "4"]
  resources: {cpu: 1}
metrics: [{name: images_per_sec}]
postprocess:
  - {kind: regex, file: node-0.log, pattern: 'images/sec: (?P<images_per_sec>[0-9.]+)'}
backend: {kind: kubernetes, unschedulable_grace: 30s}
timeout: 3m
"""


@pytest.mark.slow
def test_a_trainjobs_nodes_train_as_one_distributed_job(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(TRAINJOB_CNN).runs
    assert run.status == "succeeded", run.reason
    log = (output_of(cluster, run) / "node-0.log").read_text()
    assert "world_size=2" in log  # not two single-node trainings


# --- HIGH-2: no backoffLimit on Kubeflow v1 jobs ------------------------------------------------------

# Both ranks say bye; rank 1 fails once rank 0 has (a file on the shared volume says so: on a busy
# machine rank 1 could otherwise fail, and the job be deleted, before rank 0 has printed a word), and
# rank 0 hangs, as a DDP master waiting for its peer does
BYE = ("import os, sys, time\\n"
       "rank, spoke = os.environ['RANK'], os.path.join(os.environ['KUBEBENCH_EXP_OUTPUT_PATH'], 'rank0-spoke')\\n"
       "print('rank', rank, 'says bye', flush=True)\\n"
       "if rank == '0': open(spoke, 'w').close(); time.sleep(60)\\n"
       "while not os.path.exists(spoke): time.sleep(0.05)\\n"
       "sys.exit(3)\\n")


@pytest.mark.cluster(training_operator="1.9.3")
def test_a_failed_replica_keeps_its_exit_code_and_log_on_training_operator_1_9_3(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(job_spec("PyTorchJob", 2, BYE)).runs
    assert (run.status, run.exit_code) == ("failed", 3)
    # the kind's own failure (a Never replica failed), not the backoff-limit path that deletes every pod first
    assert run.reason == (f"worker-0 exited with code 3; job failed: PyTorchJobFailed: PyTorchJob kb-{run.run_id} "
                          "is failed because 1 Worker replica(s) failed.")
    assert "rank 1 says bye" in run.log_tail
    assert (output_of(cluster, run) / "master-0.log").read_text().startswith("rank 0 says bye")


@pytest.mark.cluster(training_operator="1.9.3")
@pytest.mark.parametrize(("limit", "kept"), [(3, True), (0, False)])
def test_training_operator_1_9_3_deletes_every_pod_only_once_past_its_backoff_limit(cluster: Cluster, limit: int,
                                                                                    kept: bool) -> None:
    # review 2026-12-02 row 4: the delete-all path needs previousRetry + 1 > backoffLimit, not just a backoffLimit
    def replica(code: str) -> dict:
        return {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [
            {"name": "pytorch", "image": "python:3.11-slim", "command": ["python", "-c", code]}]}}}

    cluster.api.store.create(("kubeflow.org", "v1", "pytorchjobs"), cluster.namespace, {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "bo"},
        "spec": {"runPolicy": {"backoffLimit": limit}, "pytorchReplicaSpecs": {
            "Master": replica("import time; time.sleep(30)"), "Worker": replica("raise SystemExit(3)")}}})
    job = wait_for(lambda: next((j for j in [cluster.operator.jobs.get((cluster.namespace, "bo"))]
                                 if j is not None and j.finished is not None), None), timeout=30)
    assert [c["reason"] for c in job.conditions if c["type"] == "Failed"] == ["PyTorchJobFailed"]
    message = next(c["message"] for c in job.conditions if c["type"] == "Failed")
    assert message == ("PyTorchJob bo is failed because 1 Worker replica(s) failed." if kept
                       else "Job bo has failed because it has reached the specified backoff limit")
    time.sleep(0.5)
    assert bool(cluster.api.store.find(PODS, cluster.namespace, "bo-master-0")) == kept


# --- HIGH-3: MPIJob v2beta1 -----------------------------------------------------------------------------

REPORT = "import kubebench; print('ranks done', flush=True); kubebench.report(v=1)"


def test_an_mpijob_launcher_waits_for_its_workers_and_the_workers_stop_after_it(cluster: Cluster, run_spec,
                                                                                fake_mpirun) -> None:
    (run,) = run_spec(job_spec("MPIJob", 2, REPORT, backend=", keep_jobs: true")).runs
    assert run.status == "succeeded", run.reason
    assert (output_of(cluster, run) / "launcher-0.log").read_text().startswith("ranks done")
    job = cluster.operator.jobs[(cluster.namespace, f"kb-{run.run_id}")]  # kept, as asked
    wait_for(lambda: not [p for p in job.replicas if p.type == "worker"])  # sshd workers stopped: no GPU held


def test_an_mpijob_of_training_operator_v1_keeps_its_workers_up_for_the_launcher(cluster: Cluster, run_spec,
                                                                                 fake_mpirun) -> None:
    extra = "mpi_api_version: kubeflow.org/v1"
    (run,) = run_spec(job_spec("MPIJob", 2, REPORT, extra=extra)).runs
    assert run.status == "succeeded", run.reason


def test_an_mpijobs_workers_stop_with_its_launcher_even_when_nothing_deletes_the_job(cluster: Cluster, run_spec,
                                                                                     fake_mpirun, monkeypatch) -> None:
    from kubebench.backends.kube.backend import KubernetesBackend

    stopped = []

    def release(self, handle) -> None:  # the runner killed once the logs were copied: nobody deletes the job
        job = cluster.operator.jobs[(cluster.namespace, handle.name)]
        deadline = time.monotonic() + 10
        while [p for p in job.replicas if p.type == "worker"] and time.monotonic() < deadline:
            time.sleep(0.05)
        stopped.append(not [p for p in job.replicas if p.type == "worker"])
        self.watches.forget(handle)  # forgotten, not deleted

    monkeypatch.setattr(KubernetesBackend, "release", release)
    (run,) = run_spec(job_spec("MPIJob", 2, REPORT)).runs
    assert run.status == "succeeded", run.reason
    assert stopped == [True]  # the operator stopped the sshd workers itself (cleanPodPolicy: Running): no GPU held


MPIJOBS = ("kubeflow.org", "v2beta1", "mpijobs")


def test_an_mpijob_has_no_deadline_of_its_operators_before_its_launcher_exists(cluster: Cluster) -> None:
    # review 2026-12-02 M-F: mpi-operator v0.8 gives runPolicy.activeDeadlineSeconds to the launcher Job
    # only, which WaitForWorkersReady creates once every worker is Ready
    worker = {"replicas": 1, "template": {"spec": {"containers": [{"name": "mpi", "image": "registry.example/does-not-exist"}]}}}
    launcher = {"replicas": 1, "template": {"spec": {"containers": [{"name": "mpi", "image": "i", "command": ["true"]}]}}}
    cluster.api.store.create(MPIJOBS, cluster.namespace, {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "stuck"},
        "spec": {"launcherCreationPolicy": "WaitForWorkersReady", "runPolicy": {"activeDeadlineSeconds": 1},
                 "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker}}})
    time.sleep(2.5)
    job = cluster.api.store.get(MPIJOBS, cluster.namespace, "stuck")
    assert not [c for c in (job.get("status") or {}).get("conditions") or [] if c["type"] == "Failed"]
    assert [p.type for p in cluster.operator.jobs[(cluster.namespace, "stuck")].replicas] == ["worker"]


def test_an_mpijob_whose_workers_never_get_ready_ends_even_when_its_runner_is_killed(cluster: Cluster, run_spec,
                                                                                     monkeypatch) -> None:
    # kubebench's own deadline: a keeper Job owning the MPIJob, deleted by its TTL once its deadline passed
    from kubebench.backends.kube.backend import KubernetesBackend

    monkeypatch.setattr("kubebench.render.kinds.active_deadline", lambda timeout: 1)  # the MPIJob's own deadline
    killed = []

    def runner_killed(self, handle) -> None:  # nobody deletes the job
        killed.append(handle.name)
        self.watches.forget(handle)

    monkeypatch.setattr(KubernetesBackend, "release", runner_killed)
    monkeypatch.setattr(KubernetesBackend, "cancel", runner_killed)
    text = job_spec("MPIJob", 2, REPORT, backend=", unschedulable_grace: 1s, scale_up_grace: 1s")
    (run,) = run_spec(text.replace("command:", "image: registry.example/does-not-exist:1\n  command:")).runs
    assert run.status == "failed" and ("ImagePullBackOff" in run.reason or "ErrImagePull" in run.reason), run.reason
    assert killed == [f"kb-{run.run_id}"]
    wait_for(lambda: cluster.api.store.find(MPIJOBS, cluster.namespace, f"kb-{run.run_id}") is None, timeout=20)
    wait_for(lambda: all(p.stage == "gone" for p in cluster.operator.pods.values()), timeout=10)  # its workers too
    wait_for(lambda: cluster.api.store.find(("batch", "v1", "jobs"), cluster.namespace, f"kb-{run.run_id}-deadline")
             is None, timeout=10)  # and the keeper, once the collector emptied it



# --- HIGH-4: kubebench's clock first, logs before delete, one state everywhere -------------------------

RUNAWAY = "import time; print('started', flush=True); time.sleep(600)"
FIRST_LOG = {"PyTorchJob": "master-0", "Job": "worker-0", "TrainJob": "node-0", "MPIJob": "launcher-0", "TFJob": "worker-0"}


@pytest.mark.parametrize("kind", ["PyTorchJob", "TrainJob", "Job", "MPIJob"])
def test_a_runaway_job_times_out_with_its_log_as_on_the_local_backend(cluster: Cluster, run_spec, kind: str,
                                                                       fake_mpirun) -> None:
    (run,) = run_spec(job_spec(kind, 1, RUNAWAY, timeout="3s")).runs
    assert (run.status, run.reason, run.exit_code) == ("timeout", "timed out after 3s", None)
    assert (output_of(cluster, run) / f"{FIRST_LOG[kind]}.log").read_text() == "started\n"
    local = run_spec(job_spec(kind, 1, RUNAWAY, timeout="3s").replace("backend: {kind: kubernetes", "backend: {kind: local")
                     .replace(", unschedulable_grace: 30s", ""), "exp-local").runs
    assert [(r.status, r.reason, r.exit_code) for r in local] == [(run.status, run.reason, run.exit_code)]


@pytest.mark.parametrize("kind", ["PyTorchJob", "TrainJob", "Job", "MPIJob"])
def test_a_timed_out_jobs_log_is_read_before_the_job_is_deleted(cluster: Cluster, run_spec, kind: str,
                                                                 fake_mpirun) -> None:
    # No stream holds the log (every follow request fails at the kubelet's proxy), and the job's pods
    # go within its DELETE: the log is there only if it was read before the job was deleted.
    cluster.api.refuse_follow = ApiError(502, "InternalError", "proxy error from 10.0.0.1:10250 while dialing "
                                                              "the kubelet: stream closed")
    cluster.api.store.instant_cascade = True
    (run,) = run_spec(job_spec(kind, 1, RUNAWAY, timeout="3s")).runs
    assert (run.status, run.reason) == ("timeout", "timed out after 3s")
    assert (output_of(cluster, run) / f"{FIRST_LOG[kind]}.log").read_text() == "started\n"
    requests = list(cluster.api.requests)
    follows = [r.code for r in requests if r.path.endswith("/log") and r.query.get("follow") == "true"]
    assert follows and set(follows) == {502}  # the scenario held: no stream
    deleted = next(i for i, r in enumerate(requests) if r.method == "DELETE" and r.path.endswith(f"/kb-{run.run_id}"))
    late = [r.code for r in requests[deleted:] if r.path.endswith("/log") and r.query.get("follow") != "true"]
    assert late and set(late) == {404}  # and a read after the delete finds no pod


# --- HIGH-5: Kueue -----------------------------------------------------------------------------------------

QUICK = "import kubebench; print('ran', flush=True); kubebench.report(v=1)"


#: Kueue configured to manage PyTorchJobs too (its default configuration leaves them out: see test_k8s_kueue.py).
WITH_PYTORCHJOB = (*DEFAULT_FRAMEWORKS, "kubeflow.org/pytorchjob")


@pytest.mark.cluster(kueue=1, kueue_frameworks=WITH_PYTORCHJOB)
def test_time_in_the_queue_is_reported_apart_and_not_counted_against_the_timeout(cluster: Cluster, run_spec) -> None:
    operator, kueue = cluster.operator, cluster.operator.kueue
    kueue.capacity = 0  # the quota is taken for now

    def admit_later() -> None:  # 4 s after the job was created: longer than the run's timeout
        wait_for(lambda: operator.jobs)
        time.sleep(4.0)
        kueue.capacity = 1

    threading.Thread(target=admit_later, daemon=True).start()
    (run,) = run_spec(job_spec("PyTorchJob", 1, QUICK, timeout="3s", backend=", queue: team-a")).runs
    assert run.status == "succeeded", run.reason
    assert run.metrics["queue_seconds"] >= 3.5 and float(run.info["queue_seconds"]) >= 3.5
    assert run.metrics["v"] == 1.0


@pytest.mark.cluster(kueue=1)
def test_a_job_that_never_leaves_the_queue_times_out_saying_so(cluster: Cluster, run_spec) -> None:
    cluster.operator.kueue.capacity = 0
    (run,) = run_spec(job_spec("Job", 1, QUICK, backend=", queue: team-a, queue_timeout: 2s")).runs
    # and, once its Workload has been read (within a second or so: not always before 2 s on a busy
    # machine), what Kueue says of it
    assert run.status == "timeout" and run.reason.startswith("still queued after 2s: waiting in queue team-a"), run.reason
    assert run.reason[len("still queued after 2s: waiting in queue team-a"):] in (
        "", ": Pending: couldn't assign flavors to pod set main: insufficient unused quota for pods in flavor "
            "default-flavor, 1 more needed")
    assert float(run.info["queue_seconds"]) >= 2


@pytest.mark.cluster(kueue=1, kueue_frameworks=WITH_PYTORCHJOB)
def test_a_preempted_run_is_retried_from_scratch_as_an_infrastructure_failure(cluster: Cluster, run_spec,
                                                                               tmp_path: Path) -> None:
    marker = tmp_path / "second-attempt"
    code = f"import os, time, kubebench; print('attempt', flush=True); os.path.exists('{marker}') or time.sleep(60); kubebench.report(v=1)"
    operator = cluster.operator

    def preempt_when_running() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for job in list(operator.jobs.values()):
                if job.replicas and all(p.phase == "Running" for p in job.replicas):
                    marker.touch()
                    operator.kueue.preempt(operator, job)
                    return
            time.sleep(0.05)

    threading.Thread(target=preempt_when_running, daemon=True).start()
    spec = job_spec("PyTorchJob", 2, code, backend=", queue: team-a") + "retries: 1\n"
    ran = run_spec(spec)
    (run,) = ran.runs
    assert (run.status, run.attempts) == ("succeeded", 2), run.reason
    (attempts,) = ran.store.attempts(ran.experiment_id).values()
    assert [(a.attempt, a.status) for a in attempts] == [(1, "failed"), (2, "succeeded")]
    assert attempts[0].reason.startswith(f"preempted: PyTorchJob bench/kb-{run.run_id} was suspended after it started")
    assert (output_of(cluster, run) / "master-0.log").read_text().count("attempt") == 1  # a fresh folder


def test_kueue_is_refused_for_mpijobs_it_does_not_manage(tmp_path: Path) -> None:
    from test_k8s_manifests import rendered, shorthand

    from kubebench.errors import SpecError

    with pytest.raises(SpecError, match="Kueue manages MPIJobs of kubeflow.org/v2beta1 only"):
        rendered(tmp_path, shorthand("MPIJob", 2, "mpi_api_version: kubeflow.org/v1"))


# --- MED-6: a TrainJob's failing node is restarted in place by its JobSet ---------------------------------

FAILING_NODE = ("import os, sys, time; open(os.environ['KUBEBENCH_EXP_OUTPUT_PATH'] + '/starts', 'a').write('x'); "
                "print('node', os.environ['PET_NODE_RANK'], 'failing on purpose', flush=True); "
                "os.environ['PET_NODE_RANK'] == '1' and sys.exit(3); time.sleep(60)")


def test_a_trainjob_fails_at_its_first_failure_not_after_the_jobsets_restarts(cluster: Cluster, run_spec) -> None:
    cluster.operator.kubelet.backoff_scale = 0.2  # 2 s, 4 s, … between restarts: a real back-off is 10 s, 20 s, …
    started = time.monotonic()
    (run,) = run_spec(job_spec("TrainJob", 2, FAILING_NODE)).runs
    assert (run.status, run.exit_code) == ("failed", 3)
    assert run.reason.startswith("node-1 exited with code 3") and "(restartPolicy OnFailure)" in run.reason
    assert "node 1 failing on purpose" in run.log_tail  # the failed instance's log, not the restart's
    assert time.monotonic() - started < 20
    assert (output_of(cluster, run) / "starts").read_text().count("x") <= 4  # 2 nodes, node 1 at most twice


# --- MED-9: keep_jobs keeps no pod running ----------------------------------------------------------------


def test_kept_jobs_keep_no_pod_running(cluster: Cluster, run_spec) -> None:
    (run,) = run_spec(job_spec("PyTorchJob", 2, BYE, backend=", keep_jobs: true")).runs
    assert (run.status, run.exit_code) == ("failed", 3)
    job = cluster.operator.jobs[(cluster.namespace, f"kb-{run.run_id}")]  # kept
    wait_for(lambda: not [p for p in job.replicas if p.phase in ("Running", "Pending")])  # the hung master too
    assert [p.type for p in job.replicas] == ["worker"]  # the failed worker stays, for its logs


# --- MED-10: field validation and the served versions --------------------------------------------------------


@pytest.mark.cluster(trainer="2.1")
def test_a_trainjob_on_trainer_2_1_fails_at_once_instead_of_running_without_its_patches(cluster: Cluster,
                                                                                        run_spec) -> None:
    started = time.monotonic()
    (run,) = run_spec(job_spec("TrainJob", 1, QUICK)).runs
    assert run.status == "failed"
    assert 'unknown field "spec.activeDeadlineSeconds"' in run.reason and "Trainer v2.2 or later" in run.reason
    assert time.monotonic() - started < 20
    assert cluster.operator.jobs == {}


def test_a_kind_the_cluster_does_not_serve_is_one_clear_error(cluster: Cluster, run_spec) -> None:
    from kubebench.errors import PreflightError

    cluster.api.unserved.add(("kubeflow.org", "v2beta1"))  # only training-operator's MPIJob v1 here
    with pytest.raises(PreflightError) as refused:
        run_spec(job_spec("MPIJob", 1, QUICK) + "repeats: 5\n")
    assert str(refused.value).startswith("MPIJob of kubeflow.org/v2beta1 is not served by the cluster at http://127.0.0.1:")
    assert str(refused.value).endswith("set job.mpi_api_version to the MPIJob version it serves")
    assert cluster.api.count("POST") == 0  # before any run


# --- MED-13: one spec, one measurement ------------------------------------------------------------------------

SHM = "import os, kubebench; print(os.environ['LOCAL_WORLD_SIZE'], os.path.ismount('/dev/shm') or 'checked'); kubebench.report(v=1)"


@pytest.mark.parametrize("kind", ["PyTorchJob", "TrainJob", "Job", "TFJob"])
def test_every_pod_has_a_dev_shm_and_is_one_replica_of_its_machine(cluster: Cluster, run_spec, kind: str) -> None:
    (run,) = run_spec(job_spec(kind, 2, SHM)).runs
    assert run.status == "succeeded", run.reason
    output = output_of(cluster, run)
    assert (output / f"{FIRST_LOG[kind]}.log").read_text().startswith("1 ")  # LOCAL_WORLD_SIZE: its own CPUs
    manifest = (output.parent / "config" / "manifest.yaml").read_text()
    assert "mountPath: /dev/shm" in manifest and "medium: Memory" in manifest


# --- LOW-2: a retry never sees the previous attempt's pods ------------------------------------------------------


def test_a_retry_is_judged_by_its_own_pods_not_the_previous_attempts(cluster: Cluster, run_spec, tmp_path: Path) -> None:
    cluster.api.store.gc_delay = 5.0  # the evicted pod of attempt 1 lingers, and goes while attempt 2 runs
    marker, gone = tmp_path / "evicted", tmp_path / "old-pod-gone"
    # attempt 2 fails on its own, but only once the old pod's last events (Terminating, DELETED) came
    code = (f"import os, sys, time; again = os.path.exists('{marker}'); "
            f"again and [time.sleep(0.05) for _ in iter(lambda: os.path.exists('{gone}'), True)]; "
            "again and sys.exit(5); time.sleep(60)")
    operator = cluster.operator

    def evict_first() -> None:
        wait_for(lambda: any(p.phase == "Running" for j in list(operator.jobs.values()) for p in j.replicas), 60)
        job = next(iter(operator.jobs.values()))
        old = job.replicas[0].name
        marker.touch()
        operator.evict(job.replicas[0])
        pods = lambda: [p["metadata"]["name"] for p in cluster.api.store.list(PODS, cluster.namespace)[0]]  # noqa: E731
        wait_for(lambda: [n for n in pods() if n != old], 60)  # attempt 2's pod beside the old one
        wait_for(lambda: old not in pods(), 60)
        gone.touch()

    threading.Thread(target=evict_first, daemon=True).start()
    ran = run_spec(job_spec("Job", 1, code) + "retries: 2\n")
    (attempts,) = ran.store.attempts(ran.experiment_id).values()
    assert [(a.attempt, a.status) for a in attempts] == [(1, "failed"), (2, "failed")]
    assert attempts[0].reason.startswith("worker-0 evicted")
    assert attempts[1].reason.startswith("worker-0 exited with code 5")  # its own failure: not retried


# --- LOW-3: ids as label values ---------------------------------------------------------------------------------


def test_an_id_of_63_characters_is_a_label_the_api_server_takes(cluster: Cluster, run_spec) -> None:
    experiment = "b" * 61 + "-x"  # the longest id: every valid id is a valid label value
    ran = run_spec(job_spec("Job", 1, QUICK), experiment)
    (run,) = ran.runs
    assert run.status == "succeeded", run.reason  # the API server took the job (labels are validated)
    config = cluster.home / "experiments" / experiment / run.run_id / "config" / "manifest.yaml"
    assert yaml.safe_load(config.read_text())["metadata"]["labels"]["kubebench.io/experiment"] == experiment


def test_an_id_that_cannot_be_a_label_is_refused_clearly(cluster: Cluster, run_spec) -> None:
    from kubebench.errors import IdError

    with pytest.raises(IdError, match="'Team A/bench #1' is not valid: .* \\(a Kubernetes label value\\)"):
        run_spec(job_spec("Job", 1, QUICK), "Team A/bench #1")
    with pytest.raises(IdError, match="is not valid"):
        run_spec(job_spec("Job", 1, QUICK), "b" * 64)


# --- LOW-4: restartPolicy on the replica spec only ----------------------------------------------------------------


def test_the_operators_do_not_warn_about_the_pod_templates_restart_policy(cluster: Cluster, run_spec,
                                                                         fake_mpirun) -> None:
    for kind in ("PyTorchJob", "MPIJob"):
        (run,) = run_spec(job_spec(kind, 1, QUICK), f"exp-{kind.lower()}").runs
        assert run.status == "succeeded", run.reason
    events = cluster.api.store.list(("", "v1", "events"), cluster.namespace)[0]
    assert [e["message"] for e in events if e["reason"] == "SetPodTemplateRestartPolicy"] == []


# --- LOW-6: a second Ctrl-C deletes the jobs in flight -------------------------------------------------------------


def test_abort_deletes_the_jobs_in_flight(cluster: Cluster, tmp_path: Path) -> None:
    from kubebench.backends.kube.backend import KubernetesBackend
    from kubebench.backends.kube.config import KubernetesConfig
    from kubebench.paths import RunPaths
    from kubebench.render.job import RenderedJob

    backend = KubernetesBackend(KubernetesConfig())
    manifest = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "kb-abort", "labels": {"kubebench.io/experiment": "e", "kubebench.io/run": "abort"}},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "python:3.11-slim", "command": ["python", "-c", "import time; time.sleep(60)"]}]}}}}
    paths = RunPaths(tmp_path / "exp", tmp_path / "data", "e", "abort")
    Path(paths.output).mkdir(parents=True)
    try:
        backend.submit(RenderedJob("abort", "kb-abort", manifest, tmp_path), paths)
        backend.abort()
        assert cluster.api.store.list(("batch", "v1", "jobs"), cluster.namespace)[0] == []
    finally:
        backend.close()
