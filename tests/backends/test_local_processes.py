"""Several processes per replica on the local backend, as the operators start them on a cluster:
torchrun's ``PET_*`` for PyTorchJob and TrainJob, the MPI hostfile's slots, each replica's own GPUs;
and one real run of 2 replicas × 2 processes (gloo) forming one group of 4 ranks."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from support.replicas import assert_replicas_in_sync, output_logs

from kubebench.backends.local import device_slices, plan_launches
from kubebench.backends.local_env import trainer_processes
from kubebench.render.kinds import build_manifest
from kubebench.render.pods import JobShape

TORCHRUN = (sys.executable, "-m", "torch.distributed.run")


def manifest(kind: str, workers: int, processes: int, resources: tuple = ()) -> dict:
    shape = JobShape(kind, workers, "img", ("python", "-m", "pkg.train", "--x"), (), resources, processes=processes)
    return build_manifest(shape, "kb-test", {}, 60)


def test_a_pytorchjob_replica_gets_torchruns_arguments_as_training_operator_gives_them(tmp_path: Path) -> None:
    launches = plan_launches(manifest("PyTorchJob", 2, 3), tmp_path, devices=lambda: [])
    assert [launch.argv for launch in launches] == [(*TORCHRUN, "--nproc-per-node=3", "-m", "pkg.train", "--x")] * 2
    worker = launches[1].env
    assert {k: worker[k] for k in ("PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "WORLD_SIZE", "RANK")} == \
        {"PET_NNODES": "2", "PET_NODE_RANK": "1", "PET_NPROC_PER_NODE": "3", "WORLD_SIZE": "6", "RANK": "1"}
    assert worker["PET_MASTER_ADDR"] == worker["MASTER_ADDR"] == "127.0.0.1"
    assert worker["PET_MASTER_PORT"] == worker["MASTER_PORT"] == launches[0].env["MASTER_PORT"]


def test_a_trainjob_node_is_told_its_processes_as_trainers_torch_plugin_tells_it(tmp_path: Path) -> None:
    many = plan_launches(manifest("TrainJob", 2, 2), tmp_path, devices=lambda: [])
    assert many[1].env["PET_NPROC_PER_NODE"] == "2" and "WORLD_SIZE" not in many[1].env  # torchrun's to give
    assert many[1].argv[:4] == (*TORCHRUN, "--nproc-per-node=2")
    one = plan_launches(manifest("TrainJob", 2, 1), tmp_path)[1].env
    assert (one["PET_NPROC_PER_NODE"], one["WORLD_SIZE"], one["RANK"]) == ("1", "2", "1")


@pytest.mark.parametrize(("trainer", "expected"), [
    ({"numProcPerNode": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}, "4"),
    ({"resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}}, "auto"),
    ({"resourcesPerNode": {"requests": {"cpu": "500m"}, "limits": {"cpu": "4"}}}, "1"),  # the request, rounded up
    ({"resourcesPerNode": {"limits": {"cpu": "2.5"}}}, "3"),
    ({}, "1"),
])
def test_a_template_trainjobs_processes_follow_trainers_rule(trainer: dict, expected: str) -> None:
    assert trainer_processes({"kind": "TrainJob", "spec": {"trainer": trainer}}) == expected


def test_an_mpijob_hostfile_has_each_workers_slots(tmp_path: Path) -> None:
    (launcher,) = plan_launches(manifest("MPIJob", 2, 4), tmp_path)
    assert launcher.argv[:3] == ("mpirun", "-np", "8")
    assert Path(launcher.env["OMPI_MCA_orte_default_hostfile"]).read_text() == "localhost slots=8\n"
    as_worker = manifest("MPIJob", 2, 4)
    as_worker["spec"]["runLauncherAsWorker"] = True
    plan_launches(as_worker, tmp_path)
    assert (tmp_path / "hostfile").read_text() == "localhost slots=12\n"  # the launcher hosts ranks too


def test_each_replica_sees_its_own_gpus_when_the_machine_has_enough() -> None:
    assert device_slices(2, 2, ["0", "1", "2", "3"]) == ["0,1", "2,3"]
    assert device_slices(2, 2, ["4", "5", "6", "7", "0"]) == ["4,5", "6,7"]
    assert device_slices(2, 2, ["0", "1", "2"]) == []  # too few: they share (and say so by failing to fit)
    assert device_slices(3, 1, ["0", "1", "2"]) == []  # one each: cuda:LOCAL_RANK already differs


def test_replicas_of_several_ranks_get_their_gpus_in_rank_order(tmp_path: Path) -> None:
    launches = plan_launches(manifest("PyTorchJob", 2, 2), tmp_path, devices=lambda: ["0", "1", "2", "3"])
    assert [launch.env["CUDA_VISIBLE_DEVICES"] for launch in launches] == ["0,1", "2,3"]
    # a template leaving it to the operator (auto: a pod's every GPU): an equal share of this machine's each
    template = manifest("TrainJob", 2, 1, (("gpu", "1"),))
    del template["spec"]["trainer"]["numProcPerNode"]
    launches = plan_launches(template, tmp_path, devices=lambda: ["0", "1"])
    assert [(x.env["PET_NPROC_PER_NODE"], x.env["CUDA_VISIBLE_DEVICES"]) for x in launches] == [("auto", "0"), ("auto", "1")]
    assert all("CUDA_VISIBLE_DEVICES" not in x.env for x in plan_launches(template, tmp_path, devices=lambda: ["0"]))


SPEC = """
name: ranks
job:
  kind: %s
  workers: 2
  processes_per_replica: 2
  command: [python, -m, kubebench.workloads.cnn, --steps, "2", --warmup-steps, "1", --batch-size, "4", --threads, "1"]
metrics: [{name: images_per_sec}]
timeout: 4m
"""


@pytest.mark.slow
def test_two_replicas_of_two_processes_train_as_one_group_of_four(tmp_path: Path, monkeypatch) -> None:
    from kubebench.runner import execute, plan_experiment
    from kubebench.settings import settings
    from kubebench.spec.load import load_spec
    from kubebench.store.store import open_store

    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBEBENCH_STORE", raising=False)
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SPEC % "PyTorchJob"))
    config = settings()
    store = open_store(config.store_url)
    experiment = plan_experiment(load_spec(tmp_path / "spec.yaml"), config, "ranks-1")
    execute(experiment, store)
    (run,) = store.runs("ranks-1")
    assert run.status == "succeeded", run.reason
    assert run.provenance["processes_per_replica"] == 2
    output = tmp_path / "home" / "experiments" / "ranks-1" / run.run_id / "output"
    # ranks 0 … 3 of one group of 4, the same weights on every one; the rate their sum
    assert_replicas_in_sync(output_logs(output), 4, run.metrics["images_per_sec"])
