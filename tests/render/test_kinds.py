"""Each shorthand job kind as a manifest: layout, replicas, env and labels on every container."""

from __future__ import annotations

import textwrap
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from kubebench.errors import SpecError
from kubebench.paths import RunPaths
from kubebench.plan.plan import Run, make_plan
from kubebench.render import kinds
from kubebench.render.job import RenderedJob, job_fingerprint, render_run
from kubebench.render.pods import JobShape
from kubebench.spec.load import load_spec

EXP = "bench-202401010000-abcd"
LABELS = ("kubebench.io/experiment", "kubebench.io/trial", "kubebench.io/run")


def render(
    tmp_path: Path, spec_text: str, *, run_index: int = 0
) -> tuple[RenderedJob, Run, dict[str, str]]:
    """Load ``spec_text`` from a file, plan it and render one of its runs."""
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(spec_text), encoding="utf-8")
    loaded = load_spec(path)
    run = make_plan(loaded.spec, EXP, job_fingerprint(loaded)).runs[run_index]
    env = RunPaths(PurePosixPath("/exp"), PurePosixPath("/data"), EXP, run.id).env(run.trial.id, run.repeat)
    return render_run(loaded, run, EXP, env), run, env


def shorthand(kind: str, workers: int, extra: str = "") -> str:
    return (
        f"name: bench\njob:\n  kind: {kind}\n  workers: {workers}\n  image: img:1\n"
        f"  command: [python, train.py, --epochs, 2]\n{extra}"
    )


