"""Wire the steps of one experiment: plan → render → backend → collect → store.

The runner holds no results itself: each run's state goes to the store as it changes, so a killed
runner resumes where it stopped (``kubebench run --id``): runs it left ``running`` are recorded as
interrupted, what they left running is stopped, and they are redone (see ``attempts``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

from . import ids, registry
from .attempts import INTERRUPTED, execute_run
from .backends.base import Backend, Lifecycle
from .cancel import Cancel
from .data import prepare_data
from .errors import Cancelled, SpecError
from .experiment import Experiment
from .numerics.sequential import Decision, Design
from .plan.adaptive import Against, decision_round, next_round
from .plan.plan import Plan, Run, make_plan, new_experiment_id
from .render.budget import plan_budget
from .render.job import job_fingerprint
from .settings import Settings
from .spec.efficiency import load_prices
from .spec.model import AdaptiveRepeats, LoadedSpec
from .storage.runs import shared_storage
from .store.decision_records import DecisionRecord
from .store.holding import hold_experiment
from .store.records import ExperimentRecord, RunResult

if TYPE_CHECKING:  # the store (SQLAlchemy) is handed in: a dry run never loads it
    from .store.store import Store

#: The handle of a job, as the experiment's backend types it (``LocalJob``, ``KubeJob``).
H = TypeVar("H")


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


def plan_experiment(loaded: LoadedSpec, settings: Settings, experiment_id: str | None = None,
                    repeats: int | None = None, labels: dict[str, str] | None = None,
                    sequential: Design | None = None) -> Experiment:
    """Plan (pure): trials and runs with their stable ids. ``sequential``: each trial is decided
    against a base (give it with :func:`with_against`), its first ``min_runs`` runs planned."""
    exp_id = ids.check(experiment_id) if experiment_id is not None else new_experiment_id(loaded.spec.name)
    if sequential is not None and loaded.spec.search is not None:
        raise SpecError("--decide-against decides trials; a capacity search decides each probe itself (search.min, "
                        "search.max): run it without --decide-against")
    plan = make_plan(loaded.spec, exp_id, job_fingerprint(loaded), sequential.min_runs if sequential else repeats)
    if loaded.spec.search is not None:  # capacity search: its first probes instead of the sweep's trials
        from .capacity.driver import initial_plan

        plan = initial_plan(loaded.spec, plan)
    adaptive = loaded.spec.repeats if isinstance(loaded.spec.repeats, AdaptiveRepeats) and repeats is None else None
    return Experiment(loaded, plan, settings, None if sequential else adaptive, tuple(sorted((labels or {}).items())))


def with_against(experiment: Experiment, against: Against) -> Experiment:
    """The experiment with its trials decided against ``against`` round by round (``--decide-against``)."""
    return replace(experiment, against=against)


def make_backend(loaded: LoadedSpec) -> Backend[Any, Any]:
    """The backend plugin named by the spec, configured and given the spec's file (``give_spec``)."""
    config = loaded.spec.backend
    backend: Backend[Any, Any] = registry.load("backends", config.kind)(config)
    spec_file = loaded.base_dir / Path(loaded.source).name
    if spec_file.is_file():
        backend.give_spec(spec_file)
    return backend


def execute(experiment: Experiment, store: Store, progress: Progress | None = None,
            parallelism: int | None = None, cancel: Cancel | None = None) -> None:
    """Run every run of the plan that has not yet succeeded, recording each in the store.

    Up to ``parallelism`` runs (default: the spec's) are in flight at once; warm-up runs all end
    before counted ones start. On Ctrl-C (or ``cancel.request()``) every job in flight is cancelled
    and recorded so, no other run starts, and :class:`~kubebench.errors.Cancelled` (a KeyboardInterrupt)
    goes on. Only one runner runs an experiment at a time, on one machine or, on a shared store, on
    any (BusyError otherwise; see :mod:`kubebench.locks`); runs that a killed runner left ``running``
    are redone.
    """
    progress = progress or _Silent()
    cancel = cancel or Cancel()
    plan, spec = experiment.plan, experiment.loaded.spec
    backend = make_backend(experiment.loaded)
    cancel.attach(backend)
    try:
        validate(experiment, backend)
        folder = experiment.settings.experiments_root / plan.experiment_id
        # on a shared store, a runner that lost its lease to another one stops its runs in flight
        with hold_experiment(store, folder, plan.experiment_id, on_lost=cancel.request):
            backend.begin(plan.experiment_id)  # under the lock: a runner refused it touches nothing shared
            _execute(experiment, store, progress, parallelism or spec.parallelism, cancel, backend)
    finally:
        try:
            backend.close()
        finally:
            cancel.detach(backend)


def record_experiment(experiment: Experiment, store: Store) -> ExperimentRecord:
    """Store the experiment with its trials and runs (pending), or check a resumed one's job."""
    plan, spec = experiment.plan, experiment.loaded.spec
    now = time.time()
    record = ExperimentRecord(
        id=plan.experiment_id, name=spec.name, backend=spec.backend.kind, source=experiment.loaded.source,
        spec_text=experiment.loaded.text, job_fingerprint=plan.job_fingerprint, created_at=now, updated_at=now,
        series=spec.series or spec.name, labels=dict(experiment.labels),
    )
    store.begin_experiment(record, plan)
    return record


