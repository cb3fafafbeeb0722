"""Wire the steps of one experiment: plan → render → backend → collect → store.

The runner holds no results itself: each run's state goes to the store as it changes, so a killed
runner resumes where it stopped (``kubebench run --id``).
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Protocol

import yaml

from . import registry
from .backends.base import Backend, Outcome
from .errors import BackendError
from .collect.context import RunContext
from .collect.metrics import collect, replica_logs
from .monitor.recorder import RunTelemetry
from .monitor.reporters import report_run
from .paths import RunPaths
from .plan.adaptive import next_round
from .plan.plan import Plan, Run, make_plan, new_experiment_id
from .provenance import job_images, machine, workload
from .render.job import RenderedJob, job_fingerprint, render_run
from .settings import Settings
from .storage.runs import run_location, shared_storage, upload_run, write_run_record
from .spec.model import AdaptiveRepeats, LoadedSpec
from .store.records import ExperimentRecord, RunResult
from .store.store import Store

LOG_TAIL_LINES = 20


class Progress(Protocol):
    """Callbacks the CLI uses to draw progress; all optional to act on."""

    def started(self, plan: Plan, skipped: int) -> None: ...
    def run_started(self, run: Run) -> None: ...
    def run_finished(self, run: Run, result: RunResult) -> None: ...
    def added(self, runs: int) -> None: ...


class _Silent:
    def started(self, plan: Plan, skipped: int) -> None: ...
    def run_started(self, run: Run) -> None: ...
    def run_finished(self, run: Run, result: RunResult) -> None: ...
    def added(self, runs: int) -> None: ...


@dataclass(frozen=True)
class Experiment:
    """A planned experiment: its spec, plan, backend and where its runs live."""

    loaded: LoadedSpec
    plan: Plan
    settings: Settings
    #: Adaptive repeats in force (``None`` for a fixed number, or when ``--repeats`` overrides).
    adaptive: AdaptiveRepeats | None = None

    def local_paths(self, run: Run) -> RunPaths:
        """The run's folders as kubebench sees them."""
        data_root = self.loaded.spec.data_root
        data = self.loaded.base_dir / data_root if data_root else self.settings.data_root
        return RunPaths(self.settings.experiments_root, data, self.plan.experiment_id, run.id)

    def render(self, run: Run, backend: Backend) -> RenderedJob:
        """The run's job, with the environment pointing at its folders as the job sees them."""
        paths = backend.job_paths(self.local_paths(run))
        job = render_run(self.loaded, run, self.plan.experiment_id, paths.env(run.trial.id, run.repeat))
        backend.prepare(job.manifest, paths)  # in place: what the backend adds (volumes, service account…)
        return job


def plan_experiment(loaded: LoadedSpec, settings: Settings, experiment_id: str | None = None,
                    repeats: int | None = None) -> Experiment:
    """Plan (pure): trials and runs with their stable ids."""
    exp_id = experiment_id or new_experiment_id(loaded.spec.name)
    plan = make_plan(loaded.spec, exp_id, job_fingerprint(loaded), repeats)
    adaptive = loaded.spec.repeats if isinstance(loaded.spec.repeats, AdaptiveRepeats) and repeats is None else None
    return Experiment(loaded, plan, settings, adaptive)


def make_backend(loaded: LoadedSpec) -> Backend:
    """The backend plugin named by the spec, configured."""
    config = loaded.spec.backend
    return registry.load("backends", config.kind)(config)


def execute(experiment: Experiment, store: Store, progress: Progress | None = None,
            parallelism: int | None = None) -> None:
    """Run every run of the plan that has not yet succeeded, recording each in the store.

    Up to ``parallelism`` runs (default: the spec's) are in flight at once; warm-up runs all end
    before counted ones start. On Ctrl-C every job in flight is cancelled before the error goes on.
    """
    progress = progress or _Silent()
    plan, spec = experiment.plan, experiment.loaded.spec
    backend = make_backend(experiment.loaded)
    validate(experiment, backend)
    now = time.time()
    record = ExperimentRecord(
        id=plan.experiment_id, name=spec.name, backend=spec.backend.kind, source=experiment.loaded.source,
        spec_text=experiment.loaded.text, job_fingerprint=plan.job_fingerprint, created_at=now, updated_at=now,
    )
    store.begin_experiment(record, plan)
    done = store.succeeded_run_ids(plan.experiment_id)
    progress.started(plan, len([r for r in plan.runs if r.id in done]))
    todo = [run for run in plan.runs if run.id not in done]
    width = parallelism or spec.parallelism

    def one(run: Run) -> None:
        progress.run_started(run)
        progress.run_finished(run, execute_run(experiment, backend, store, run))

    def run_all(runs: list[Run]) -> None:
        if width <= 1:
            for run in runs:
                one(run)
        else:
            for stage in ([r for r in runs if r.warmup], [r for r in runs if not r.warmup]):
                _in_parallel(stage, width, one, backend)

    try:
        run_all(todo)
        if experiment.adaptive is not None:
            _adaptive_rounds(experiment, store, record, progress, run_all)
    finally:
        backend.close()


