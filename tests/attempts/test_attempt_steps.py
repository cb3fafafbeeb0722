"""One attempt of a run, step by step (issue #20: mutants of ``kubebench.attempts._attempt`` no test
killed): what a backend's error, a Ctrl-C, a leftover that cannot be stopped, a failed copy to storage
or a reporter make of the run; that the ended job is released and its provenance kept; and, on the
local backend for real, the run's live telemetry and its cost.

Most tests use a scripted backend (fault injection at the backend boundary: nothing is started, each
``wait`` answers what the test says); the telemetry and cost tests run a real local job.
"""

from __future__ import annotations

import dataclasses
import logging
import textwrap
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.backends import ScriptedBackend

from kubebench.attempts import CANCELLED, LOG_WARNING_KEY, _attempt, execute_run
from kubebench.backends.base import Outcome
from kubebench.backends.local import LocalBackend, LocalConfig
from kubebench.errors import BackendError, InfrastructureError, StorageError
from kubebench.monitor.live import LIVE
from kubebench.provenance import machine
from kubebench.runner import plan_experiment, record_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

SPEC = """
name: scripted
job:
  command: [python, -c, "pass"]
"""
HANDLE = "job-of-scripted"
EXPERIMENT = "exp-1"


def Scripted(*waits: Outcome | BaseException, **script) -> ScriptedBackend:
    """Starts nothing (its handle is a name). Each ``wait`` answers the next of ``waits`` (an Outcome, or
    an error it raises), then success; the job ran on ``node-7`` (see :class:`ScriptedBackend`)."""
    return ScriptedBackend(*waits, handle=HANDLE, provenance={"node": "node-7"}, **script)


@dataclass
class Ran:
    run_id: str
    trial_id: str
    result: object
    stored: object
    attempts: list[tuple[int, str, str]]


def begin(tmp_path: Path, text: str):
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text))
    config = settings()
    experiment = plan_experiment(load_spec(path), config, EXPERIMENT)
    store = open_store(config.store_url)
    record_experiment(experiment, store)
    return experiment, store


def run_once(tmp_path: Path, backend, text: str = SPEC, leftover: bool = False) -> Ran:
    """Execute the spec's one run on ``backend``; the result, the run as stored, and its attempts."""
    experiment, store = begin(tmp_path, text)
    (run,) = experiment.plan.runs
    try:
        result = execute_run(experiment, backend, store, run, leftover)
        (stored,) = store.runs(EXPERIMENT)
        attempts = [(a.attempt, a.status, a.reason) for a in store.attempts(EXPERIMENT)[run.id]]
    finally:
        store.engine.dispose()
    return Ran(run.id, run.trial.id, result, stored, attempts)


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "kubebench"]


# --- the job's handle: released once ended, asked where it ran; none when submit failed ---------------

def test_the_ended_job_is_released_and_where_it_ran_is_the_run_s_provenance(home: Path, tmp_path: Path) -> None:
    backend = Scripted()
    ran = run_once(tmp_path, backend)
    assert ran.result.status == "succeeded"
    assert backend.released == [HANDLE] and backend.cancelled == []
    assert backend.asked == [HANDLE]
    assert ran.result.provenance["node"] == "node-7" and ran.result.provenance["backend"] == "local"


def test_a_refused_submit_fails_the_run_and_leaves_no_job_to_release_cancel_or_ask(home: Path,
                                                                                    tmp_path: Path) -> None:
    backend = Scripted(submit=BackendError("the job's manifest was refused: spec.replicas: Invalid value"))
    ran = run_once(tmp_path, backend)
    assert (ran.result.status, ran.result.reason) == ("failed", "the job's manifest was refused: spec.replicas: "
                                                                "Invalid value")
    assert (backend.released, backend.cancelled, backend.asked) == ([], [], [])
    assert "node" not in ran.result.provenance


# --- a backend's error while waiting: the run fails with its message; retried if the infrastructure's ----