#: A spec whose first runs all lack a declared metric stops after this many (review 2026-12-02 #13).
FAIL_FAST_RUNS = 3
_MISSING = "missing from the run's outputs"


class MissingMetrics(SpecError):
    """The first runs of an experiment all ran and all lacked a metric the spec declares: a typo in
    the spec (``ops_per_seconds``) would fail every run of the sweep the same way."""


class FailFast:
    """Watches the first runs to end: when the first :data:`FAIL_FAST_RUNS` of an experiment of more
    runs each lack the same declared metric, raises :class:`MissingMetrics` so that no more start."""

    def __init__(self, experiment_id: str, runs: int) -> None:
        self.experiment_id, self.runs = experiment_id, runs
        self.first: list[RunResult] = []
        self.lock = threading.Lock()

    def saw(self, result: RunResult) -> None:
        with self.lock:
            if self.runs <= FAIL_FAST_RUNS or len(self.first) >= FAIL_FAST_RUNS or result.status == "cancelled":
                return
            self.first.append(result)
            if len(self.first) < FAIL_FAST_RUNS:
                return
            reasons = {r.reason for r in self.first}
            if len(reasons) != 1 or _MISSING not in next(iter(reasons)) or any(r.status != "failed" for r in self.first):
                return
        reported = ", ".join(sorted({m for r in self.first for m in r.metrics})) or "none"
        raise MissingMetrics(
            f"stopped after the first {len(self.first)} runs of {self.experiment_id}: each ended with "
            f"{next(iter(reasons))} (they reported: {reported}); fix the metric's name in the spec's `metrics:` "
            f"or the workload, then resume with --id {self.experiment_id} ({self.runs - len(self.first)} runs not started)")


def _execute(experiment: Experiment, store: Store, progress: Progress, width: int, cancel: Cancel,
             backend: Backend[H, Any]) -> None:
    plan = experiment.plan
    record = record_experiment(experiment, store)
    # We hold the experiment's lock: a run still `running` was left so by a runner that is gone.
    store.interrupt_running(plan.experiment_id, INTERRUPTED)
    prepare_data(experiment, backend, store)  # before the first run, outside every run's time
    # Any run tried before and not done may have left processes behind (its runner killed, then the
    # run marked failed by whoever saw it die): they are stopped before it is redone.
    leftovers = {r.run_id for r in store.runs(plan.experiment_id, include_warmup=True)
                 if r.attempts and r.status != "succeeded"}
    done = store.succeeded_run_ids(plan.experiment_id)
    progress.started(plan, len([r for r in plan.runs if r.id in done]))
    todo = [run for run in plan.runs if run.id not in done]
    counted = sum(1 for r in todo if not r.warmup)
    watch = FailFast(plan.experiment_id, counted) if not done and experiment.loaded.spec.metrics else None

    def one(run: Run) -> None:
        if cancel.requested:
            raise Cancelled  # asked to stop: no new run starts
        progress.run_started(run)
        result = execute_run(experiment, backend, store, run, leftover=run.id in leftovers)
        progress.run_finished(run, result)
        if watch is not None and not run.warmup:
            watch.saw(result)

    def run_all(runs: list[Run]) -> None:
        if width <= 1:
            for run in runs:
                one(run)
        else:
            for stage in ([r for r in runs if r.warmup], [r for r in runs if not r.warmup]):
                _in_parallel(stage, width, one, backend)

    run_all(todo)
    if experiment.against is not None:
        _decision_rounds(experiment, experiment.against, store, record, progress, run_all)
    elif experiment.adaptive is not None:
        _adaptive_rounds(experiment, experiment.adaptive, store, record, progress, run_all)
    spec = experiment.loaded.spec
    if spec.search is not None:
        from .capacity.driver import search_rounds

        search_rounds(spec, plan, lambda: store.runs(plan.experiment_id, logs=False),
                      lambda more: store.begin_experiment(record, more), run_all, progress.added)


def _adaptive_rounds(experiment: Experiment, policy: AdaptiveRepeats, store: Store, record: ExperimentRecord,
                     progress: Progress, run_all: Callable[[list[Run]], None]) -> None:
    """Add rounds of runs to the trials whose primary metric's CI is still too wide."""
    primary = experiment.loaded.spec.primary_metric
    assert primary is not None  # the spec model refuses adaptive repeats without metrics

    def next_runs(values: dict[str, list[float]], runs_done: dict[str, int], repeat: int) -> list[Run]:
        return next_round(experiment.plan.trials, values, runs_done, repeat, policy)

    _rounds(experiment.plan, primary.name, store, record, progress, run_all, next_runs)


