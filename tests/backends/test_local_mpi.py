"""The local backend's MPIJob launcher runs kubebench's interpreter under mpirun, as for other kinds."""

from __future__ import annotations

import sys
from pathlib import Path

from kubebench.backends.local import plan_launches
from kubebench.render.kinds import build_manifest
from kubebench.render.pods import JobShape


def launcher_argv(tmp_path: Path, command: list[str]) -> tuple[str, ...]:
    shape = JobShape("MPIJob", 2, "img", tuple(command), (), ())
    (launch,) = plan_launches(build_manifest(shape, "kb-test", {}, 60), tmp_path)
    return launch.argv


def test_python_after_mpirun_options_is_this_interpreter(tmp_path: Path) -> None:
    argv = launcher_argv(tmp_path, ["python", "-m", "kubebench.workloads.cnn", "--model", "python"])
    assert argv == ("mpirun", "-np", "2", sys.executable, "-m", "kubebench.workloads.cnn", "--model", "python")


def test_other_programs_under_mpirun_are_left_alone(tmp_path: Path) -> None:
    argv = launcher_argv(tmp_path, ["./osu_allreduce", "-m", "1024"])
    assert argv == ("mpirun", "-np", "2", "./osu_allreduce", "-m", "1024")