def test_a_backend_error_while_waiting_fails_the_run_with_its_message_and_is_not_retried(home: Path,
                                                                                        tmp_path: Path) -> None:
    reason = "watch of job scripted-0 closed: HTTP 403 forbidden"
    backend = Scripted(BackendError(reason))
    ran = run_once(tmp_path, backend, SPEC + "retries: 2\n")
    assert (ran.result.status, ran.result.reason, ran.result.exit_code) == ("failed", reason, None)
    assert (ran.stored.status, ran.stored.reason) == ("failed", reason)
    assert ran.attempts == [(1, "failed", reason)]
    assert backend.slept == [] and backend.released == [HANDLE]


def test_an_infrastructure_error_while_waiting_is_retried(home: Path, tmp_path: Path) -> None:
    reason = "cannot reach the API server: HTTP 503"
    backend = Scripted(InfrastructureError(reason))
    ran = run_once(tmp_path, backend, SPEC + "retries: 1\n")
    assert ran.result.status == "succeeded"
    assert ran.attempts == [(1, "failed", reason), (2, "succeeded", "")]
    assert backend.slept == [1.0]


@pytest.mark.parametrize(("outcome", "attempts"), [
    (Outcome("failed", None, "node lost", infrastructure=True), [(1, "failed", "node lost"), (2, "succeeded", "")]),
    (Outcome("failed", 3, "worker-0 exited with code 3"), [(1, "failed", "worker-0 exited with code 3")]),
], ids=["infrastructure", "workload"])
def test_a_failure_of_the_infrastructure_is_retried_and_one_of_the_workload_is_not(home: Path, tmp_path: Path,
                                                                                  outcome: Outcome,
                                                                                  attempts: list) -> None:
    ran = run_once(tmp_path, Scripted(outcome), SPEC + "retries: 1\n")
    assert ran.attempts == attempts
    assert ran.result.status == attempts[-1][1]


# --- Ctrl-C -----------------------------------------------------------------------------------------------

def test_ctrl_c_while_waiting_records_the_run_cancelled_and_goes_on(home: Path, tmp_path: Path) -> None:
    backend = Scripted(KeyboardInterrupt())
    experiment, store = begin(tmp_path, SPEC)
    (run,) = experiment.plan.runs
    started = time.time()
    try:
        with pytest.raises(KeyboardInterrupt):
            execute_run(experiment, backend, store, run)
        (stored,) = store.runs(EXPERIMENT)
        attempts = [(a.attempt, a.status, a.reason) for a in store.attempts(EXPERIMENT)[run.id]]
    finally:
        store.engine.dispose()
    assert (stored.run_id, stored.status, stored.reason) == (run.id, "cancelled", CANCELLED)
    assert started <= stored.finished_at <= time.time()
    assert attempts == [(1, "cancelled", CANCELLED)]
    assert backend.released == [HANDLE]


# --- what the backend collected -----------------------------------------------------------------------------

def test_what_the_backend_could_not_collect_is_noted_and_the_log_it_copied_is_the_tail(home: Path,
                                                                                      tmp_path: Path) -> None:
    warning = "could not read the log of worker-1: pod gone"
    backend = Scripted(Outcome("failed", 3, "worker-0 exited with code 3"), warnings=(warning,),
                       log="step 1\nValueError: bad batch\n")
    ran = run_once(tmp_path, backend)
    assert (ran.result.status, ran.result.reason) == ("failed", "worker-0 exited with code 3")
    assert ran.result.info[LOG_WARNING_KEY] == warning
    assert ran.result.log_tail == "step 1\nValueError: bad batch"


def test_a_run_record_that_cannot_be_written_stops_the_experiment(home: Path, tmp_path: Path) -> None:
    experiment, store = begin(tmp_path, SPEC)
    (run,) = experiment.plan.runs
    try:
        with pytest.raises(StorageError, match="cannot write the run's folder"):
            execute_run(experiment, Scripted(block_record=True), store, run)
        (stored,) = store.runs(EXPERIMENT)
    finally:
        store.engine.dispose()
    assert stored.status == "failed" and stored.reason.startswith("cannot write the run's folder ")


# --- a leftover of an interrupted attempt -------------------------------------------------------------------