def _adaptive_rounds(experiment: Experiment, store: Store, record: ExperimentRecord, progress: Progress,
                     run_all: Callable[[list[Run]], None]) -> None:
    """Add rounds of runs to the trials whose primary metric's CI is still too wide."""
    plan, policy = experiment.plan, experiment.adaptive
    metric = experiment.loaded.spec.primary_metric.name  # the spec model guarantees one
    repeat = max((r.repeat for r in plan.runs if not r.warmup), default=-1) + 1
    while True:
        counted = [r for r in store.runs(plan.experiment_id) if not r.warmup]
        values = {t.id: [r.metrics[metric] for r in counted if r.trial_id == t.id and r.status == "succeeded"
                         and metric in r.metrics] for t in plan.trials}
        runs_done = {t.id: sum(1 for r in counted if r.trial_id == t.id and r.status != "pending") for t in plan.trials}
        new = next_round(plan.trials, values, runs_done, repeat, policy)
        if not new:
            return
        store.begin_experiment(record, replace(plan, runs=tuple(new)))
        done = store.succeeded_run_ids(plan.experiment_id)
        progress.added(len(new))
        run_all([r for r in new if r.id not in done])
        repeat += 1


def _in_parallel(runs: list[Run], width: int, one: Callable[[Run], None], backend: Backend) -> None:
    """``one(run)`` for every run, ``width`` at a time; on any error or Ctrl-C, cancel all in flight."""
    if not runs:
        return
    pool = ThreadPoolExecutor(max_workers=min(width, len(runs)), thread_name_prefix="kubebench-run")
    futures = [pool.submit(one, run) for run in runs]
    try:
        for future in as_completed(futures):
            future.result()
    except BaseException:
        backend.interrupt()  # each waiting thread cancels its own job
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()


def validate(experiment: Experiment, backend: Backend) -> None:
    """Render one run of every trial before anything runs, so that spec errors stop the start."""
    seen: set[str] = set()
    for run in experiment.plan.runs:
        if run.trial.id not in seen:
            seen.add(run.trial.id)
            experiment.render(run, backend)
    storage = shared_storage(experiment.settings, experiment.loaded.spec.storage, experiment.loaded.base_dir)
    if storage is not None:
        storage.check()  # a missing bucket or a read-only folder stops the start, not every run


def execute_run(experiment: Experiment, backend: Backend, store: Store, run: Run) -> RunResult:
    """One run: fresh folders, render, submit, wait, collect, copy to shared storage, record.

    A failure is a result.
    """
    paths = experiment.local_paths(run)
    _prepare_folders(paths)
    job = experiment.render(run, backend)
    _write_config(paths, job, run)
    storage = shared_storage(experiment.settings, experiment.loaded.spec.storage, experiment.loaded.base_dir)
    store.start_run(run.id, run_location(storage, paths))
    handle = None
    telemetry = RunTelemetry(experiment.loaded.spec.telemetry, experiment.plan.experiment_id, run.id)
    try:
        handle = backend.submit(job, backend.job_paths(paths))
        telemetry.start(handle)  # telemetry: from submit to the end of wait
        outcome = backend.wait(handle, experiment.loaded.spec.timeout)
        telemetry.stop()
        backend.logs(handle, paths)
    except BackendError as e:
        outcome = Outcome("failed", None, str(e))
    except KeyboardInterrupt:
        store.finish_run(RunResult(run_id=run.id, status="cancelled", reason="cancelled by the user",
                                   finished_at=time.time()))
        raise
    finally:
        telemetry.stop()
    result = _result(experiment, run, paths, outcome, job, _provenance(experiment, backend, job, handle))
    result = telemetry.record(store, result)  # series stored; summaries added to the metrics
    write_run_record(paths, result)
    if storage is not None:
        result = upload_run(storage, paths, result)
    if experiment.loaded.spec.report:
        result = report_run(experiment.loaded.spec.report, _context(experiment, run, paths, job), result)
    store.finish_run(result)
    return result


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


def _provenance(experiment: Experiment, backend: Backend, job: RenderedJob, handle: object) -> dict:
    """Machine and software of this runner, the workload's commit, and where the backend ran the job."""
    kind = experiment.loaded.spec.backend.kind
    data = {**machine(), **workload(job.workdir), "backend": kind}
    if kind != "local" and job_images(job.manifest):
        data["image"] = ", ".join(job_images(job.manifest))
    if handle is not None:
        try:
            data.update(backend.provenance(handle))
        except BackendError:
            pass  # provenance is best effort: the run's numbers still count
    return data


def _result(experiment: Experiment, run: Run, paths: RunPaths, outcome: Outcome, job: RenderedJob,
            provenance: dict | None = None) -> RunResult:
    finished = time.time()
    spec = experiment.loaded.spec
    status, reason, metrics, info = outcome.state, outcome.reason, {}, {}
    if outcome.state == "succeeded":
        ctx = RunContext(experiment.plan.experiment_id, run.trial.id, run.id, run.repeat, run.trial.params,
                         paths, job.workdir)
        collected = collect(ctx, spec.postprocess, spec.metrics)
        metrics, info = collected.metrics, collected.info
        if collected.error:
            status, reason = "failed", collected.error
    return RunResult(run_id=run.id, status=status, metrics=metrics, info=info, exit_code=outcome.exit_code,
                     reason=reason, log_tail=log_tail(Path(paths.output), reason), finished_at=finished,
                     provenance=provenance or {})


def log_tail(output: Path, reason: str) -> str:
    """The end of the log of the replica named in ``reason`` (else of rank 0)."""
    logs = replica_logs(output)
    if not logs:
        return ""
    named = [p for p in logs if reason.startswith(p.stem + " ")]
    with open((named or logs)[0], "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - 64_000))
        lines = f.read().decode("utf-8", errors="replace").splitlines()
    return "\n".join(lines[-LOG_TAIL_LINES:])