def pod_templates(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Pod templates by replica type, read straight from the manifest (not via kinds)."""
    spec = manifest["spec"]
    field = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs",
             "JAXJob": "jaxReplicaSpecs", "XGBoostJob": "xgbReplicaSpecs"}
    if manifest["kind"] in field:
        return {t: r["template"] for t, r in spec[field[manifest["kind"]]].items()}
    return {"pod": spec["template"]}


def containers(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    if manifest["kind"] == "TrainJob":
        return [manifest["spec"]["trainer"]]
    return [c for t in pod_templates(manifest).values() for c in t["spec"]["containers"]]


def env_of(container: dict[str, Any]) -> dict[str, str]:
    names = [e["name"] for e in container["env"]]
    assert len(names) == len(set(names)), f"duplicate env names: {names}"
    return {e["name"]: e["value"] for e in container["env"]}


KINDS = ["Process", "PyTorchJob", "TFJob", "JAXJob", "XGBoostJob", "MPIJob", "TrainJob", "Job"]
API_VERSIONS = {
    "Process": "kubebench/v1",
    "PyTorchJob": "kubeflow.org/v1",
    "TFJob": "kubeflow.org/v1",
    "JAXJob": "kubeflow.org/v1",
    "XGBoostJob": "kubeflow.org/v1",
    "MPIJob": "kubeflow.org/v2beta1",
    "TrainJob": "trainer.kubeflow.org/v1alpha1",
    "Job": "batch/v1",
}


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_api_version_kind_and_name(tmp_path: Path, kind: str, workers: int) -> None:
    job, run, _ = render(tmp_path, shorthand(kind, workers))
    m = job.manifest
    assert (m["apiVersion"], m["kind"]) == (API_VERSIONS[kind], kind)
    assert m["metadata"]["name"] == f"kb-{run.id}" == job.name
    assert job.kind == kind and job.run_id == run.id


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_every_container_carries_the_run_env(tmp_path: Path, kind: str, workers: int) -> None:
    job, run, env = render(tmp_path, shorthand(kind, workers, "  env: {MY_VAR: 7, FLAG: true}\n"))
    found = containers(job.manifest)
    assert found
    for container in found:
        values = env_of(container)
        assert {k: values[k] for k in env} == env
        assert values["MY_VAR"] == "7" and values["FLAG"] == "true"
        assert values["KUBEBENCH_RUN_ID"] == run.id
        assert values["KUBEBENCH_EXP_PATH"] == f"/exp/{EXP}/{run.id}"


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_labels_on_the_job_and_its_pod_templates(tmp_path: Path, kind: str, workers: int) -> None:
    job, run, _ = render(tmp_path, shorthand(kind, workers))
    expected = dict(zip(LABELS, (EXP, run.trial.id, run.id)))
    assert job.manifest["metadata"]["labels"] == expected
    if kind != "TrainJob":  # a TrainJob has no pod template of its own
        for template in pod_templates(job.manifest).values():
            assert template["metadata"]["labels"] == expected


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_manifest_dumps_to_yaml_without_aliases(tmp_path: Path, kind: str, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand(kind, workers, "  env: {A: 1}\n  resources: {cpu: 2}\n"))
    for dump in (yaml.safe_dump(job.manifest), yaml.dump(job.manifest)):
        assert "&id" not in dump and "*id" not in dump
        assert yaml.safe_load(dump) == job.manifest


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_resources_go_to_requests_and_limits_with_gpu_translated(tmp_path: Path, kind: str, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand(kind, workers, "  resources: {gpu: 1, cpu: 2, memory: 4Gi}\n"))
    amounts = {"nvidia.com/gpu": "1", "cpu": "2", "memory": "4Gi"}
    if kind == "TrainJob":
        assert job.manifest["spec"]["trainer"]["resourcesPerNode"] == {"requests": amounts, "limits": amounts}
        return
    for rtype, template in pod_templates(job.manifest).items():
        for container in template["spec"]["containers"]:
            if rtype == "Launcher":  # mpi-operator's launcher runs no rank: a little CPU and memory, never a GPU
                assert container["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}}
            else:
                assert container["resources"] == {"requests": amounts, "limits": amounts}


def test_no_resources_key_without_resources(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, shorthand("PyTorchJob", 2))
    assert all("resources" not in c for c in containers(job.manifest))


def test_containers_are_separate_objects(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, shorthand("PyTorchJob", 3))
    master, worker = containers(job.manifest)
    assert master is not worker and master["env"] is not worker["env"]


# --- layouts per kind ------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 3])
def test_process_layout(tmp_path: Path, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand("Process", workers))
    spec = job.manifest["spec"]
    assert spec["replicas"] == workers
    (container,) = spec["template"]["spec"]["containers"]
    assert container["name"] == "main" and container["image"] == "img:1"
    assert container["command"] == ["python", "train.py", "--epochs", "2"]


def test_pytorchjob_with_one_worker_is_a_master_only(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, shorthand("PyTorchJob", 1))
    replicas = job.manifest["spec"]["pytorchReplicaSpecs"]
    assert list(replicas) == ["Master"]
    assert replicas["Master"]["replicas"] == 1


def test_pytorchjob_with_three_workers_is_master_plus_two(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, shorthand("PyTorchJob", 3, "timeout: 90s\n"))
    spec = job.manifest["spec"]
    replicas = spec["pytorchReplicaSpecs"]
    assert {t: r["replicas"] for t, r in replicas.items()} == {"Master": 1, "Worker": 2}
    for r in replicas.values():
        assert r["restartPolicy"] == "Never" and "restartPolicy" not in r["template"]["spec"]  # replica level only
        (container,) = r["template"]["spec"]["containers"]
        assert container["name"] == "pytorch"
        assert container["command"] == ["python", "train.py", "--epochs", "2"]
    # no backoffLimit (training-operator <= 1.9.3 deletes every pod on it); deadline after kubebench's timeout
    assert spec["runPolicy"] == {"activeDeadlineSeconds": 150, "cleanPodPolicy": "None"}


@pytest.mark.parametrize("workers", [1, 3])
def test_tfjob_layout(tmp_path: Path, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand("TFJob", workers, "timeout: 10m\n"))
    spec = job.manifest["spec"]
    assert list(spec["tfReplicaSpecs"]) == ["Worker"]
    worker = spec["tfReplicaSpecs"]["Worker"]
    assert worker["replicas"] == workers
    assert worker["template"]["spec"]["containers"][0]["name"] == "tensorflow"
    assert spec["runPolicy"]["activeDeadlineSeconds"] == 660


@pytest.mark.parametrize("workers", [1, 3])
def test_mpijob_layout(tmp_path: Path, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand("MPIJob", workers, "timeout: 1h\n"))
    spec = job.manifest["spec"]
    replicas = spec["mpiReplicaSpecs"]
    assert replicas["Launcher"]["replicas"] == 1
    assert replicas["Worker"]["replicas"] == workers
    (launcher,) = replicas["Launcher"]["template"]["spec"]["containers"]
    (worker,) = replicas["Worker"]["template"]["spec"]["containers"]
    assert launcher["command"] == ["mpirun", "-np", str(workers), "python", "train.py", "--epochs", "2"]
    assert worker["command"] == ["/usr/sbin/sshd", "-De"]  # mpi-operator v2 reaches the ranks over SSH
    assert worker["image"] == launcher["image"] == "img:1"
    assert spec["slotsPerWorker"] == 1
    assert spec["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert spec["runPolicy"] == {"activeDeadlineSeconds": 3960, "cleanPodPolicy": "Running", "backoffLimit": 0}


@pytest.mark.parametrize("workers", [1, 3])
def test_jaxjob_layout(tmp_path: Path, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand("JAXJob", workers, "timeout: 10m\n"))
    spec = job.manifest["spec"]
    assert list(spec["jaxReplicaSpecs"]) == ["Worker"]  # the only replica type the JAXJob webhook accepts
    worker = spec["jaxReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"]) == (workers, "Never")
    (container,) = worker["template"]["spec"]["containers"]
    assert container["name"] == "jax" and "ports" not in container  # the defaulter adds jaxjob-port
    assert spec["runPolicy"] == {"activeDeadlineSeconds": 660, "cleanPodPolicy": "None"}


@pytest.mark.parametrize(("workers", "replicas"), [(1, {"Master": 1}), (3, {"Master": 1, "Worker": 2})])
def test_xgboostjob_layout(tmp_path: Path, workers: int, replicas: dict) -> None:
    job, _, _ = render(tmp_path, shorthand("XGBoostJob", workers, "timeout: 10m\n"))
    spec = job.manifest["spec"]
    # the XGBoostJob webhook requires exactly one Master: rank 0, where the tracker runs
    assert {t: r["replicas"] for t, r in spec["xgbReplicaSpecs"].items()} == replicas
    for r in spec["xgbReplicaSpecs"].values():
        assert r["restartPolicy"] == "Never" and r["template"]["spec"]["containers"][0]["name"] == "xgboost"
    assert spec["runPolicy"] == {"activeDeadlineSeconds": 660, "cleanPodPolicy": "None"}


@pytest.mark.parametrize("runtime", ["jax-distributed", "xgboost-distributed", "my-team.torch-2"])
def test_trainjob_runs_on_the_runtime_named(tmp_path: Path, runtime: str) -> None:
    job, _, _ = render(tmp_path, shorthand("TrainJob", 2, f"  runtime: {runtime}\n"))
    assert job.manifest["spec"]["runtimeRef"] == {"name": runtime}


def test_a_templated_runtime_is_rendered_per_trial(tmp_path: Path) -> None:
    text = shorthand("TrainJob", 2, "  runtime: '{{ framework }}-distributed'\nparameters: {framework: [jax, xgboost]}\n")
    assert render(tmp_path, text, run_index=1)[0].manifest["spec"]["runtimeRef"] == {"name": "xgboost-distributed"}
    with pytest.raises(SpecError, match=r"job.runtime \(trial framework=Jax\): 'Jax-distributed' is not the name"):
        render(tmp_path, text.replace("[jax, xgboost]", "[Jax]"))


def test_runtime_belongs_to_trainjobs(tmp_path: Path) -> None:
    from kubebench.errors import SpecError as LoadError

    with pytest.raises(LoadError, match="`runtime:` names a TrainJob's"):
        render(tmp_path, shorthand("PyTorchJob", 2, "  runtime: jax-distributed\n"))
    with pytest.raises(LoadError, match="runtime"):
        render(tmp_path, shorthand("TrainJob", 2, "  runtime: Not_A_Name\n"))


def test_the_xgboost_runtimes_own_variables_are_refused_in_the_env(tmp_path: Path) -> None:
    extra = "  runtime: xgboost-distributed\n  env: {DMLC_TASK_ID: 3, OMP_NUM_THREADS: 1}\n"
    with pytest.raises(SpecError, match="job.env: DMLC_TASK_ID is reserved for the XGBoost runtime"):
        render(tmp_path, shorthand("TrainJob", 2, extra))
    job, _, _ = render(tmp_path, shorthand("TrainJob", 2, extra.replace("xgboost-distributed", "torch-distributed")))
    assert {"name": "DMLC_TASK_ID", "value": "3"} in job.manifest["spec"]["trainer"]["env"]  # another runtime's to use


def test_an_xgboost_trainjob_node_has_one_gpu(tmp_path: Path) -> None:
    extra = "  runtime: xgboost-distributed\n  resources: {gpu: '{{ gpus }}'}\nparameters: {gpus: [1, 2]}\n"
    assert render(tmp_path, shorthand("TrainJob", 2, extra))[0].manifest["spec"]["trainer"]["numNodes"] == 2
    with pytest.raises(SpecError, match=r"job.resources.gpu: 2 per node on 'xgboost-distributed'.*DMLC_NUM_WORKER"):
        render(tmp_path, shorthand("TrainJob", 2, extra), run_index=1)


@pytest.mark.parametrize("workers", [1, 3])
def test_trainjob_layout(tmp_path: Path, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand("TrainJob", workers))
    spec = job.manifest["spec"]
    assert spec["runtimeRef"] == {"name": "torch-distributed"}
    trainer = spec["trainer"]
    assert trainer["numNodes"] == workers
    assert trainer["image"] == "img:1"
    assert trainer["command"] == ["python", "train.py", "--epochs", "2"]


@pytest.mark.parametrize("workers", [1, 3])
def test_batch_job_layout(tmp_path: Path, workers: int) -> None:
    job, _, _ = render(tmp_path, shorthand("Job", workers, "timeout: 90.2\n"))
    spec = job.manifest["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == workers
    assert spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == 151  # the timeout plus a minute, rounded up to whole seconds
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["containers"][0]["name"] == "main"


def test_default_timeout_gives_an_hour_and_a_tenth_deadline(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, shorthand("PyTorchJob", 2))
    assert job.manifest["spec"]["runPolicy"]["activeDeadlineSeconds"] == 3960


# --- replica_groups --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "workers", "groups"),
    [
        ("Process", 1, [("worker", 1)]),
        ("Process", 3, [("worker", 3)]),
        ("PyTorchJob", 1, [("master", 1)]),
        ("PyTorchJob", 3, [("master", 1), ("worker", 2)]),
        ("TFJob", 3, [("worker", 3)]),
        ("JAXJob", 3, [("worker", 3)]),
        ("XGBoostJob", 3, [("master", 1), ("worker", 2)]),
        ("MPIJob", 3, [("launcher", 1), ("worker", 3)]),
        ("TrainJob", 3, [("node", 3)]),
        ("Job", 3, [("worker", 3)]),
    ],
)
def test_replica_groups_of_each_kind(tmp_path: Path, kind: str, workers: int, groups: list) -> None:
    job, _, env = render(tmp_path, shorthand(kind, workers))
    found = kinds.replica_groups(job.manifest)
    assert [(g.type, g.count) for g in found] == groups
    for group in found:
        (container,) = group.template["spec"]["containers"]
        assert env_of(container)["KUBEBENCH_RUN_ID"] == env["KUBEBENCH_RUN_ID"]


def test_replica_groups_of_trainjob_name_its_container_node(tmp_path: Path) -> None:
    job, _, _ = render(tmp_path, shorthand("TrainJob", 2))
    (group,) = kinds.replica_groups(job.manifest)
    (container,) = group.template["spec"]["containers"]
    assert container["name"] == "node"
    assert container["command"] == ["python", "train.py", "--epochs", "2"]


def test_replica_groups_are_in_rank_order() -> None:
    manifest = {
        "kind": "TFJob",
        "spec": {"tfReplicaSpecs": {"PS": {"replicas": 2}, "Worker": {"replicas": 4}, "Chief": {}, "Custom": {}}},
    }
    assert [(g.type, g.count) for g in kinds.replica_groups(manifest)] == [
        ("chief", 1),
        ("worker", 4),
        ("ps", 2),
        ("custom", 1),
    ]


def test_replica_groups_of_other_kubeflow_kinds() -> None:
    replicas = {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}
    manifest = {"kind": "XGBoostJob", "spec": {"xgbReplicaSpecs": replicas}}
    assert [(g.type, g.count) for g in kinds.replica_groups(manifest)] == [("master", 1), ("worker", 2)]


def test_batch_job_replicas_fall_back_to_parallelism() -> None:
    manifest = {"kind": "Job", "spec": {"parallelism": 5, "template": {}}}
    assert [(g.type, g.count) for g in kinds.replica_groups(manifest)] == [("worker", 5)]


def test_unsupported_kind_lists_supported_kinds() -> None:
    with pytest.raises(SpecError) as info:
        kinds.replica_groups({"kind": "Deployment", "spec": {}})
    message = str(info.value)
    assert "'Deployment' is not supported" in message
    for kind in ("Job", "MPIJob", "Process", "PyTorchJob", "TFJob", "TrainJob"):
        assert kind in message
    assert kinds.supported_kinds() == sorted(kinds.supported_kinds())


# --- build_manifest and inject directly ------------------------------------------------------


def test_build_manifest_from_a_job_shape() -> None:
    shape = JobShape(
        kind="PyTorchJob", workers=2, image="i", command=("a", "b"), env=(("X", "1"),), resources=(("gpu", "2"),)
    )
    m = kinds.build_manifest(shape, "kb-x", {"kubebench.io/run": "x"}, timeout=0.3)
    assert m["metadata"] == {"name": "kb-x", "labels": {"kubebench.io/run": "x"}}
    assert m["spec"]["runPolicy"]["activeDeadlineSeconds"] == 61
    worker = m["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker == {
        "name": "pytorch",
        "image": "i",
        "command": ["a", "b"],
        "env": [{"name": "X", "value": "1"}],
        "resources": {"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}},
    }


def test_inject_overrides_same_named_env_and_keeps_the_rest() -> None:
    manifest = {
        "kind": "Job",
        "metadata": {"name": "j", "labels": {"team": "ml"}},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "a",
                            "env": [{"name": "KUBEBENCH_RUN_ID", "value": "old"}, {"name": "K", "value": "v"}],
                        },
                        {"name": "b"},
                    ]
                }
            }
        },
    }
    kinds.inject(manifest, {"KUBEBENCH_RUN_ID": "new"}, {"kubebench.io/run": "new"})
    a, b = manifest["spec"]["template"]["spec"]["containers"]
    assert a["env"] == [{"name": "K", "value": "v"}, {"name": "KUBEBENCH_RUN_ID", "value": "new"}]
    assert b["env"] == [{"name": "KUBEBENCH_RUN_ID", "value": "new"}]
    assert manifest["metadata"]["labels"] == {"team": "ml", "kubebench.io/run": "new"}
    assert manifest["spec"]["template"]["metadata"]["labels"] == {"kubebench.io/run": "new"}


def test_job_env_cannot_shadow_the_run_env(tmp_path: Path) -> None:
    job, run, _ = render(tmp_path, shorthand("TFJob", 2, "  env: {KUBEBENCH_RUN_ID: mine, OTHER: x}\n"))
    for container in containers(job.manifest):
        values = env_of(container)
        assert values["KUBEBENCH_RUN_ID"] == run.id
        assert values["OTHER"] == "x"


def test_inject_into_a_trainjob_sets_trainer_env() -> None:
    manifest = {"kind": "TrainJob", "spec": {"trainer": {"env": [{"name": "A", "value": "1"}]}}}
    kinds.inject(manifest, {"KUBEBENCH_EXP_ID": "e"}, {"kubebench.io/run": "r"})
    assert manifest["spec"]["trainer"]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "KUBEBENCH_EXP_ID", "value": "e"},
    ]
    assert manifest["metadata"]["labels"] == {"kubebench.io/run": "r"}
