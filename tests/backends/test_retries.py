"""Retries of a run whose infrastructure failed: how many attempts, the delays between them (1 s,
doubling, at most 30 s), what each attempt records, and that the workload's own failures are never
tried again. The local backend runs the job for real; only its first submits are made to fail
(fault injection at the backend boundary), and its sleep between attempts is recorded, not slept.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.runs import workload_metrics

from kubebench.attempts import RETRY_DELAY_MAX_S, RETRY_DELAY_S, execute_run
from kubebench.backends.local import LocalBackend, LocalConfig
from kubebench.errors import BackendError, InfrastructureError
from kubebench.runner import plan_experiment, record_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

SPEC = """
name: retried
job:
  command: [python, -c, "import kubebench; kubebench.report(v=1)"]
retries: RETRIES
metrics: [{name: v}]
"""


class FailingSubmits(LocalBackend):
    """The local backend whose first ``failures`` submits raise ``error``."""

    def __init__(self, failures: int, error: BackendError) -> None:
        super().__init__(LocalConfig())
        self.failures, self.error, self.slept = failures, error, []

    def submit(self, job, paths):
        if self.failures:
            self.failures -= 1
            raise self.error
        return super().submit(job, paths)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def attempt_runs(tmp_path: Path, retries: int, backend: FailingSubmits):
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(SPEC).replace("RETRIES", str(retries)))
    config = settings()
    experiment = plan_experiment(load_spec(path), config, "retry-1")
    store = open_store(config.store_url)
    record_experiment(experiment, store)
    (run,) = experiment.plan.runs
    result = execute_run(experiment, backend, store, run)
    attempts = [(a.attempt, a.status, a.reason) for a in store.attempts("retry-1")[run.id]]
    store.engine.dispose()
    return result, attempts


EAGAIN = InfrastructureError("cannot start worker-0 (python): Resource temporarily unavailable")


def test_delays_double_from_one_second_up_to_the_cap_and_the_last_attempt_succeeds(home: Path, tmp_path: Path) -> None:
    backend = FailingSubmits(7, EAGAIN)
    result, attempts = attempt_runs(tmp_path, 7, backend)
    assert (RETRY_DELAY_S, RETRY_DELAY_MAX_S) == (1.0, 30.0)
    assert backend.slept == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert (result.status, workload_metrics(result.metrics)) == ("succeeded", {"v": 1.0})
    assert attempts == [(i, "failed", str(EAGAIN)) for i in range(1, 8)] + [(8, "succeeded", "")]


def test_retries_stop_when_spent_and_the_run_keeps_the_last_reason(home: Path, tmp_path: Path) -> None:
    backend = FailingSubmits(5, EAGAIN)
    result, attempts = attempt_runs(tmp_path, 2, backend)
    assert backend.slept == [1.0, 2.0]
    assert (result.status, result.reason) == ("failed", str(EAGAIN))
    assert [a[:2] for a in attempts] == [(1, "failed"), (2, "failed"), (3, "failed")]


@pytest.mark.parametrize("retries", [0, 3])
def test_a_failure_that_is_not_the_infrastructures_is_never_retried(home: Path, tmp_path: Path, retries: int) -> None:
    backend = FailingSubmits(1, BackendError("the job's manifest was refused: spec.replicas: Invalid value"))
    result, attempts = attempt_runs(tmp_path, retries, backend)
    assert backend.slept == []
    assert attempts == [(1, "failed", "the job's manifest was refused: spec.replicas: Invalid value")]
