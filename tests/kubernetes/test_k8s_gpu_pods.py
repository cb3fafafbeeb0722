"""Multi-GPU pods as the operators run them (findings H-A, H-B and H-C of the 2026-12-02 review):
an MPIJob's launcher holds no GPU, so a pool of exactly workers × GPUs fits; each pod is told how
many ranks to start; and a replica the cluster preempts or deletes fails the run as the
infrastructure's, retried, however its peers fail after it."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.timing import scaled

PODS = ("", "v1", "pods")

# Rank 1 waits to be stopped; rank 0 loses its peer a moment after and fails as a broken rendezvous
# does. A retry (the marker is there) reports at once.
NODE = """
import os, sys, time, kubebench
rank, marker = os.environ["PET_NODE_RANK"], sys.argv[1]
if os.path.exists(marker):
    kubebench.report(v=1)
    sys.exit(0)
open(os.path.join(os.environ["KUBEBENCH_EXP_OUTPUT_PATH"], "started-" + rank), "w").close()
while not os.path.exists(marker):
    time.sleep(0.05)
if rank == "0":
    time.sleep(1)
    sys.exit("RuntimeError: [gloo] Connection closed by peer")
time.sleep(60)
"""


def spec(kind: str, command: list[str], extra: str = "", backend: str = "") -> str:
    return textwrap.dedent(f"""
        name: gpus
        job:
          kind: {kind}
          workers: 2
          command: {json.dumps(command)}
          resources: {{cpu: 1}}
          {extra}
        backend: {{kind: kubernetes, unschedulable_grace: 30s{backend}}}
        metrics: [{{name: v}}]
        timeout: 60s
        retries: 1
        """)


@pytest.mark.parametrize(("kind", "how"), [("TrainJob", "deleted"), ("TrainJob", "preempted"), ("PyTorchJob", "deleted")])
def test_a_replica_the_cluster_stops_fails_the_run_as_the_infrastructures_and_it_is_retried(
        cluster: Cluster, run_spec, tmp_path: Path, kind: str, how: str) -> None:
    script, marker = tmp_path / "node.py", tmp_path / "stopped"
    script.write_text(NODE)
    operator = cluster.operator

    def stop_rank_1() -> None:
        deadline = time.monotonic() + scaled(60)
        while time.monotonic() < deadline:
            started = list(cluster.home.glob("experiments/exp-1/*/output/started-*"))
            for job in list(operator.jobs.values()):
                if len(started) == 2 and len(job.replicas) == 2 and all(p.phase == "Running" for p in job.replicas):
                    rank_1 = next(p for p in job.replicas if p.env.get("PET_NODE_RANK") == "1")
                    marker.touch()
                    operator.preempt_pod(rank_1) if how == "preempted" else operator.delete_pod(rank_1)
                    return
            time.sleep(0.05)

    threading.Thread(target=stop_rank_1, daemon=True).start()
    ran = run_spec(spec(kind, ["python", str(script), str(marker)]))
    (run,) = ran.runs
    assert (run.status, run.attempts) == ("succeeded", 2), run.reason
    (attempts,) = ran.store.attempts(ran.experiment_id).values()
    first = attempts[0].reason
    name = "node-1" if kind == "TrainJob" else "worker-0"
    what = "preempted (PreemptionByScheduler)" if how == "preempted" else "deleted (Terminating)"
    assert first.startswith(f"{name} {what}"), first  # not rank 0's broken rendezvous, nor rank 1's SIGTERM
    assert "infrastructure failure" in first


def test_the_kubelet_publishes_a_deleted_pods_stopped_containers_before_it_goes(cluster: Cluster, run_spec,
                                                                                tmp_path: Path) -> None:
    script, marker = tmp_path / "node.py", tmp_path / "stopped"
    script.write_text(NODE)
    operator, store = cluster.operator, cluster.api.store

    def delete_rank_1() -> None:
        deadline = time.monotonic() + scaled(60)
        while time.monotonic() < deadline:
            for job in list(operator.jobs.values()):
                pods = [p for p in job.replicas if p.phase == "Running" and p.env.get("PET_NODE_RANK") == "1"]
                if pods and list(cluster.home.glob("experiments/exp-1/*/output/started-1")):
                    marker.touch()
                    operator.delete_pod(pods[0])
                    return
            time.sleep(0.05)

    threading.Thread(target=delete_rank_1, daemon=True).start()
    run_spec(spec("TrainJob", ["python", str(script), str(marker)]))
    pods = [(kind, obj) for _, key, _, kind, obj in list(store.events) if key == PODS]
    gone = next(obj for kind, obj in pods if kind == "DELETED" and "-node-0-1-" in obj["metadata"]["name"])
    history = [obj for kind, obj in pods if obj["metadata"]["uid"] == gone["metadata"]["uid"] and kind == "MODIFIED"]
    last = history[-1]  # what the watch saw last before the pod went: its final status
    assert last["metadata"].get("deletionTimestamp") and last["status"]["phase"] == "Failed"
    (container,) = last["status"]["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 143  # SIGTERM, and the process ended


def test_an_mpijob_fits_a_pool_of_exactly_workers_times_gpus(cluster: Cluster, run_spec, fake_mpirun) -> None:
    cluster.operator.kubelet.node.allocatable["nvidia.com/gpu"] = "2"  # the pool: 2 workers × 1 GPU, no more
    code = "import kubebench; kubebench.report(v=1)"
    (run,) = run_spec(spec("MPIJob", ["python", "-c", code], "resources: {gpu: 1}",
                           ", scale_up_grace: 5s")).runs
    assert run.status == "succeeded", run.reason  # the launcher asks for no GPU: it is scheduled too
    assert run.provenance.get("gpus") and len(run.provenance["gpus"]) == 2  # the workers' two GPUs


TOLD = ("import os, json, kubebench; print(json.dumps({k: v for k, v in os.environ.items() if k.startswith(('PET_', "
        "'WORLD_SIZE', 'OMPI_MCA_orte_set_default_slots', 'NVIDIA_VISIBLE'))})); hostfile = os.environ.get('OMPI_MCA_orte_default_hostfile'); "
        "hostfile and print(open(hostfile).read().strip()); kubebench.report(v=1)")
TEMPLATES = {
    "PyTorchJob": """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        spec:
          nprocPerNode: "4"
          pytorchReplicaSpecs:
            Master: {replicas: 1, restartPolicy: Never, template: {spec: {containers: [{name: pytorch, image: img, command: %s}]}}}
            Worker: {replicas: 1, restartPolicy: Never, template: {spec: {containers: [{name: pytorch, image: img, command: %s}]}}}
        """,
    "TrainJob": """
        apiVersion: trainer.kubeflow.org/v1alpha1
        kind: TrainJob
        spec:
          runtimeRef: {name: torch-distributed}
          trainer: {numNodes: 2, command: %s, resourcesPerNode: {requests: {cpu: 500m}, limits: {cpu: "3"}}}
        """,
    "MPIJob": """
        apiVersion: kubeflow.org/v2beta1
        kind: MPIJob
        spec:
          slotsPerWorker: 3
          launcherCreationPolicy: WaitForWorkersReady
          runPolicy: {cleanPodPolicy: Running}
          mpiReplicaSpecs:
            Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi, image: img, command: %s}]}}}
            Worker: {replicas: 2, template: {spec: {containers: [{name: mpi, image: img-mpi}]}}}
        """,
}
# What each operator tells the pod that runs the command: training-operator v1.9 counts nprocPerNode in
# WORLD_SIZE; Trainer gives a CPU node its request, rounded up; mpi-operator gives slots in the hostfile.
EXPECTED = {
    "PyTorchJob": ("master-0", {"PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": "*", "PET_NNODES": "2",
                                "PET_NODE_RANK": "0", "PET_NPROC_PER_NODE": "4", "WORLD_SIZE": "8"}, None),
    "TrainJob": ("node-1", {"PET_MASTER_ADDR": "*", "PET_MASTER_PORT": "*", "PET_NNODES": "2", "PET_NODE_RANK": "1",
                            "PET_NPROC_PER_NODE": "1"}, None),
    "MPIJob": ("launcher-0", {"OMPI_MCA_orte_set_default_slots": "3", "NVIDIA_VISIBLE_DEVICES": ""}, "localhost slots=6"),
}


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_each_pod_is_told_its_ranks_as_its_operator_tells_it_and_locally_the_same(cluster: Cluster, run_spec,
                                                                                  tmp_path: Path, kind: str) -> None:
    command = json.dumps(["python", "-c", TOLD])
    (tmp_path / "job.yaml.j2").write_text(textwrap.dedent(TEMPLATES[kind]).replace("%s", command))
    text = "name: told\njob: {template: job.yaml.j2}\nbackend: {kind: kubernetes}\nmetrics: [{name: v}]\ntimeout: 60s\n"
    log, expected, hostfile = EXPECTED[kind]
    for experiment, backend in (("exp-1", "kubernetes"), ("exp-2", "local")):
        (run,) = run_spec(text.replace("kind: kubernetes", f"kind: {backend}"), experiment).runs
        assert run.status == "succeeded", run.reason
        lines = (cluster.home / "experiments" / experiment / run.run_id / "output" / f"{log}.log").read_text().splitlines()
        told = json.loads(lines[0])
        if backend == "local":  # locally mpirun reads the hostfile, and a TrainJob node of one process also
            # gets what torchrun would give it (WORLD_SIZE …)
            expected = {k: v for k, v in expected.items() if not k.startswith(("OMPI_", "NVIDIA_"))}
            told = {k: v for k, v in told.items() if k.startswith("PET_") or k in expected}
        assert set(told) == set(expected) and all(v in ("*", told[k]) for k, v in expected.items()), (backend, told)
        assert hostfile is None or lines[1] == hostfile
