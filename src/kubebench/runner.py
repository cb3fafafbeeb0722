"""Wire the steps of one experiment: plan → render → backend → collect → store.

The runner holds no results itself: each run's state goes to the store as it changes, so a killed
runner resumes where it stopped (``kubebench run --id``).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import yaml

from . import registry
from .backends.base import Backend, Outcome
from .errors import BackendError
from .collect.context import RunContext
from .collect.metrics import collect, replica_logs
from .paths import RunPaths
from .plan.plan import Plan, Run, make_plan, new_experiment_id
from .render.job import RenderedJob, job_fingerprint, render_run
from .settings import Settings
from .spec.model import LoadedSpec
from .store.records import ExperimentRecord, RunResult
from .store.store import Store

LOG_TAIL_LINES = 20


class Progress(Protocol):
    """Callbacks the CLI uses to draw progress; all optional to act on."""

    def started(self, plan: Plan, skipped: int) -> None: ...
    def run_started(self, run: Run) -> None: ...
    def run_finished(self, run: Run, result: RunResult) -> None: ...


class _Silent:
    def started(self, plan: Plan, skipped: int) -> None: ...
    def run_started(self, run: Run) -> None: ...
    def run_finished(self, run: Run, result: RunResult) -> None: ...


@dataclass(frozen=True)
class Experiment:
    """A planned experiment: its spec, plan, backend and where its runs live."""

    loaded: LoadedSpec
    plan: Plan
    settings: Settings

    def local_paths(self, run: Run) -> RunPaths:
        """The run's folders as kubebench sees them."""
        data_root = self.loaded.spec.data_root
        data = self.loaded.base_dir / data_root if data_root else self.settings.data_root
        return RunPaths(self.settings.experiments_root, data, self.plan.experiment_id, run.id)

    def render(self, run: Run, backend: Backend) -> RenderedJob:
        """The run's job, with the environment pointing at its folders as the job sees them."""
        paths = backend.job_paths(self.local_paths(run))
        return render_run(self.loaded, run, self.plan.experiment_id, paths.env(run.trial.id, run.repeat))


def plan_experiment(loaded: LoadedSpec, settings: Settings, experiment_id: str | None = None,
                    repeats: int | None = None) -> Experiment:
    """Plan (pure): trials and runs with their stable ids."""
    exp_id = experiment_id or new_experiment_id(loaded.spec.name)
    return Experiment(loaded, make_plan(loaded.spec, exp_id, job_fingerprint(loaded), repeats), settings)


def make_backend(loaded: LoadedSpec) -> Backend:
    """The backend plugin named by the spec, configured."""
    config = loaded.spec.backend
    return registry.load("backends", config.kind)(config)


def execute(experiment: Experiment, store: Store, progress: Progress | None = None) -> None:
    """Run every run of the plan that has not yet succeeded, recording each in the store."""
    progress = progress or _Silent()
    plan, spec = experiment.plan, experiment.loaded.spec
    backend = make_backend(experiment.loaded)
    validate(experiment, backend)
    now = time.time()
    store.begin_experiment(ExperimentRecord(
        id=plan.experiment_id, name=spec.name, backend=spec.backend.kind, source=experiment.loaded.source,
        spec_text=experiment.loaded.text, job_fingerprint=plan.job_fingerprint, created_at=now, updated_at=now,
    ), plan)
    done = store.succeeded_run_ids(plan.experiment_id)
    progress.started(plan, len([r for r in plan.runs if r.id in done]))
    for run in plan.runs:
        if run.id in done:
            continue
        progress.run_started(run)
        result = execute_run(experiment, backend, store, run)
        progress.run_finished(run, result)


def validate(experiment: Experiment, backend: Backend) -> None:
    """Render one run of every trial before anything runs, so that spec errors stop the start."""
    seen: set[str] = set()
    for run in experiment.plan.runs:
        if run.trial.id not in seen:
            seen.add(run.trial.id)
            experiment.render(run, backend)


def execute_run(experiment: Experiment, backend: Backend, store: Store, run: Run) -> RunResult:
    """One run: fresh folders, render, submit, wait, collect, record. A failure is a result."""
    paths = experiment.local_paths(run)
    _prepare_folders(paths)
    job = experiment.render(run, backend)
    _write_config(paths, job, run)
    store.start_run(run.id, str(paths.run))
    try:
        handle = backend.submit(job, backend.job_paths(paths))
        outcome = backend.wait(handle, experiment.loaded.spec.timeout)
        backend.logs(handle, paths)
    except BackendError as e:
        outcome = Outcome("failed", None, str(e))
    except KeyboardInterrupt:
        store.finish_run(RunResult(run_id=run.id, status="cancelled", reason="cancelled by the user",
                                   finished_at=time.time()))
        raise
    result = _result(experiment, run, paths, outcome, job)
    store.finish_run(result)
    return result


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


def _result(experiment: Experiment, run: Run, paths: RunPaths, outcome: Outcome, job: RenderedJob) -> RunResult:
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
                     reason=reason, log_tail=log_tail(Path(paths.output), reason), finished_at=finished)


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
