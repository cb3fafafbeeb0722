"""Why a run failed, recorded in one stable phrase per cause (local backend, through the runner), and
which failures `retries` tries again (only the infrastructure's: never the workload's own)."""

from __future__ import annotations

import math
import os
import resource
import sys
import textwrap
from pathlib import Path

import pytest
from support.timing import scaled

from kubebench.backends.local import LocalBackend, LocalConfig
from kubebench.errors import InfrastructureError
from kubebench.paths import RunPaths
from kubebench.render.job import RenderedJob
from kubebench.render.kinds import build_manifest
from kubebench.render.pods import JobShape
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

# How the workload fails, by case. `memory`: it caps its own address space (RLIMIT_AS) and
# allocates past it, a real allocation failure (MemoryError); `sigkill` kills itself with SIGKILL,
# as the kernel's OOM killer does.
FAIL = """
import os, resource, signal, sys
case = sys.argv[1]
print("case", case, flush=True)
if case == "exit3":
    sys.exit(3)
if case == "segv":
    os.kill(os.getpid(), signal.SIGSEGV)
if case == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
if case in ("exit137", "exit139"):
    os._exit(int(case[4:]))
if case == "memory":
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    data = bytearray(2 << 30)
if case == "tf_oom":  # what TensorFlow's traceback ends with when a tensor cannot be allocated
    ResourceExhaustedError = type("ResourceExhaustedError", (Exception,), {"__module__": "tensorflow.python.framework.errors_impl"})
    raise ResourceExhaustedError("OOM when allocating tensor with shape[8192,8192] and type float")
if case == "bad_alloc":  # what a C++ extension's uncaught std::bad_alloc prints before abort()
    print("terminate called after throwing an instance of 'std::bad_alloc'", file=sys.stderr)
    print("  what():  std::bad_alloc", file=sys.stderr, flush=True)
    os.abort()
"""
EXPECTED = {
    "exit3": (3, "worker-0 exited with code 3"),
    "segv": (139, "worker-0 killed by signal SIGSEGV"),
    "sigkill": (137, "worker-0 killed by signal SIGKILL (out of memory?)"),
    "exit137": (137, "worker-0 exited with code 137 (killed by signal SIGKILL: out of memory?)"),
    "exit139": (139, "worker-0 exited with code 139 (killed by signal SIGSEGV?)"),
    "memory": (1, "worker-0 out of memory (MemoryError): exited with code 1"),
    "tf_oom": (1, "worker-0 out of memory (tensorflow.python.framework.errors_impl.ResourceExhaustedError): exited with code 1"),
    "bad_alloc": (134, "worker-0 out of memory (std::bad_alloc): killed by signal SIGABRT"),
}
if sys.platform != "linux":  # macOS does not enforce RLIMIT_AS
    del EXPECTED["memory"]


def run(tmp_path: Path, spec: str, exp_id: str = "e1") -> list:
    (tmp_path / "fail.py").write_text(FAIL)
    (tmp_path / "post.py").write_text("import sys; print('post says no', file=sys.stderr); sys.exit(4)\n")
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(spec).lstrip())
    config = settings()
    store = open_store(config.store_url)
    execute(plan_experiment(load_spec(path), config, exp_id), store)
    runs = store.runs(exp_id)
    attempts = store.attempts(exp_id)
    store.engine.dispose()
    return [(r, attempts[r.run_id]) for r in runs]


def test_process_failures_have_precise_reasons_and_are_never_retried(home: Path, tmp_path: Path) -> None:
    found = run(tmp_path, f"""
        name: failing
        job:
          command: [python, fail.py, "{{{{ case }}}}"]
        parameters:
          case: [{", ".join(EXPECTED)}]
        retries: 2
    """)
    by_case = {r.params["case"]: (r, attempts) for r, attempts in found}
    for case, (code, reason) in EXPECTED.items():
        run_, attempts = by_case[case]
        assert (run_.status, run_.exit_code, run_.reason) == ("failed", code, reason), case
        assert [(a.attempt, a.status, a.reason) for a in attempts] == [(1, "failed", reason)], case
    if "memory" in by_case:
        assert "case memory" in by_case["memory"][0].log_tail and "MemoryError" in by_case["memory"][0].log_tail


def test_timeout_missing_metric_and_failed_postprocessor(home: Path, tmp_path: Path) -> None:
    # Long enough for the quick run to start Python and finish on a busy machine; short for the test.
    limit = math.ceil(scaled(5))
    found = run(tmp_path, """
        name: collecting
        job:
          command: [python, -c, "import sys, time; time.sleep({{ sleep }}); print('KUBEBENCH_METRIC x=1')"]
        parameters:
          sleep: [0, 600]
        timeout: LIMITs
        retries: 1
        metrics: [{name: throughput}]
    """.replace("LIMIT", str(limit)))
    reasons = {r.params["sleep"]: (r.status, r.reason, len(a)) for r, a in found}
    assert reasons == {0: ("failed", "metric 'throughput' missing from the run's outputs", 1),
                       600: ("timeout", f"timed out after {limit}s", 1)}
    (post,) = run(tmp_path, """
        name: post
        job:
          command: [python, -c, "print('KUBEBENCH_METRIC throughput=1')"]
        postprocess:
          - {kind: command, command: [python, post.py]}
        metrics: [{name: throughput}]
    """, "e2")
    assert post[0].status == "failed"
    assert post[0].reason.startswith("post-processor 'command' failed: command ")
    assert post[0].reason.endswith("post.py exited 4: post says no")


