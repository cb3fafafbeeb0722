"""Run a capacity search (``search:`` in the spec) through the runner: the first probes of every
sweep point up front, then, round after round, the next probe (or the next repeat of an undecided
one) of every point still searching, until every point has its answer (:mod:`.search`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ..plan.plan import Plan, Run, Trial, digest, make_run
from ..spec.model import BenchmarkSpec, CapacitySearch
from .search import Capacity, Probe, walk

if TYPE_CHECKING:
    from ..store.records import RunRecord


def probe_trial(plan: Plan, point: Trial, parameter: str, x: float, index: int) -> Trial:
    """The trial of value ``x`` of the searched parameter at sweep point ``point`` (stable id)."""
    value: float | int = int(x) if float(x).is_integer() else x
    params = {**point.params, parameter: value}
    return Trial(id=digest(plan.experiment_id, plan.job_fingerprint, params, length=10), index=index, params=params)


def initial_plan(spec: BenchmarkSpec, plan: Plan) -> Plan:
    """Replace the sweep's trials by the first two probes (``low`` and ``high``) of every point,
    ``search.min`` runs each, in rounds."""
    search = spec.search
    assert search is not None
    trials = [probe_trial(plan, point, search.parameter, x, point.index * 1000 + i)
              for point in plan.trials for i, x in enumerate((search.low, search.high))]
    runs = [make_run(t, r) for r in range(search.min) for t in trials]
    return replace(plan, trials=tuple(trials), runs=tuple(runs))


def sweep_points(spec: BenchmarkSpec, plan: Plan) -> list[Trial]:
    """The sweep's points (without the searched parameter), as the plan had them before the search."""
    from ..plan.plan import make_plan

    return list(make_plan(spec, plan.experiment_id, plan.job_fingerprint, 1).trials)


def probes_of(search: CapacitySearch, point: Trial, runs: Sequence[RunRecord]) -> dict[float, Probe]:
    """What the counted runs of this point say about each value of the parameter."""
    grouped: dict[float, list[RunRecord]] = {}
    for run in runs:
        if run.warmup or run.status in ("pending", "running") or search.parameter not in run.params:
            continue
        rest = {k: v for k, v in run.params.items() if k != search.parameter}
        if rest == point.params:
            grouped.setdefault(float(run.params[search.parameter]), []).append(run)  # type: ignore[arg-type]
    return {x: Probe(x, {m: [r.metrics[m] for r in group if r.status == "succeeded" and m in r.metrics]
                         for m in search.slo}, len(group)) for x, group in grouped.items()}


def next_runs(spec: BenchmarkSpec, plan: Plan, points: Sequence[Trial], runs: Sequence[RunRecord]) -> list[Run]:
    """The runs of the next round: for every point still searching, its next probe's runs."""
    search = spec.search
    assert search is not None
    new: list[Run] = []
    for point in points:
        probes = probes_of(search, point, runs)
        x, _ = walk(search, probes)
        if x is None:
            continue
        trial = probe_trial(plan, point, search.parameter, x, point.index * 1000 + len(probes))
        done = probes[x].runs if x in probes else 0
        count = 1 if done else search.min
        new.extend(make_run(trial, done + r) for r in range(count))
    return new


def answers(search: CapacitySearch, points: Sequence[Trial], runs: Sequence[RunRecord]) -> list[Capacity]:
    """The capacity of every sweep point, from the runs done."""
    return [replace(walk(search, probes_of(search, point, runs))[1], point=dict(point.params)) for point in points]


def points_of(search: CapacitySearch, runs: Sequence[RunRecord]) -> list[Trial]:
    """The sweep points of stored runs (their parameters without the searched one), in order."""
    seen: dict[str, Trial] = {}
    for run in runs:
        params = {k: v for k, v in run.params.items() if k != search.parameter}
        key = repr(sorted(params.items(), key=lambda kv: kv[0]))
        seen.setdefault(key, Trial(id=key, index=len(seen), params=params))
    return list(seen.values())


def search_rounds(spec: BenchmarkSpec, plan: Plan, list_runs: Callable[[], list[RunRecord]],
                  add: Callable[[Plan], None], run_all: Callable[[list[Run]], None],
                  added: Callable[[int], None]) -> None:
    """Rounds until every point is answered: ``add`` records new trials and runs, ``run_all`` runs them."""
    points = sweep_points(spec, plan)
    while True:
        new = next_runs(spec, plan, points, list_runs())
        if not new:
            return
        trials = tuple({r.trial.id: r.trial for r in new}.values())
        add(replace(plan, trials=trials, runs=tuple(new)))
        added(len(new))
        run_all(new)