def test_a_leftover_that_cannot_be_stopped_is_logged_and_the_attempt_goes_on(home: Path, tmp_path: Path,
                                                                            caplog) -> None:
    caplog.set_level(logging.WARNING, logger="kubebench")
    backend = Scripted(reclaim=BackendError("cannot list pods: HTTP 500"))
    ran = run_once(tmp_path, backend, leftover=True)
    assert ran.result.status == "succeeded"
    assert warnings(caplog) == [f"could not stop what an interrupted attempt of run {ran.run_id} left running: "
                                "cannot list pods: HTTP 500"]


# --- shared storage -------------------------------------------------------------------------------------------

STORED = SPEC + "storage: results\nretries: 1\n"


def test_a_run_is_copied_to_the_spec_s_storage_folder_relative_to_the_spec(home: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # "results" is the spec's folder's, not the working directory's
    ran = run_once(tmp_path, Scripted(), STORED)
    copy = tmp_path / "results" / EXPERIMENT / ran.run_id
    assert ran.result.status == "succeeded"
    assert (copy / "run.json").is_file() and (copy / "config" / "params.yaml").is_file()
    assert ran.stored.path == str(copy)
    assert list(elsewhere.iterdir()) == []


def test_a_good_run_storage_refuses_is_the_infrastructure_s_failure_and_retried(home: Path, tmp_path: Path) -> None:
    (tmp_path / "results").write_text("a file where the storage folder should be")
    backend = Scripted()
    ran = run_once(tmp_path, backend, STORED)
    assert [(n, status) for n, status, _ in ran.attempts] == [(1, "failed"), (2, "failed")]
    assert all(reason.startswith("copying the run's folder to storage failed: ") for _, _, reason in ran.attempts)
    assert backend.slept == [1.0]
    assert ran.result.status == "failed"


def test_a_failed_run_copied_to_storage_is_not_retried(home: Path, tmp_path: Path) -> None:
    backend = Scripted(Outcome("failed", 3, "worker-0 exited with code 3"))
    ran = run_once(tmp_path, backend, STORED)
    assert ran.attempts == [(1, "failed", "worker-0 exited with code 3")]
    assert backend.slept == []
    assert (tmp_path / "results" / EXPERIMENT / ran.run_id / "run.json").is_file()


@pytest.mark.parametrize(("outcome", "text"), [
    (Outcome("succeeded", 0, ""), STORED),  # copied to storage
    (Outcome("succeeded", 0, "", infrastructure=True), SPEC),  # a backend that flags a job that succeeded
], ids=["copied", "flagged"])
def test_an_attempt_that_succeeded_is_no_infrastructure_failure(home: Path, tmp_path: Path, outcome: Outcome,
                                                                text: str) -> None:
    experiment, store = begin(tmp_path, text)
    (run,) = experiment.plan.runs
    try:
        result, infrastructure = _attempt(experiment, Scripted(outcome), store, run, False)
    finally:
        store.engine.dispose()
    assert (result.status, infrastructure) == ("succeeded", False)


# --- reporters -----------------------------------------------------------------------------------------------

class Pushgateway(BaseHTTPRequestHandler):
    """A stand-in Pushgateway: keeps each push (path and body) on its server."""

    def do_PUT(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        self.server.pushes.append((self.path, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def pushgateway():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pushgateway)
    server.pushes = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_finished_run_is_reported_with_its_context(home: Path, tmp_path: Path, pushgateway) -> None:
    url = f"http://127.0.0.1:{pushgateway.server_address[1]}"
    ran = run_once(tmp_path, Scripted(), SPEC + f"report: [{{kind: pushgateway, url: '{url}', timeout: 5}}]\n")
    assert ran.result.status == "succeeded"
    assert not [key for key in ran.result.info if key.startswith("report_warning")]
    ((path, body),) = pushgateway.pushes
    assert path == f"/metrics/job/kubebench/experiment/{EXPERIMENT}/trial/{ran.trial_id}"
    assert f'kubebench_run_succeeded{{repeat="0",run="{ran.run_id}"}} 1.0' in body


class FoldersReporter:
    """A third-party reporter (registered under ``folders``): reads the run's files through its context."""

    seen: list[tuple[str, str, str]] = []

    def __init__(self, config: object) -> None:
        pass

    def report(self, ctx, result) -> None:
        FoldersReporter.seen.append((ctx.run_id, (ctx.output / "worker-0.log").read_text(encoding="utf-8"),
                                     result.status))


def test_a_reporter_plugin_reads_the_run_s_folders_through_its_context(home: Path, tmp_path: Path,
                                                                      monkeypatch) -> None:
    from kubebench import registry
    from kubebench.spec.base import PluginConfig

    monkeypatch.setitem(registry._BUILTINS["reporters"], "folders", f"{__name__}:FoldersReporter")
    monkeypatch.setattr(FoldersReporter, "seen", [])
    registry.names.cache_clear()
    try:
        experiment, store = begin(tmp_path, SPEC)
        # as an installed plugin's entry in the spec would be (the spec's reporters are the installed ones)
        spec = experiment.loaded.spec.model_copy(update={"report": [PluginConfig(kind="folders")]})
        experiment = dataclasses.replace(experiment, loaded=experiment.loaded.model_copy(update={"spec": spec}))
        (run,) = experiment.plan.runs
        try:
            result = execute_run(experiment, Scripted(log="loss 0.25\n"), store, run)
        finally:
            store.engine.dispose()
    finally:
        registry.names.cache_clear()
    assert result.status == "succeeded" and "report_warning_folders" not in result.info
    assert FoldersReporter.seen == [(run.id, "loss 0.25\n", "succeeded")]


# --- a real local job: live telemetry, stored series, cost -----------------------------------------------------

class Watching(LocalBackend):
    """The local backend, holding the job until the run's live telemetry is seen (its job waits for ``go``)."""

    def __init__(self, go: Path) -> None:
        super().__init__(LocalConfig())
        self.go, self.live = go, []

    def wait(self, handle, timeout: float) -> Outcome:
        deadline = time.monotonic() + 60
        while not self.live and time.monotonic() < deadline:
            self.live = [(exp, series) for exp, run, series, _ in LIVE.snapshot() if run == handle.run_id]
            time.sleep(0.01)
        self.go.touch()
        return super().wait(handle, timeout)


def test_a_local_run_is_sampled_live_under_its_experiment_and_its_series_stored(home: Path, tmp_path: Path) -> None:
    go = tmp_path / "go"
    text = f"""
    name: sampled
    job:
      command: [python, -c, "import os, time\\nwhile not os.path.exists({str(go)!r}): time.sleep(0.01)"]
    telemetry: {{interval: 0.02s, gpu: false}}
    """
    backend = Watching(go)
    experiment, store = begin(tmp_path, text)
    (run,) = experiment.plan.runs
    try:
        result = execute_run(experiment, backend, store, run)
        series = store.telemetry(run.id)
    finally:
        store.engine.dispose()
    assert result.status == "succeeded"
    assert backend.live and {exp for exp, _ in backend.live} == {EXPERIMENT}
    assert "cpu_percent" in series and "cpu_percent_max" in result.metrics
    assert not [entry for entry in LIVE.snapshot() if entry[1] == run.id]  # forgotten once the run ended


def test_a_priced_local_run_costs_the_machine_s_cores_for_its_wall_time(home: Path, tmp_path: Path) -> None:
    here = machine()
    gpus = [g.get("model", "") for g in here.get("gpus") or [] if isinstance(g, dict)]
    devices = f"device_hour: {{{gpus[0]!r}: 7200}}\n" if gpus else ""
    (tmp_path / "prices.yaml").write_text(f"cpu_core_hour: 3600\n{devices}")  # relative to the spec's folder
    text = """
    name: priced
    job:
      command: [python, -c, "pass"]
    telemetry: {gpu: false}
    prices: {file: prices.yaml}
    """
    started = time.time()
    ran = run_once(tmp_path, LocalBackend(LocalConfig()), text)
    elapsed = time.time() - started
    assert ran.result.status == "succeeded", ran.result.reason
    cores = float(ran.result.provenance.get("cpus_usable") or ran.result.provenance.get("cpu_threads"))
    per_hour = cores * 3600 + len(gpus) * 7200
    assert ran.result.info["cost_basis"].endswith("(the machine's GPUs and usable CPUs: the job requests none)")
    assert ran.result.metrics["usd_per_hour"] == pytest.approx(per_hour)
    assert 0 < ran.result.metrics["cost_usd"] <= per_hour * elapsed / 3600
