"""An attempt that a bug stops (issue #20: mutants of ``kubebench.attempts`` no test killed): the run
is recorded failed with the error as its reason, the job it started is cancelled (a failing cancel is
logged, the first error stays the reason), and the traceback is in the debug log.

The backend is the local one with fault injection at its boundary: nothing is started, and the step
under test raises an error that is not a ``BackendError`` (a backend's bug)."""

from __future__ import annotations

import logging
import textwrap
import time
from pathlib import Path

import pytest
from support.backends import ScriptedBackend

from kubebench.attempts import execute_run
from kubebench.runner import plan_experiment, record_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

SPEC = """
name: buggy
job:
  command: [python, -c, "pass"]
"""
HANDLE = "job-of-buggy"


def Buggy(wait: Exception | None = None, cancel: Exception | None = None,
          release: Exception | None = None) -> ScriptedBackend:
    """Submits nothing (its handle is a name); ``wait``, ``cancel`` or ``release`` raise when given an error."""
    return ScriptedBackend(*([wait] if wait is not None else []), handle=HANDLE, cancel=cancel, release=release,
                           provenance={})


def attempt(tmp_path: Path, backend: ScriptedBackend):
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(SPEC))
    config = settings()
    experiment = plan_experiment(load_spec(path), config, "buggy-1")
    store = open_store(config.store_url)
    record_experiment(experiment, store)
    (run,) = experiment.plan.runs
    started = time.time()
    result = execute_run(experiment, backend, store, run)
    assert result.run_id == run.id and started <= result.finished_at <= time.time()
    (stored,) = store.runs("buggy-1")
    assert (stored.status, stored.reason) == (result.status, result.reason)
    store.engine.dispose()
    return run, result


def debug_traceback(caplog: pytest.LogCaptureFixture) -> BaseException | None:
    (record,) = [r for r in caplog.records if r.levelno == logging.DEBUG and r.name == "kubebench"
                 and r.getMessage() == "unexpected error during a run"]
    return record.exc_info[1] if record.exc_info else None


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "kubebench"]


@pytest.mark.parametrize("cancel", [None, RuntimeError("the API server went away")], ids=["cancelled", "cancel-fails"])
def test_a_bug_while_waiting_fails_the_run_and_cancels_its_job(home: Path, tmp_path: Path, caplog, cancel) -> None:
    caplog.set_level(logging.DEBUG, logger="kubebench")
    bug = KeyError("phase")
    backend = Buggy(wait=bug, cancel=cancel)
    _, result = attempt(tmp_path, backend)
    assert (result.status, result.reason) == ("failed", "kubebench could not run it: KeyError: 'phase'")
    assert backend.cancelled == [HANDLE]
    assert debug_traceback(caplog) is bug
    expected = [] if cancel is None else ["could not cancel a job after an error: the API server went away"]
    assert warnings(caplog) == expected


def test_a_bug_after_the_job_fails_the_run_with_the_error_as_its_reason(home: Path, tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="kubebench")
    bug = RuntimeError("release: unexpected answer")
    run, result = attempt(tmp_path, Buggy(release=bug))
    reason = "kubebench could not run it: RuntimeError: release: unexpected answer"
    assert (result.status, result.reason, result.metrics) == ("failed", reason, {})
    assert warnings(caplog) == [f"run {run.id} failed: {reason}"]
    assert debug_traceback(caplog) is bug
