"""Gang scheduling (review M-D, issue #31): on a cluster of 6 CPU slots, two 4-pod jobs placed by the
default scheduler one pod at a time each get 3 pods and wait for the 4th forever (kubebench says they
are stuck); gang-scheduled by Volcano, the second waits whole for the first and both complete. A run
waiting for its gang is waiting, not stuck; a job that asks for a gang its operator does not make is
warned about."""

from __future__ import annotations

import textwrap

import pytest
from support.cluster.cluster import Cluster

# Each replica joins a barrier on the run's output folder (shared storage) and waits for all its peers,
# as a rendezvous does: a job with 3 of its 4 pods running never gets past it.
BARRIER = ("import os, time, pathlib, kubebench; d = pathlib.Path(os.environ['KUBEBENCH_EXP_OUTPUT_PATH']); "
           "(d / ('joined-' + os.environ['RANK'])).touch(); "
           "[time.sleep(0.05) for _ in iter(lambda: len(list(d.glob('joined-*'))) < int(os.environ['WORLD_SIZE']), False)]; "
           "kubebench.mark('rendezvous_done'); time.sleep(0.3); kubebench.report(v=1)")


def spec(gang: str = "", grace: str = "3s", repeats: int = 2) -> str:
    return textwrap.dedent(f"""
        name: gang
        job:
          kind: PyTorchJob
          workers: 4
          command: [python, -c, "{BARRIER}"]
          resources: {{cpu: 1}}
          {gang}
        repeats: {repeats}
        parallelism: 2
        backend: {{kind: kubernetes, unschedulable_grace: {grace}}}
        metrics: [{{name: v}}]
        timeout: 60s
        """)


def six_slots(cluster: Cluster) -> None:
    cluster.operator.set_nodes(3, {"cpu": "2", "memory": "8Gi"})
    cluster.operator.pod_interval = 1.0  # a busy operator: the two jobs' pods are created in turns


def scheduled(ran, run) -> int:
    return len({b.replica for b in ran.store.timelines([run.run_id])[run.run_id] if b.name == "scheduled"})


def test_without_gang_two_jobs_each_hold_3_of_6_slots_and_both_are_stuck(cluster: Cluster, run_spec) -> None:
    six_slots(cluster)
    ran = run_spec(spec())
    assert ran.by_status() == {"failed": 2}, [r.reason for r in ran.runs]
    for run in ran.runs:
        assert "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu." in run.reason, run.reason
        assert scheduled(ran, run) == 3  # half-placed: 3 pods each, holding the slots the other needs


@pytest.mark.cluster(gang="volcano")
def test_with_gang_the_second_job_waits_whole_and_both_complete(cluster: Cluster, run_spec) -> None:
    six_slots(cluster)
    ran = run_spec(spec("gang: {scheduler: volcano}"))
    assert ran.by_status() == {"succeeded": 2}, [r.reason for r in ran.runs]
    first, second = sorted(ran.runs, key=lambda r: r.metrics["operator_seconds"])
    timelines = ran.store.timelines([first.run_id, second.run_id])
    ended = max(b.t for b in timelines[first.run_id] if b.name == "exited")
    created = min(b.t for b in timelines[second.run_id] if b.name == "created" and b.source == "observed")
    assert created >= ended - 0.5  # no pod of the second before the first was done: all or nothing
    assert scheduled(ran, second) == 4 and second.metrics["operator_seconds"] > 1.0
    assert {b.name for b in timelines[second.run_id]} >= {"gang_created", "gang_ready"}
    assert "gang_wait_seconds" in second.metrics and "gang_warning" not in second.info
    pg = cluster.api.store.find(("scheduling.volcano.sh", "v1beta1", "podgroups"), cluster.namespace,
                                f"kb-{first.run_id}")
    assert pg is None  # the operator deleted it with its job


def test_a_gang_the_operator_does_not_make_is_warned_about(cluster: Cluster, run_spec, monkeypatch) -> None:
    from kubebench.backends.kube import podgroup

    monkeypatch.setattr(podgroup, "MISSING_GRACE", 0.0)
    monkeypatch.setattr(podgroup, "READ_MISSING_EVERY", 0.1)
    code = "import kubebench, time; time.sleep(0.5); kubebench.report(v=1)"
    text = spec("gang: {scheduler: volcano}", repeats=1).replace(BARRIER, code).replace("workers: 4", "workers: 1")
    (run,) = run_spec(text).runs
    assert run.status == "succeeded", run.reason
    assert run.info["gang_warning"].startswith(f"no PodGroup kb-{run.run_id} (scheduling.volcano.sh) was created: "
                                               "is the operator started with --gang-scheduler-name=volcano")