def test_running_out_of_file_descriptors_is_an_infrastructure_error(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path / "exp", tmp_path / "data", "e1", "r1")
    Path(paths.output).mkdir(parents=True)
    Path(paths.config).mkdir(parents=True)
    shape = JobShape("Process", 1, "img", (sys.executable, "-c", "pass"), (), ())
    job = RenderedJob("r1", "kb-r1", build_manifest(shape, "kb-test", {}, 60), tmp_path)
    backend = LocalBackend(LocalConfig())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = next(fd for fd in range(soft) if not _open(fd))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))  # the kernel refuses the next file
    try:
        with pytest.raises(InfrastructureError, match=r"cannot start worker-0 \(.*python.*\): Too many open files"):
            backend.submit(job, paths)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.parametrize(("returncode", "reason"), [
    (3, "exited with code 3"),
    (-11, "killed by signal SIGSEGV"),
    (-9, "killed by signal SIGKILL (out of memory?)"),
    (137, "exited with code 137 (killed by signal SIGKILL: out of memory?)"),
    (130, "exited with code 130 (killed by signal SIGINT?)"),
    (255, "exited with code 255"),
])
def test_exit_reasons(returncode: int, reason: str) -> None:
    from kubebench.backends.reasons import exit_reason

    assert exit_reason(returncode) == reason


@pytest.mark.parametrize(("tail", "reason"), [
    ("Traceback …\nMemoryError", "worker-0 out of memory (MemoryError): exited with code 1"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
     "worker-0 out of memory (torch.OutOfMemoryError): exited with code 1"),
    ("terminate called after throwing an instance of 'std::bad_alloc'", "worker-0 out of memory (std::bad_alloc): exited with code 1"),
    ("  what():  std::bad_alloc", "worker-0 out of memory (std::bad_alloc): exited with code 1"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8192]",
     "worker-0 out of memory (tensorflow.python.framework.errors_impl.ResourceExhaustedError): exited with code 1"),
    ("ResourceExhaustedError: Graph execution error: OOM when allocating tensor",
     "worker-0 out of memory (ResourceExhaustedError): exited with code 1"),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory.", "worker-0 out of memory (torch.cuda.OutOfMemoryError): exited with code 1"),
    ("jax.errors.NotMemoryError: no", "worker-0 exited with code 1"),  # a name merely containing "MemoryError"
    ("MemoryError: earlier, handled\n" + "step\n" * 10, "worker-0 exited with code 1"),  # not how the log ends
    ("ValueError: no", "worker-0 exited with code 1"),
])
def test_out_of_memory_is_read_from_the_end_of_the_log(tail: str, reason: str) -> None:
    from kubebench.backends.reasons import with_oom

    assert with_oom("worker-0 exited with code 1", tail) == reason
    assert with_oom("timed out after 1s", tail) == "timed out after 1s"


def test_a_killed_replica_whose_log_names_the_allocation_loses_the_question_mark() -> None:
    from kubebench.backends.reasons import with_oom

    tail = "RuntimeError: boom\nMemoryError"
    assert with_oom("launcher-0 killed by signal SIGKILL (out of memory?)", tail) == \
        "launcher-0 out of memory (MemoryError): killed by signal SIGKILL"
    assert with_oom("worker-1 exited with code 137 (killed by signal SIGKILL: out of memory?)", tail) == \
        "worker-1 out of memory (MemoryError): exited with code 137"


@pytest.mark.parametrize(("returncode", "code"), [(0, 0), (3, 3), (-9, 137), (-15, 143), (255, 255)])
def test_exit_codes_as_a_shell_reports_them(returncode: int, code: int) -> None:
    from kubebench.backends.reasons import exit_code

    assert exit_code(returncode) == code


@pytest.mark.parametrize(("returncode", "reason"), [
    (0, "exited with code 0"),
    (-99, "killed by signal 99"),  # no such signal here: its number
    (128, "exited with code 128"),
    (129, "exited with code 129 (killed by signal SIGHUP?)"),
    (192, "exited with code 192 (killed by signal SIGRTMAX?)"),
    (193, "exited with code 193"),
])
def test_exit_reasons_at_the_edges(returncode: int, reason: str) -> None:
    from kubebench.backends.reasons import exit_reason

    assert exit_reason(returncode) == reason
