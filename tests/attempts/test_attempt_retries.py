"""One run, attempt by attempt (issue #20: mutants of ``kubebench.attempts`` no test killed): retries
and their delays, the leftover of an interrupted attempt stopped once, a bug failing the run without a
retry, what the backend measured apart (queue time, warnings, leftovers) kept on the run, provenance,
the job released, the post-processor's view of the run, and a run folder that cannot be written.

The backend is the local one with its boundary scripted: nothing is started, each attempt's job ends
as the next outcome given, and its sleep between attempts is recorded, not slept."""

from __future__ import annotations

import json
import logging
import subprocess
import textwrap
from pathlib import Path

import pytest
from support.backends import ScriptedBackend

from kubebench.attempts import execute_run
from kubebench.backends.base import Outcome
from kubebench.efficiency.counters import UNAVAILABLE_KEY
from kubebench.errors import BackendError, StorageError
from kubebench.runner import plan_experiment, record_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

SPEC = """
name: scripted
job:
  command: [python, -c, "pass"]
"""
SUCCEEDED = Outcome("succeeded", 0, "")
NODE_LOST = Outcome("failed", None, "node n1 was lost", True)


def Scripted(*outcomes: Outcome, **script) -> ScriptedBackend:
    """Starts nothing: the job of attempt N is ``job-N`` and ends as the N-th of ``outcomes``."""
    return ScriptedBackend(*outcomes, **script)


class Setup:
    """An experiment planned and recorded from ``SPEC`` + ``extra`` in ``folder``, and its store."""

    def __init__(self, folder: Path, extra: str = "") -> None:
        path = folder / "spec.yaml"
        path.write_text(textwrap.dedent(SPEC) + textwrap.dedent(extra))
        config = settings()
        self.experiment = plan_experiment(load_spec(path), config, "scripted-1")
        self.store = open_store(config.store_url)
        record_experiment(self.experiment, self.store)
        self.runs = self.experiment.plan.runs

    def execute(self, backend: ScriptedBackend, run=None, **options):
        return execute_run(self.experiment, backend, self.store, run or self.runs[0], **options)

    def attempts(self, run=None) -> list[tuple]:
        return [(a.attempt, a.status, a.reason) for a in self.store.attempts("scripted-1")[(run or self.runs[0]).id]]

    def stored(self, run=None):
        return self.store.run((run or self.runs[0]).id)

    def close(self) -> None:
        self.store.engine.dispose()


@pytest.fixture
def setup(home: Path, tmp_path: Path):
    made: list[Setup] = []

    def make(extra: str = "") -> Setup:
        made.append(Setup(tmp_path, extra))
        return made[-1]

    yield make
    for each in made:
        each.close()


def notes(info: dict[str, str]) -> dict[str, str]:
    """The run's info but the efficiency accounting's (no energy counter in a job that ran nothing)."""
    return {k: v for k, v in info.items() if k != UNAVAILABLE_KEY}


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "kubebench"]


# --- execute_run: attempts, delays, leftovers ---------------------------------------------------------

def test_each_infrastructure_failure_is_retried_after_a_doubling_delay_up_to_the_cap(setup) -> None:
    exp = setup("retries: 7\n")
    backend = Scripted(*[NODE_LOST] * 7)
    result = exp.execute(backend)
    assert result.status == "succeeded"
    assert backend.slept == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backend.submitted == [f"job-{i}" for i in range(1, 9)]
    assert exp.attempts() == [(i, "failed", "node n1 was lost") for i in range(1, 8)] + [(8, "succeeded", "")]
    assert backend.reclaimed == []  # a run not interrupted before: nothing of it to stop


def test_retries_stop_when_spent_and_the_run_keeps_the_last_failure(setup) -> None:
    exp = setup("retries: 2\n")
    backend = Scripted(*[NODE_LOST] * 5)
    result = exp.execute(backend)
    assert (result.status, result.reason) == ("failed", "node n1 was lost")
    assert backend.slept == [1.0, 2.0]
    assert exp.attempts() == [(i, "failed", "node n1 was lost") for i in (1, 2, 3)]
    assert (exp.stored().status, exp.stored().attempts) == ("failed", 3)


def test_the_leftover_of_an_interrupted_run_is_stopped_before_its_first_attempt_only(setup) -> None:
    exp = setup("retries: 2\n")
    backend = Scripted(NODE_LOST, NODE_LOST)
    result = exp.execute(backend, leftover=True)
    assert result.status == "succeeded"
    run_folder = str(exp.experiment.local_paths(exp.runs[0]).run)
    assert backend.reclaimed == [[run_folder]]
    assert [a[:2] for a in exp.attempts()] == [(1, "failed"), (2, "failed"), (3, "succeeded")]


def test_a_bug_fails_the_run_once_with_the_error_as_its_reason_and_is_never_retried(setup, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="kubebench")
    exp = setup("retries: 2\n")
    backend = Scripted(NODE_LOST, release=RuntimeError("release: unexpected answer"))
    result = exp.execute(backend)
    reason = "kubebench could not run it: RuntimeError: release: unexpected answer"
    assert (result.run_id, result.status, result.reason) == (exp.runs[0].id, "failed", reason)
    assert backend.submitted == ["job-1"] and backend.slept == []
    assert exp.attempts() == [(1, "failed", reason)]
    assert warnings(caplog) == [f"run {exp.runs[0].id} failed: {reason}"]