TRAINER = "trainer.kubeflow.org"
BASE_RUNTIME = {  # what Trainer v2.3's manifests/base/runtimes/torch_distributed.yaml holds, in short
    "apiVersion": f"{TRAINER}/v1alpha1", "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {"containers": [
            {"name": "node", "image": "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"}]}}}}}]}}}}


def test_a_gang_scheduled_trainjob_runs_on_a_runtime_made_from_the_default_one(cluster: Cluster, tmp_path) -> None:
    import yaml
    from support.cluster.schemas import CRDS, strict

    from kubebench.backends.kube.api import Api
    from kubebench.backends.kube.config import KubernetesConfig
    from kubebench.backends.kube.runtimes import ensure
    from kubebench.errors import BackendError
    from kubebench.render.gang import GangShape, apply
    from kubebench.render.kinds import build_manifest
    from kubebench.render.pods import JobShape

    store = cluster.api.store
    store.delete((TRAINER, "v1alpha1", "clustertrainingruntimes"), "", "torch-distributed")  # a cluster without it
    manifest = build_manifest(JobShape("TrainJob", 2, "img", ("python", "train.py"), (), ()), "kb-1", {}, 60)
    apply(manifest, GangShape("scheduler-plugins", priority_class="high", schedule_timeout=90), None, "exp-1")
    assert manifest["spec"]["runtimeRef"] == {"apiGroup": TRAINER, "kind": "TrainingRuntime",
                                              "name": "kb-rt-exp-1-coscheduling"}
    api = Api(KubernetesConfig())
    with pytest.raises(BackendError, match="ClusterTrainingRuntime 'torch-distributed' not found"):
        ensure(api, cluster.namespace, manifest, {})
    store.create((TRAINER, "v1alpha1", "clustertrainingruntimes"), "", BASE_RUNTIME)
    assert ensure(api, cluster.namespace, manifest, {"kubebench.io/experiment": "exp-1"}) == "kb-rt-exp-1-coscheduling"
    made = store.find((TRAINER, "v1alpha1", "trainingruntimes"), cluster.namespace, "kb-rt-exp-1-coscheduling")
    assert made["spec"]["podGroupPolicy"] == {"coscheduling": {"scheduleTimeoutSeconds": 90}}
    assert made["spec"]["mlPolicy"] == BASE_RUNTIME["spec"]["mlPolicy"]
    node = made["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert node["priorityClassName"] == "high" and made["metadata"]["labels"] == {"kubebench.io/experiment": "exp-1"}
    crd = yaml.safe_load((CRDS / "trainer.kubeflow.org_trainingruntimes.yaml").read_text())
    import jsonschema

    schema = strict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert list(jsonschema.Draft7Validator(schema).iter_errors(made)) == []  # as Trainer's CRD takes it, strictly
    posts = cluster.api.count("POST", "trainingruntimes")
    assert ensure(api, cluster.namespace, manifest, {}) == "kb-rt-exp-1-coscheduling"
    assert cluster.api.count("POST", "trainingruntimes") == posts  # made once per experiment
    api.close()



@pytest.mark.slow
@pytest.mark.cluster(gang="volcano")
def test_a_gang_that_never_fits_waits_in_the_queue_and_says_its_podgroups_phase(cluster: Cluster, run_spec) -> None:
    cluster.operator.set_nodes(1, {"cpu": "3", "memory": "8Gi"})  # 3 slots for a gang of 4: Volcano never enqueues it
    text = spec("gang: {scheduler: volcano}", grace="1s", repeats=1).replace(
        "unschedulable_grace: 1s}", "unschedulable_grace: 1s, queue_timeout: 7s}")
    (run,) = run_spec(text).runs
    # queued, not stuck: not failed once the 1 s grace is over, but timed out in the queue, saying why
    # (the PodGroup is read every 5 s while it waits: a shorter queue timeout reads an older phase)
    assert (run.status, run.reason) == ("timeout", f"still queued after 7s: waiting for its gang: PodGroup kb-{run.run_id} Pending")
