"""``job.processes_per_replica``: how many ranks each replica starts, and how each kind's operator is
told (torchrun and ``nprocPerNode`` / ``numProcPerNode``, ``slotsPerWorker`` and ``mpirun -np``); an
MPIJob launcher that runs no rank asks for a little CPU and memory only."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_kinds import pod_templates, render, shorthand

from kubebench.errors import SpecError
from kubebench.render import kinds
from kubebench.render.pods import torchrun
from kubebench.spec.load import load_spec

GPU8 = "  resources: {gpu: 8, cpu: 16}\n"
TRAIN = ["python", "train.py", "--epochs", "2"]


def commands(manifest: dict) -> dict[str, list[str]]:
    if manifest["kind"] == "TrainJob":
        return {"node": manifest["spec"]["trainer"]["command"]}
    return {t: p["spec"]["containers"][0]["command"] for t, p in pod_templates(manifest).items()}


def test_auto_starts_one_rank_per_gpu_of_each_torch_kind(tmp_path: Path) -> None:
    pytorch = render(tmp_path, shorthand("PyTorchJob", 2, GPU8))[0].manifest
    assert pytorch["spec"]["nprocPerNode"] == "8"
    assert commands(pytorch) == {t: ["torchrun", "--nproc-per-node=8", "train.py", "--epochs", "2"]
                                 for t in ("Master", "Worker")}
    trainjob = render(tmp_path, shorthand("TrainJob", 2, GPU8))[0].manifest
    assert trainjob["spec"]["trainer"]["numProcPerNode"] == 8
    assert commands(trainjob) == {"node": ["torchrun", "--nproc-per-node=8", "train.py", "--epochs", "2"]}
    mpi = render(tmp_path, shorthand("MPIJob", 2, GPU8))[0].manifest
    assert mpi["spec"]["slotsPerWorker"] == 8
    assert commands(mpi)["Launcher"] == ["mpirun", "-np", "16", *TRAIN]
    assert all(kinds.processes_per_replica(m) == 8 for m in (pytorch, trainjob, mpi))


@pytest.mark.parametrize("kind", ["PyTorchJob", "TrainJob", "MPIJob"])
def test_without_gpus_auto_is_one_rank_and_the_command_is_as_written(tmp_path: Path, kind: str) -> None:
    manifest = render(tmp_path, shorthand(kind, 2, "  resources: {cpu: 4}\n"))[0].manifest
    assert kinds.processes_per_replica(manifest) == 1
    found = commands(manifest)
    assert found.get("Launcher", ["mpirun", "-np", "2", *TRAIN]) == ["mpirun", "-np", "2", *TRAIN]
    assert all(c == TRAIN for t, c in found.items() if t != "Launcher" and kind != "MPIJob")
    # told 1 explicitly: a TrainJob on CPUs would otherwise get PET_NPROC_PER_NODE = its CPU count
    assert manifest["spec"].get("nprocPerNode", "1") == "1"
    assert manifest["spec"].get("trainer", {}).get("numProcPerNode", 1) == 1


def test_a_number_or_a_parameter_sets_the_ranks_and_one_opts_out(tmp_path: Path) -> None:
    extra = GPU8 + "  processes_per_replica: '{{ procs }}'\nparameters: {procs: [2, 1]}\n"
    two = render(tmp_path, shorthand("PyTorchJob", 2, extra))[0].manifest
    assert (two["spec"]["nprocPerNode"], commands(two)["Master"][:2]) == ("2", ["torchrun", "--nproc-per-node=2"])
    one = render(tmp_path, shorthand("PyTorchJob", 2, extra), run_index=1)[0].manifest
    assert (one["spec"]["nprocPerNode"], commands(one)["Master"]) == ("1", TRAIN)


@pytest.mark.parametrize(("kind", "extra"), [("TFJob", ""), ("JAXJob", ""), ("Job", ""), ("Process", ""),
                                             ("TrainJob", "  runtime: jax-distributed\n")])
def test_kinds_of_one_process_per_replica_refuse_more_and_take_auto(tmp_path: Path, kind: str, extra: str) -> None:
    manifest = render(tmp_path, shorthand(kind, 2, extra + GPU8))[0].manifest
    assert kinds.processes_per_replica(manifest) == 1 and "torchrun" not in str(commands_or_none(manifest))
    with pytest.raises(SpecError, match=rf"job.processes_per_replica \(trial no parameters\): kind: {kind}.* runs one "
                                        "process per replica"):
        render(tmp_path, shorthand(kind, 2, extra + "  processes_per_replica: 2\n"))


def commands_or_none(manifest: dict) -> object:
    return manifest["spec"].get("trainer") or manifest["spec"]


@pytest.mark.parametrize(("value", "message"), [(0, "is not a number of processes"), ("many", "is not a number")])
def test_a_bad_number_is_refused_when_loaded(tmp_path: Path, value: object, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        render(tmp_path, shorthand("PyTorchJob", 2, f"  processes_per_replica: {value}\n"))


def test_a_templated_number_is_checked_per_trial(tmp_path: Path) -> None:
    extra = "  processes_per_replica: '{{ p }}'\nparameters: {p: [0]}\n"
    with pytest.raises(SpecError, match=r"job.processes_per_replica \(trial p=0\): '0' is not a number"):
        render(tmp_path, shorthand("PyTorchJob", 2, extra))


def test_a_template_sets_its_operators_own_field(tmp_path: Path) -> None:
    (tmp_path / "job.yaml.j2").write_text("kind: PyTorchJob\n")
    (tmp_path / "spec.yaml").write_text("name: b\njob:\n  template: job.yaml.j2\n  processes_per_replica: 4\n")
    with pytest.raises(SpecError, match="processes_per_replica:` belongs to the shorthand"):
        load_spec(tmp_path / "spec.yaml")


@pytest.mark.parametrize(("command", "expected"), [
    (("python", "-m", "pkg.train", "--x"), ["torchrun", "--nproc-per-node=4", "-m", "pkg.train", "--x"]),
    (("python3", "train.py"), ["torchrun", "--nproc-per-node=4", "train.py"]),
    (("python", "-u", "train.py"), ["torchrun", "--nproc-per-node=4", "--no-python", "python", "-u", "train.py"]),
    (("bash", "run.sh"), ["torchrun", "--nproc-per-node=4", "--no-python", "bash", "run.sh"]),
    (("torchrun", "train.py"), ["torchrun", "train.py"]),  # it reads PET_NPROC_PER_NODE itself
])
def test_torchrun_starts_a_module_a_script_or_any_program(command: tuple, expected: list) -> None:
    assert torchrun(command, 4) == expected
    assert torchrun(command, 1) == list(command)


def test_an_mpijob_launcher_asks_for_a_little_cpu_and_memory_not_the_workers_gpus(tmp_path: Path) -> None:
    manifest = render(tmp_path, shorthand("MPIJob", 2, "  resources: {gpu: 8, cpu: 16, memory: 64Gi}\n"))[0].manifest
    templates = pod_templates(manifest)
    (launcher,), (worker,) = templates["Launcher"]["spec"]["containers"], templates["Worker"]["spec"]["containers"]
    assert launcher["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}}
    assert worker["resources"]["requests"] == {"nvidia.com/gpu": "8", "cpu": "16", "memory": "64Gi"}
    assert "runLauncherAsWorker" not in manifest["spec"]
