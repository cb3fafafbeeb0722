"""The local backend: operator environments, process groups, failure, timeout and cancel."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from support.timing import scaled, wait_for

from kubebench.backends.local import LocalBackend, LocalConfig, plan_launches
from kubebench.paths import RunPaths
from kubebench.render.job import RenderedJob
from kubebench.render.kinds import build_manifest
from kubebench.render.pods import JobShape


def manifest(kind: str, workers: int, command: list[str], runtime: str = "torch-distributed") -> dict:
    shape = JobShape(kind, workers, "img", tuple(command), (("FOO", "bar"),), (), runtime=runtime)
    return build_manifest(shape, "kb-test", {}, 60)


def env_of(launches, name):
    return next(launch.env for launch in launches if launch.name == name)


def test_pytorchjob_gets_ranks_and_one_master_port(tmp_path: Path) -> None:
    launches = plan_launches(manifest("PyTorchJob", 3, ["python", "-c", "pass"]), tmp_path)
    assert [launch.name for launch in launches] == ["master-0", "worker-0", "worker-1"]
    assert [launch.env["RANK"] for launch in launches] == ["0", "1", "2"]
    assert {launch.env["WORLD_SIZE"] for launch in launches} == {"3"}
    assert len({launch.env["MASTER_PORT"] for launch in launches}) == 1
    assert all(launch.env["FOO"] == "bar" for launch in launches)
    assert launches[0].argv[0] == sys.executable  # `python` is this interpreter locally


def test_tfjob_gets_tf_config(tmp_path: Path) -> None:
    launches = plan_launches(manifest("TFJob", 2, ["python", "-c", "pass"]), tmp_path)
    config = json.loads(env_of(launches, "worker-1")["TF_CONFIG"])
    assert config["task"] == {"type": "worker", "index": 1}
    assert len(config["cluster"]["worker"]) == 2
    assert all(address.startswith("127.0.0.1:") for address in config["cluster"]["worker"])


def test_trainjob_and_batch_job_env(tmp_path: Path) -> None:
    train = plan_launches(manifest("TrainJob", 2, ["python", "-c", "pass"]), tmp_path)
    assert [launch.name for launch in train] == ["node-0", "node-1"]
    assert env_of(train, "node-1")["PET_NODE_RANK"] == "1"
    batch = plan_launches(manifest("Job", 2, ["python", "-c", "pass"]), tmp_path)
    assert [launch.env["JOB_COMPLETION_INDEX"] for launch in batch] == ["0", "1"]


def test_jaxjob_workers_get_the_coordinator_as_training_operator_gives_it(tmp_path: Path) -> None:
    launches = plan_launches(manifest("JAXJob", 3, ["python", "-c", "pass"]), tmp_path)
    assert [launch.name for launch in launches] == ["worker-0", "worker-1", "worker-2"]
    assert [launch.env["PROCESS_ID"] for launch in launches] == ["0", "1", "2"]
    assert {(e["COORDINATOR_ADDRESS"], e["COORDINATOR_PORT"], e["NUM_PROCESSES"]) for e in (x.env for x in launches)} \
        == {("127.0.0.1", launches[0].env["COORDINATOR_PORT"], "3")}
    assert "RANK" not in launches[0].env and launches[2].env["LOCAL_WORLD_SIZE"] == "3"


def test_xgboostjob_ranks_the_workers_after_the_master(tmp_path: Path) -> None:
    launches = plan_launches(manifest("XGBoostJob", 3, ["python", "-c", "pass"]), tmp_path)
    assert [(x.name, x.env["RANK"]) for x in launches] == [("master-0", "0"), ("worker-0", "1"), ("worker-1", "2")]
    master = launches[0].env
    assert (master["MASTER_ADDR"], master["WORLD_SIZE"], master["WORKER_ADDRS"]) == ("127.0.0.1", "3", "127.0.0.1,127.0.0.1")
    assert len({x.env["MASTER_PORT"] for x in launches}) == 1 and master["WORKER_PORT"] != master["MASTER_PORT"]
    alone = plan_launches(manifest("XGBoostJob", 1, ["python", "-c", "pass"]), tmp_path)[0].env
    assert alone["WORLD_SIZE"] == "1" and "WORKER_ADDRS" not in alone  # no workers: no LightGBM addresses


@pytest.mark.parametrize(("runtime", "given", "absent"), [
    ("jax-distributed", {"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "1"}, "PET_NNODES"),
    ("xgboost-distributed", {"DMLC_TRACKER_URI": "127.0.0.1", "DMLC_TASK_ID": "1", "DMLC_NUM_WORKER": "2"}, "RANK"),
    ("my-own-runtime", {"PET_NNODES": "2", "PET_NODE_RANK": "1", "RANK": "1"}, "JAX_PROCESS_ID"),
])
def test_a_trainjob_node_gets_what_its_runtimes_plugin_gives(tmp_path: Path, runtime: str, given: dict, absent: str) -> None:
    launches = plan_launches(manifest("TrainJob", 2, ["python", "-c", "pass"], runtime), tmp_path)
    node = launches[1].env
    assert {k: node[k] for k in given} == given and absent not in node
    assert node["JOB_COMPLETION_INDEX"] == "1"
    port = launches[0].env.get("DMLC_TRACKER_PORT") or launches[0].env.get("PET_MASTER_PORT") or \
        launches[0].env["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)[1]
    assert port in str(node.values())  # rank 0's address, the same for both


def test_mpijob_runs_the_launcher_with_a_hostfile(tmp_path: Path) -> None:
    launches = plan_launches(manifest("MPIJob", 2, ["python", "train.py"]), tmp_path)
    assert [launch.name for launch in launches] == ["launcher-0"]
    assert launches[0].argv[:3] == ("mpirun", "-np", "2")
    hostfile = Path(launches[0].env["OMPI_MCA_orte_default_hostfile"])
    assert hostfile.read_text() == "localhost slots=2\n"


def submit(tmp_path: Path, kind: str, workers: int, code: str, grace: float = 1.0):
    paths = RunPaths(tmp_path / "exp", tmp_path / "data", "e1", "r1")
    Path(paths.output).mkdir(parents=True)
    Path(paths.config).mkdir(parents=True)
    job = RenderedJob("r1", "kb-r1", manifest(kind, workers, [sys.executable, "-c", code]), tmp_path)
    backend = LocalBackend(LocalConfig(kill_grace=grace))
    return backend, backend.submit(job, paths), paths


def test_success_writes_one_log_per_replica(tmp_path: Path) -> None:
    backend, handle, paths = submit(tmp_path, "PyTorchJob", 2, "import os; print('rank', os.environ['RANK'])")
    outcome = backend.wait(handle, timeout=scaled(30))
    assert (outcome.state, outcome.exit_code) == ("succeeded", 0)
    assert (Path(paths.output) / "master-0.log").read_text().strip() == "rank 0"
    assert (Path(paths.output) / "worker-0.log").read_text().strip() == "rank 1"


def test_one_failing_replica_fails_the_job_and_stops_the_others(tmp_path: Path) -> None:
    code = "import os, sys, time\nif os.environ['RANK'] == '1': sys.exit(3)\ntime.sleep(60)"
    backend, handle, _ = submit(tmp_path, "PyTorchJob", 2, code)
    started = time.monotonic()
    outcome = backend.wait(handle, timeout=scaled(30))
    assert outcome.state == "failed"
    assert outcome.exit_code == 3
    assert outcome.reason == "worker-0 exited with code 3"
    assert time.monotonic() - started < scaled(10)  # the master's sleep(60) was cut short
    assert all(p.poll() is not None for _, p in handle.processes)


def test_signal_is_reported(tmp_path: Path) -> None:
    backend, handle, _ = submit(tmp_path, "Process", 1, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    outcome = backend.wait(handle, timeout=scaled(30))
    assert outcome.state == "failed"
    assert outcome.exit_code == 137
    assert "SIGKILL" in outcome.reason


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; it just waits for its parent (init) to reap it.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)"
    )
    backend, handle, _ = submit(tmp_path, "Process", 1, code, grace=0.5)
    # The timeout counts from the wait: start it once the grandchild exists, however slow the start.
    grandchild = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), 60, "the grandchild's pid file"))
    outcome = backend.wait(handle, timeout=1.5)
    assert outcome.state == "timeout"
    assert "timed out after 1.5s" in outcome.reason
    wait_for(lambda: not _alive(grandchild), 10, "the workload's own child to end with the timeout")


def test_interrupt_while_waiting_cancels_the_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend, handle, _ = submit(tmp_path, "Process", 2, "import time; time.sleep(60)", grace=0.5)
    calls = []
    real_sleep = time.sleep

    def interrupted(seconds: float) -> None:
        calls.append(seconds)
        if len(calls) == 1:  # Ctrl-C during the first wait; later sleeps (the kill grace) are real
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr("kubebench.backends.base.time.sleep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        backend.wait(handle, timeout=scaled(30))
    assert calls
    assert all(p.poll() is not None for _, p in handle.processes)


def test_missing_program_is_a_backend_error(tmp_path: Path) -> None:
    from kubebench.errors import BackendError

    paths = RunPaths(tmp_path / "exp", tmp_path / "data", "e1", "r1")
    Path(paths.output).mkdir(parents=True)
    Path(paths.config).mkdir(parents=True)
    job = RenderedJob("r1", "kb-r1", manifest("Process", 1, ["no-such-program-kb"]), tmp_path)
    with pytest.raises(BackendError, match="cannot start worker-0 \\(no-such-program-kb\\)"):
        LocalBackend(LocalConfig()).submit(job, paths)
