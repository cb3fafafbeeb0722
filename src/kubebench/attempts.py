"""One run, attempt by attempt: fresh folders, render, submit, wait, collect, copy, record.

An attempt that failed for its infrastructure (see ``BenchmarkSpec.retries``) is tried again; every
attempt ends in one store transaction (the run's row, its metrics and its ``run_attempts`` row), and
that commit is the last step: a runner killed before it leaves the run ``running``, and the next
runner redoes it (files written before the commit are never counted on their own).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from .accounting import account
from .backends.base import Backend, Outcome
from .backends.reasons import with_oom
from .collect.context import RunContext
from .collect.marks import workload_marks
from .collect.metrics import collect, replica_logs
from .errors import BackendError, InfrastructureError, PostprocessError, StorageError, StoreError
from .monitor.recorder import RunTelemetry
from .monitor.reporters import report_run
from .output_files import open_output
from .paths import RunPaths
from .provenance import workload
from .render.kinds import processes_per_replica
from .storage.runs import run_location, shared_storage, upload_run, write_run_record
from .store.records import RunResult
from .timeline import Boundary, phases, workload_window

if TYPE_CHECKING:  # the store (SQLAlchemy) is handed in: a dry run never loads it
    from .experiment import Experiment
    from .plan.plan import Run
    from .render.job import RenderedJob
    from .store.store import Store

log = logging.getLogger("kubebench")
#: The handle of a job, as the backend that started it types it (``LocalJob``, ``KubeJob``).
H = TypeVar("H")
LOG_TAIL_LINES = 20
#: Characters kept of each line of that tail (its end): a log of one huge line stays a short tail.
LOG_TAIL_LINE_CHARS = 2_000
CANCELLED = "cancelled by the user"
#: The reason of a run found ``running`` by a runner resuming its experiment (and of that attempt).
INTERRUPTED = "interrupted: its runner stopped during the run (killed?); redone on resume"
#: The run's info key of what the backend found still running once the job had ended.
LEFTOVER_WARNING = "leftover_warning"
#: Seconds a run's job waited to be admitted (Kueue), a metric of the run apart from its own time.
QUEUE_KEY = "queue_seconds"
#: Info key of what the backend could not collect (a log it could not read): the run's outcome stands.
LOG_WARNING_KEY = "log_warning"
#: The run's timeline in its folder (see :mod:`kubebench.timeline`).
TIMELINE_FILE = "timeline.json"
#: Seconds before the second attempt of a run; doubled for each further one, up to the cap.
RETRY_DELAY_S, RETRY_DELAY_MAX_S = 1.0, 30.0


def execute_run(experiment: Experiment, backend: Backend[H, Any], store: Store, run: Run,
                leftover: bool = False) -> RunResult:
    """Run ``run`` until an attempt succeeds, fails for itself, or the spec's ``retries`` are spent.

    ``leftover``: the run was interrupted (its runner was killed): what it left running is stopped
    before its folder is made afresh. A failure is a result; StorageError means the runner cannot
    write the run's folder (a full disk, a read-only folder) and stops the experiment.
    """
    retries = experiment.loaded.spec.retries
    attempt = 1
    while True:
        try:
            result, infrastructure = _attempt(experiment, backend, store, run, leftover)
        except (StorageError, StoreError):
            raise  # the next runs would fail the same way: the experiment stops (a resume redoes this one)
        except Exception as e:  # a bug, or an input no check foresaw: this run fails, the next ones go on
            result, infrastructure = _broken(run, e), False
        store.finish_run(result)
        if result.status == "succeeded" or not infrastructure or attempt > retries:
            return result
        backend.sleep(min(RETRY_DELAY_S * 2 ** (attempt - 1), RETRY_DELAY_MAX_S))
        attempt, leftover = attempt + 1, False


def _attempt(experiment: Experiment, backend: Backend[H, Any], store: Store, run: Run,
             leftover: bool) -> tuple[RunResult, bool]:
    """One attempt, recorded as started; returns its result and whether its infrastructure failed."""
    spec = experiment.loaded.spec
    paths = experiment.local_paths(run)
    job = experiment.render(run, backend)
    if leftover:
        try:
            backend.reclaim([(job, backend.job_paths(paths))])
        except BackendError as e:  # submitting replaces a leftover job anyway; the attempt goes on
            log.warning("could not stop what an interrupted attempt of run %s left running: %s", run.id, e)
    _prepare(paths, job, run)
    storage = shared_storage(experiment.settings, spec.storage, experiment.loaded.base_dir)
    store.start_run(run.id, run_location(storage, paths))
    handle: H | None = None
    telemetry = RunTelemetry(spec.telemetry, experiment.plan.experiment_id, run.id)
    warnings: list[str] = []
    collected: float | None = None
    try:
        handle = backend.submit(job, paths)
        telemetry.start(backend.telemetry(handle))  # sampled from submit to the end of wait
        outcome = backend.wait(handle, spec.timeout)
        telemetry.stop()
        warnings = backend.collect(handle, paths)  # logs are copied before anything is released
        collected = time.time()
    except BackendError as e:
        outcome = Outcome("failed", None, str(e), isinstance(e, InfrastructureError))
    except Exception as e:  # not the backend's own error: the job, if it started, must not outlive the run
        _cancel_quietly(backend, handle)
        outcome = Outcome("failed", None, _unexpected(e))
    except KeyboardInterrupt:  # Ctrl-C, or Cancelled (a cancel asked for)
        store.finish_run(RunResult(run_id=run.id, status="cancelled", reason=CANCELLED, finished_at=time.time()))
        raise
    finally:
        telemetry.stop()
        if handle is not None:
            _release(backend, handle)
    timeline = run_timeline(backend, handle, paths, collected)
    warnings_noted = backend.notes(handle) if handle is not None else {}
    result = _result(experiment, run, paths, outcome, job, _provenance(experiment, backend, job, handle))
    result = _with_phases(result, timeline)
    result = _with_backend_notes(result, outcome, warnings)
    if warnings_noted:
        result = result.model_copy(update={"info": {**result.info, **warnings_noted}})
    window = workload_window(timeline)  # cost and energy cover the workload's time, not its wait
    result = telemetry.record(store, result, window)  # series stored; summaries added to the metrics
    result = account(spec, experiment.loaded.base_dir, job.manifest, result,  # energy per item, cost
                     _ran_seconds(window, telemetry, outcome), telemetry.machine_local, telemetry.energy_seconds)
    store.add_timeline(run.id, timeline)
    _write_timeline(paths, timeline)
    _write_record(store, paths, result)
    infrastructure = outcome.infrastructure and result.status != "succeeded"
    if storage is not None:
        uploaded = upload_run(storage, paths, result)
        # storage refusing the copy of a good run is the infrastructure's failure, too
        infrastructure = infrastructure or (result.status == "succeeded" and uploaded.status != "succeeded")
        result = uploaded
    if spec.report:
        result = report_run(spec.report, _context(experiment, run, paths, job), result)
    return result, infrastructure


def run_timeline(backend: Backend[H, Any], handle: H | None, paths: RunPaths, collected: float | None) -> list[Boundary]:
    """The run's moments: what the backend saw of its job, the workload's marks in its logs, and when
    its logs were collected; what cannot be read is left out (the run's outcome stands)."""
    found: list[Boundary] = []
    if handle is not None:
        try:
            found += backend.timeline(handle)
        except BackendError as e:
            log.warning("could not read the timeline of run %s: %s", paths.run_id, e)
    found += workload_marks(Path(paths.output))
    if collected is not None:
        found.append(Boundary("collected", collected, "observed", 1e-6, "", "logs collected"))
    return found


def _ran_seconds(window: tuple[float, float] | None, telemetry: RunTelemetry, outcome: Outcome) -> float:
    """Seconds the workload ran: its window on the timeline, else the telemetry's window less the queue."""
    if window is not None:
        return window[1] - window[0]
    return telemetry.ended - telemetry.started - (outcome.queued_seconds or 0.0)


def _with_phases(result: RunResult, timeline: list[Boundary]) -> RunResult:
    """A succeeded run with its phases among its metrics (the workload's own figures win)."""
    if result.status != "succeeded":
        return result
    found = phases(timeline)
    return result.model_copy(update={"metrics": {**found, **result.metrics}}) if found else result


def _write_timeline(paths: RunPaths, timeline: list[Boundary]) -> None:
    """``timeline.json`` in the run's folder (it travels with the folder to shared storage)."""
    try:
        (Path(paths.run) / TIMELINE_FILE).write_text(json.dumps([b.as_dict() for b in timeline], indent=1) + "\n",
                                                     encoding="utf-8")
    except OSError as e:
        log.warning("could not write the timeline of run %s: %s", paths.run_id, e)


def _unexpected(error: Exception) -> str:
    log.debug("unexpected error during a run", exc_info=error)
    return f"kubebench could not run it: {type(error).__name__}: {error}"


def _broken(run: Run, error: Exception) -> RunResult:
    """The result of a run that an unexpected error stopped: failed, with the error as its reason."""
    reason = _unexpected(error)
    log.warning("run %s failed: %s", run.id, reason)
    return RunResult(run_id=run.id, status="failed", reason=reason, finished_at=time.time())


def _cancel_quietly(backend: Backend[H, Any], handle: H | None) -> None:
    if handle is None:
        return
    try:
        backend.cancel(handle)
    except Exception as e:  # noqa: BLE001 (already failing: the first error is the one reported)
        log.warning("could not cancel a job after an error: %s", e)


def _prepare(paths: RunPaths, job: RenderedJob, run: Run) -> None:
    try:
        _prepare_folders(paths)
        _write_config(paths, job, run)
    except OSError as e:
        raise StorageError(f"cannot write the run's folder {paths.run}: {e.strerror or e}") from e


def _write_record(store: Store, paths: RunPaths, result: RunResult) -> None:
    """``run.json``; when it cannot be written, the run is recorded failed (if the store still can)
    and the experiment stops: the next runs would fail the same way."""
    try:
        write_run_record(paths, result)
    except OSError as e:
        reason = f"cannot write the run's folder {paths.run}: {e.strerror or e}"
        try:
            store.finish_run(result.model_copy(update={"status": "failed", "reason": reason, "metrics": {}}))
        except StoreError:
            pass  # the same full disk: the run stays `running`, and a resume redoes it
        raise StorageError(reason) from e


def _context(experiment: Experiment, run: Run, paths: RunPaths, job: RenderedJob) -> RunContext:
    return RunContext(experiment.plan.experiment_id, run.trial.id, run.id, run.repeat, run.trial.params, paths,
                      job.workdir)


def _prepare_folders(paths: RunPaths) -> None:
    run_dir = Path(paths.run)
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a redone run starts clean: no stale outputs or result.json
    for folder in (paths.config, paths.output, paths.result):
        Path(folder).mkdir(parents=True)
    Path(paths.data_root).mkdir(parents=True, exist_ok=True)


def _write_config(paths: RunPaths, job: RenderedJob, run: Run) -> None:
    config = Path(paths.config)
    (config / "manifest.yaml").write_text(dump_yaml(job.manifest), encoding="utf-8")
    (config / "params.yaml").write_text(dump_yaml(run.trial.params), encoding="utf-8")


def dump_yaml(data: object) -> str:
    """YAML in the order given, with libyaml's emitter when present (ten times faster)."""
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def _release(backend: Backend[H, Any], handle: H) -> None:
    try:
        backend.release(handle)
    except BackendError as e:  # the run's outcome stands; what is left is the backend's to report
        log.warning("could not release the job of an attempt: %s", e)


def _provenance(experiment: Experiment, backend: Backend[H, Any], job: RenderedJob, handle: H | None) -> dict:
    """Where the backend ran the job (machine, node, image …), the workload's commit, the backend,
    and the ranks each replica started when more than one (``processes_per_replica``)."""
    data = {**workload(job.workdir), "backend": experiment.loaded.spec.backend.kind}
    per_replica = processes_per_replica(job.manifest)
    if per_replica > 1:
        data["processes_per_replica"] = per_replica
    if handle is not None:
        try:
            data.update(backend.provenance(handle))
        except BackendError:
            pass  # provenance is best effort: the run's numbers still count
    return data


def _with_backend_notes(result: RunResult, outcome: Outcome, warnings: list[str]) -> RunResult:
    """The run with what the backend measured apart (queue time) and what it could not do (warnings)."""
    info, metrics = dict(result.info), dict(result.metrics)
    if outcome.queued_seconds is not None:
        info[QUEUE_KEY] = f"{outcome.queued_seconds:.3f}"
        if result.status == "succeeded":
            metrics.setdefault(QUEUE_KEY, round(outcome.queued_seconds, 3))
    if warnings:
        info[LOG_WARNING_KEY] = "; ".join(warnings)
    return result.model_copy(update={"info": info, "metrics": metrics})


def _result(experiment: Experiment, run: Run, paths: RunPaths, outcome: Outcome, job: RenderedJob,
            provenance: dict | None = None) -> RunResult:
    finished = time.time()
    spec = experiment.loaded.spec
    status, reason, metrics, info = outcome.state, outcome.reason, {}, {}
    if status == "failed":
        reason = with_oom(reason, log_tail(Path(paths.output), reason))
    if status == "succeeded":
        collected = collect(_context(experiment, run, paths, job), spec.postprocess, spec.metrics)
        metrics, info = collected.metrics, collected.info
        if collected.error:
            status, reason = "failed", collected.error
    if outcome.warning:
        info = {**info, LEFTOVER_WARNING: outcome.warning}
    return RunResult(run_id=run.id, status=status, metrics=metrics, info=info, exit_code=outcome.exit_code,
                     reason=reason, log_tail=log_tail(Path(paths.output), reason), finished_at=finished,
                     provenance=provenance or {})


def log_tail(output: Path, reason: str) -> str:
    """The end of the log of the replica named in ``reason`` (else of rank 0); empty if unreadable.

    Only the last 64 kB are read, and each line keeps its last ``LOG_TAIL_LINE_CHARS`` characters."""
    try:
        logs = replica_logs(output)
        if not logs:
            return ""
        named = [p for p in logs if reason.startswith(p.stem + " ")]
        with open_output((named or logs)[0]) as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 64_000))
            lines = f.read().decode("utf-8", errors="replace").splitlines()
    except (OSError, PostprocessError):  # gone, unreadable, or no regular file (a FIFO left in its place)
        return ""
    return "\n".join(line if len(line) <= LOG_TAIL_LINE_CHARS else "…" + line[-LOG_TAIL_LINE_CHARS:]
                     for line in lines[-LOG_TAIL_LINES:])
