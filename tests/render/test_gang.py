"""``job.gang`` and ``job.topology`` rendered into each kind's own fields, checked against the
vendored operator CRDs under ``fieldValidation=Strict`` (issue #31, review M-D)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path, PurePosixPath

import pytest
from support.cluster.schemas import errors_of, field_check

from kubebench.errors import SpecError
from kubebench.paths import RunPaths
from kubebench.plan.plan import make_plan
from kubebench.render import gang
from kubebench.render.job import job_fingerprint, render_run
from kubebench.spec.load import load_spec

EXP = "bench-202401010000-abcd"


def render(tmp_path: Path, kind: str, extra: str, workers: int = 4, **fields: str) -> dict:
    more = "".join(f"  {k}: {v}\n" for k, v in fields.items())
    text = (f"name: bench\njob:\n  kind: {kind}\n  workers: {workers}\n  image: img:1\n"
            f"  command: [python, train.py]\n{more}{extra}")
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    loaded = load_spec(path)
    run = make_plan(loaded.spec, EXP, job_fingerprint(loaded)).runs[0]
    env = RunPaths(PurePosixPath("/exp"), PurePosixPath("/data"), EXP, run.id).env(run.trial.id, run.repeat)
    return render_run(loaded, run, EXP, env).manifest


GANG = ("  gang: {scheduler: volcano, min_available: 3, queue: research, priority_class: high, "
        "schedule_timeout: 90s}\n  topology: {required: cloud.google.com/gce-topology-block}\n")


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "JAXJob", "XGBoostJob", "MPIJob"])
def test_kubeflow_kinds_get_a_scheduling_policy_their_crd_takes(tmp_path: Path, kind: str) -> None:
    manifest = render(tmp_path, kind, GANG)
    policy = manifest["spec"]["runPolicy"]["schedulingPolicy"]
    assert policy == {"minAvailable": 3, "queue": "research", "priorityClass": "high", "scheduleTimeoutSeconds": 90}
    assert manifest["metadata"]["annotations"][gang.GANG_ANNOTATION] == "volcano"
    assert field_check(manifest) == ([], []) and errors_of(manifest) == []  # strict, as the operator's CRD takes it
    templates = [s["template"] for s in next(v for k, v in manifest["spec"].items() if k.endswith("ReplicaSpecs")).values()]
    assert {t["metadata"]["annotations"]["kueue.x-k8s.io/podset-required-topology"] for t in templates} == {
        "cloud.google.com/gce-topology-block"}
    assert all("schedulerName" not in t["spec"] for t in templates)  # the operator fills in its scheduler's
    assert gang.scheduler_of(manifest) == "volcano"


def test_the_mpijob_v1_and_a_templated_min_available(tmp_path: Path) -> None:
    manifest = render(tmp_path, "MPIJob", "  gang: {scheduler: scheduler-plugins, min_available: '{{ 2 + 1 }}'}\n",
                      mpi_api_version="kubeflow.org/v1")
    assert manifest["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 3}
    assert field_check(manifest) == ([], [])


def test_a_trainjob_runs_on_a_gang_runtime_and_volcano_queue(tmp_path: Path) -> None:
    manifest = render(tmp_path, "TrainJob", "  gang: {scheduler: volcano, queue: research, priority_class: high}\n"
                                            "  topology: {preferred: topology.kubernetes.io/zone}\n")
    assert manifest["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                                              "name": f"kb-rt-{EXP}-volcano"}
    notes = manifest["metadata"]["annotations"]
    assert notes["scheduling.volcano.sh/queue-name"] == "research"
    assert json.loads(notes[gang.RUNTIME_ANNOTATION]) == {"base": "torch-distributed", "podGroupPolicy": {"volcano": {}},
                                                          "priorityClass": "high"}
    pod = manifest["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    assert pod["template"]["spec"]["template"]["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.kubernetes.io/zone"}
    assert field_check(manifest) == ([], [])
    own = render(tmp_path, "TrainJob", "  gang: {scheduler: scheduler-plugins}\n", runtime="my-gang-runtime")
    assert own["spec"]["runtimeRef"] == {"name": "my-gang-runtime"}  # a runtime of the cluster's own keeps its policy


@pytest.mark.parametrize(("kind", "extra", "message"), [
    ("PyTorchJob", "  gang: {scheduler: volcano, min_available: 5}\n", "more than the job's 4 pods"),
    ("PyTorchJob", "  gang: {scheduler: volcano, min_available: '{{ \"x\" }}'}\n", "is not a whole number"),
    ("TrainJob", "  gang: {scheduler: volcano, min_available: 2}\n", "always holds all its 4 nodes"),
    ("TrainJob", "  gang: {scheduler: scheduler-plugins, queue: q}\n", "a queue is Volcano's"),
    ("Job", "  gang: {scheduler: volcano}\n", "kind Job has no gang scheduling here"),
])
def test_a_gang_that_cannot_be_is_refused_at_render(tmp_path: Path, kind: str, extra: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        render(tmp_path, kind, extra)


@pytest.mark.parametrize(("extra", "message"), [
    ("  gang: {scheduler: kube-batch}\n", "scheduler"),
    ("  gang: {scheduler: volcano, min_available: 0}\n", "at least 1"),
    ("  topology: {}\n", "give one of `required` or `preferred`"),
    ("  topology: {required: a, preferred: b}\n", "give one of `required` or `preferred`"),
])
def test_a_gang_or_topology_spec_error_says_where(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        render(tmp_path, "PyTorchJob", extra)


def test_no_gang_no_change_and_templates_keep_their_own(tmp_path: Path) -> None:
    plain = render(tmp_path, "PyTorchJob", "")
    assert "schedulingPolicy" not in plain["spec"]["runPolicy"] and gang.scheduler_of(plain) is None
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"}, "spec": {
        "runPolicy": {"schedulingPolicy": {"minAvailable": 2}},
        "pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"schedulerName": "volcano",
                                                                                 "containers": []}}}}}}
    assert gang.scheduler_of(manifest) == "volcano"
    gang.apply(manifest, gang.GangShape("volcano", min_available=1), None, EXP)
    assert manifest["spec"]["runPolicy"]["schedulingPolicy"] == {"minAvailable": 2}
    assert gang.runtime_name("x" * 300, "volcano").endswith("-volcano") and len(gang.runtime_name("x" * 300, "volcano")) <= 253