# --- _release, _provenance ----------------------------------------------------------------------------

def test_the_job_is_released_and_a_failing_release_is_only_logged(setup, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="kubebench")
    exp = setup()
    backend = Scripted(release=BackendError("the job was already gone"))
    result = exp.execute(backend)
    assert result.status == "succeeded"
    assert backend.released == ["job-1"]
    assert warnings(caplog) == ["could not release the job of an attempt: the job was already gone"]


def test_provenance_names_the_workloads_commit_the_backend_and_where_the_job_ran(setup, tmp_path: Path) -> None:
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "train.py").write_text("pass\n")
    subprocess.run([*git, "add", "train.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "workload"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    exp = setup()
    result = exp.execute(Scripted())
    assert result.provenance == {"git_commit": commit, "git_dirty": False, "backend": "local", "job": "job-1"}


# --- _with_backend_notes, _result ---------------------------------------------------------------------

def test_queue_time_is_info_of_every_run_and_a_metric_of_a_succeeded_one(setup) -> None:
    exp = setup("repeats: 2\n")
    first, second = exp.runs
    succeeded = exp.execute(Scripted(Outcome("succeeded", 0, "", queued_seconds=12.34567)), first)
    failed = exp.execute(Scripted(Outcome("failed", 3, "worker-0 exited with code 3", queued_seconds=2.5)), second)
    assert (succeeded.metrics, notes(succeeded.info)) == ({"queue_seconds": 12.346}, {"queue_seconds": "12.346"})
    assert (failed.status, failed.metrics, notes(failed.info)) == ("failed", {}, {"queue_seconds": "2.500"})
    assert exp.stored(first).metrics == {"queue_seconds": 12.346}


def test_what_the_backend_could_not_collect_and_what_it_stopped_are_info_of_the_run(setup) -> None:
    exp = setup()
    leftover = "stopped 1 process(es) still running after the job ended: 4242 (sleep)"
    backend = Scripted(Outcome("succeeded", 0, "", warning=leftover),
                       warnings=("cannot read the log of worker-1", "cannot read the log of worker-2"))
    result = exp.execute(backend)
    assert (result.status, result.metrics) == ("succeeded", {})
    assert notes(result.info) == {"leftover_warning": leftover,
                           "log_warning": "cannot read the log of worker-1; cannot read the log of worker-2"}
    assert exp.stored().info == result.info


# --- _context, _prepare_folders -----------------------------------------------------------------------

PROBE = """
import json


def record(ctx):
    seen = {"experiment": ctx.experiment_id, "trial": ctx.trial_id, "run": ctx.run_id, "repeat": ctx.repeat,
            "params": ctx.params}
    (ctx.result / "result.json").write_text(json.dumps({"seen": json.dumps(seen)}))
"""


def test_a_post_processor_is_given_the_run_it_reads(setup, tmp_path: Path) -> None:
    (tmp_path / "attempts_context_probe.py").write_text(textwrap.dedent(PROBE))
    exp = setup("""
        parameters: {lr: [0.5]}
        repeats: 2
        postprocess: [{kind: python, function: "attempts_context_probe:record"}]
    """)
    run = exp.runs[1]
    result = exp.execute(Scripted(), run)
    seen = {"experiment": "scripted-1", "trial": run.trial.id, "run": run.id, "repeat": 1, "params": {"lr": 0.5}}
    assert (result.status, notes(result.info)) == ("succeeded", {"seen": json.dumps(seen)})


def test_the_specs_data_root_is_made_with_its_parents(setup, tmp_path: Path) -> None:
    exp = setup("data_root: datasets/shared/imagenet\n")
    assert exp.execute(Scripted()).status == "succeeded"
    assert (tmp_path / "datasets" / "shared" / "imagenet").is_dir()


# --- _prepare, _write_record: a run folder that cannot be written ---------------------------------------

def test_a_run_folder_that_cannot_be_made_stops_the_experiment_naming_the_folder(setup) -> None:
    exp = setup()
    run_folder = Path(exp.experiment.local_paths(exp.runs[0]).run)
    run_folder.parent.mkdir(parents=True, exist_ok=True)
    run_folder.write_text("not a folder")
    with pytest.raises(StorageError) as raised:
        exp.execute(Scripted())
    assert str(raised.value) == f"cannot write the run's folder {run_folder}: Not a directory"


def test_a_run_record_that_cannot_be_written_fails_the_run_and_stops_the_experiment(setup) -> None:
    exp = setup()
    backend = Scripted(Outcome("succeeded", 0, "", queued_seconds=1.0),
                       after_wait=lambda paths: Path(paths.run, "run.json").mkdir())
    with pytest.raises(StorageError) as raised:
        exp.execute(backend)
    run_folder = exp.experiment.local_paths(exp.runs[0]).run
    reason = f"cannot write the run's folder {run_folder}: Is a directory"
    assert str(raised.value) == reason
    stored = exp.stored()
    assert (stored.status, stored.reason, stored.metrics) == ("failed", reason, {})
    assert exp.attempts() == [(1, "failed", reason)]
