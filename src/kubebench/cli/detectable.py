"""``kubebench run`` says, before it runs, what its repeats can detect (see :mod:`kubebench.analyse.detectable`):
from the series' A/A floor, else its recent experiments, else — once every trial has two runs — its own."""

from __future__ import annotations

import json
import math
import threading
from typing import Optional

from ..analyse.detectable import Detectability, TrialNoise, detectability, pooled_cv
from ..present.text import cell

#: Experiments of the series whose runs measure the noise when there is no A/A floor.
RECENT = 10


def noise_note(experiment, store_url: str, console) -> Optional["FirstRuns"]:
    """Print what the experiment's repeats detect; without a known noise, a progress observer that prints it
    once each trial has two runs (None when there is nothing to say: no metric declared)."""
    from ..analyse.history import DEFAULT_THRESHOLD

    spec = experiment.loaded.spec
    primary = spec.primary_metric
    if primary is None:
        return None
    plan = experiment.plan
    counted = [r for r in plan.runs if not r.warmup]
    repeats = max((sum(1 for r in counted if r.trial.id == t.id) for t in plan.trials), default=0)
    tests = len(plan.trials) * max(1, len(spec.metrics))
    if repeats < 2:
        console.print(cell(f"note: {repeats} repeat{'s' * (repeats != 1)} a trial: a comparison needs 2 runs a side, so "
                           "`check` and `compare` cannot find a regression in this experiment: use `repeats: 3` or more",
                           style="yellow"), soft_wrap=True)
        return None
    known = _known_noise(spec.series or spec.name, primary.name, store_url, DEFAULT_THRESHOLD)
    if known is not None:
        trials, source = known
        _say(console, detectability(trials, repeats, tests, source))
        return None
    return FirstRuns(plan, primary.name, repeats, tests, DEFAULT_THRESHOLD, console)


def _say(console, found: Optional[Detectability]) -> None:
    if found is not None:
        console.print(cell(("" if found.enough else "warning: ") + found.text(),
                           style="dim" if found.enough else "yellow"), soft_wrap=True)


def _known_noise(series: str, metric: str, store_url: str,
                 default: float) -> Optional[tuple[dict[str, TrialNoise], str]]:
    """The trials' noise from the series' A/A floor, else from its recent experiments; None when neither has any."""
    from ..store.series import noise_floors, recent_experiments, trial_runs
    from ..store.store import open_store

    db = open_store(store_url)
    floors = {key: f for (key, m), f in noise_floors(db, series).items() if m == metric and f.cv > 0}
    if floors:
        return ({key: TrialNoise(_label(json.loads(key)), f.cv, f.spread) for key, f in floors.items()},
                f"the A/A floor of `kubebench calibrate` ({', '.join(next(iter(floors.values())).experiments)})")
    ids = recent_experiments(db, series, math.inf, RECENT)
    groups: dict[str, tuple[dict, list[list[float]]]] = {}
    for trials in trial_runs(db, ids).values():
        for params, runs in trials:
            values = [m[metric] for m in runs if metric in m]
            groups.setdefault(json.dumps(params, sort_keys=True, default=str), (params, []))[1].append(values)
    swept = _swept([params for params, _ in groups.values()])
    noise = {key: TrialNoise(_label({k: v for k, v in params.items() if k in swept}), pooled_cv(runs), default)
             for key, (params, runs) in groups.items()}
    noise = {key: t for key, t in noise.items() if t.cv > 0}
    if not noise:
        return None
    return noise, f"the runs of the series' last {len(ids)} experiment{'s' * (len(ids) != 1)}"


class FirstRuns:
    """A progress observer: once every trial has two runs with the primary metric, prints what the repeats
    detect at the noise those runs show (once)."""

    def __init__(self, plan, metric: str, repeats: int, tests: int, threshold: float, console) -> None:
        self.trials = {t.id: t.params for t in plan.trials}
        self.swept = _swept(list(self.trials.values()))
        self.metric, self.repeats, self.tests, self.threshold = metric, repeats, tests, threshold
        self.console = console
        self.values: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        self.said = False

    def beside(self, progress) -> "_Beside":
        """``progress`` that also tells this observer of each finished run."""
        return _Beside(progress, self)

    def run_finished(self, run, result) -> None:
        """Count the run's value; say it when each trial has two."""
        if run.warmup or result.status != "succeeded" or self.metric not in result.metrics:
            return
        with self.lock:
            if self.said:
                return
            self.values.setdefault(run.trial.id, []).append(float(result.metrics[self.metric]))
            if any(len(self.values.get(t, ())) < 2 for t in self.trials):
                return
            self.said = True
        trials = {t: TrialNoise(_label({k: v for k, v in self.trials[t].items() if k in self.swept}),
                                pooled_cv([values]), self.threshold) for t, values in self.values.items()}
        _say(self.console, detectability(trials, self.repeats, self.tests, "the first runs of this experiment"))


class _Beside:
    """A progress observer, and :class:`FirstRuns` told of each finished run too."""

    def __init__(self, progress, watch: FirstRuns) -> None:
        self.progress, self.watch = progress, watch

    def started(self, plan, skipped: int) -> None:
        self.progress.started(plan, skipped)

    def run_started(self, run) -> None:
        self.progress.run_started(run)

    def run_finished(self, run, result) -> None:
        self.progress.run_finished(run, result)
        self.watch.run_finished(run, result)

    def added(self, runs: int) -> None:
        self.progress.added(runs)


def _swept(params: list[dict]) -> set[str]:
    from ..present.tables import params_split

    return set(params_split(params)[1])


def _label(params: dict) -> str:
    from ..present.history import params_text

    return params_text(params) if params else ""