def _decision_rounds(experiment: Experiment, against: Against, store: Store, record: ExperimentRecord,
                     progress: Progress, run_all: Callable[[list[Run]], None]) -> None:
    """Add a run to every trial not yet decided against its base, round after round; store each
    trial's decision as it is made (a resume replays the same runs to the same decisions)."""
    plan = experiment.plan
    stored: set[str] = set()

    def next_runs(values: dict[str, list[float]], runs_done: dict[str, int], repeat: int) -> list[Run]:
        new, decided = decision_round(plan.trials, values, runs_done, repeat, against)
        store.record_decisions([decision_record(plan.experiment_id, trial_id, against, d)
                                for trial_id, d in decided.items() if trial_id not in stored])
        stored.update(decided)
        return new

    _rounds(plan, against.metric, store, record, progress, run_all, next_runs)


def _rounds(plan: Plan, metric: str, store: Store, record: ExperimentRecord, progress: Progress,
            run_all: Callable[[list[Run]], None],
            next_runs: Callable[[dict[str, list[float]], dict[str, int], int], list[Run]]) -> None:
    """Round after round: each trial's values of ``metric`` and runs so far to ``next_runs``, whose runs
    are recorded and run, until it asks for none."""
    repeat = max((r.repeat for r in plan.runs if not r.warmup), default=-1) + 1
    while True:
        counted = [r for r in store.runs(plan.experiment_id, logs=False) if not r.warmup]
        values = {t.id: [r.metrics[metric] for r in counted if r.trial_id == t.id and r.status == "succeeded"
                         and metric in r.metrics] for t in plan.trials}
        runs_done = {t.id: sum(1 for r in counted if r.trial_id == t.id and r.status != "pending") for t in plan.trials}
        new = next_runs(values, runs_done, repeat)
        if not new:
            return
        store.begin_experiment(record, replace(plan, runs=tuple(new)))
        done = store.succeeded_run_ids(plan.experiment_id)
        progress.added(len(new))
        run_all([r for r in new if r.id not in done])
        repeat += 1


def decision_record(experiment_id: str, trial_id: str, against: Against, decision: Decision) -> DecisionRecord:
    """The stored form of one trial's decision."""
    design = decision.design
    return DecisionRecord(
        experiment_id=experiment_id, trial_id=trial_id, metric=against.metric, goal=against.goal, against=against.text,
        base_experiments=list(against.experiments), verdict=decision.verdict or "inconclusive", runs=decision.runs,
        base_runs=decision.base_runs, min_runs=design.min_runs, max_runs=design.max_runs, ratio=decision.ratio,
        ci_low=decision.ci[0], ci_high=decision.ci[1], band_low=decision.band[0], band_high=decision.band[1],
        alpha=design.alpha, beta=design.beta, margin=design.margin, reason=decision.reason,
        sequential=decision.sequential, decided_at=time.time())


#: How often the main thread wakes while runs are in flight in other threads (see :func:`_in_parallel`).
SIGNAL_CHECK_SECONDS = 0.2


def _in_parallel(runs: list[Run], width: int, one: Callable[[Run], None], backend: Lifecycle) -> None:
    """``one(run)`` for every run, ``width`` at a time; on any error or Ctrl-C, cancel all in flight."""
    if not runs:
        return
    pool = ThreadPoolExecutor(max_workers=min(width, len(runs)), thread_name_prefix="kubebench-run")
    try:
        pending = {pool.submit(one, run) for run in runs}
        while pending:
            # Never one long blocking wait: a signal that lands on a worker thread (the kernel gives a
            # process's signal to any thread) runs its Python handler, KeyboardInterrupt included, only
            # when the main thread runs Python code again: Ctrl-C took until a run ended (CI 2026-12-01).
            done, pending = wait(pending, timeout=SIGNAL_CHECK_SECONDS, return_when=FIRST_COMPLETED)
            for future in done:
                future.result()
    except BaseException:
        backend.interrupt()  # each waiting thread cancels its own job
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown()


def render_trials(experiment: Experiment, backend: Backend[Any, Any]) -> list[dict]:
    """The manifest of one run of every trial, all rendered within one time budget
    (``limits.RENDER_SECONDS``) and one budget of rendered characters (``limits.RENDER_CHARS``): a
    spec error stops the start (or the dry run), not a run."""
    seen: set[str] = set()
    manifests = []
    with plan_budget():
        for run in experiment.plan.runs:
            if run.trial.id not in seen:
                seen.add(run.trial.id)
                manifests.append(experiment.render(run, backend).manifest)
    return manifests


def validate(experiment: Experiment, backend: Backend[Any, Any]) -> None:
    """Render one run of every trial before anything runs (:func:`render_trials`), and let the
    backend check it can run those jobs at all (``Backend.check``)."""
    backend.check(render_trials(experiment, backend))
    storage = shared_storage(experiment.settings, experiment.loaded.spec.storage, experiment.loaded.base_dir)
    if storage is not None:
        storage.check()  # a missing bucket or a read-only folder stops the start, not every run
    if experiment.loaded.spec.prices is not None:  # so does a bad prices file
        load_prices(experiment.loaded.spec.prices, experiment.loaded.base_dir)
