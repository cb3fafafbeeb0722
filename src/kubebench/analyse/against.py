"""What ``kubebench run SPEC --decide-against BASE`` decides against, read from the store: BASE is an
experiment (its id, or ``SERIES@KEY=VALUE`` for the newest one with those labels) or ``series``,
the series' current level: its experiments since the last accepted change of the primary metric
(``kubebench history accept``), the newest :data:`~.gate.WINDOW` of them, their runs pooled by trial.

Trials are matched as ``compare`` matches them: on the parameters that vary (a parameter fixed
within each experiment — a version, a flag — is what is compared, and may differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import SpecError
from ..numerics.sequential import Design
from ..plan.adaptive import Against
from ..plan.plan import Plan
from ..spec.model import BenchmarkSpec
from ..store.series_records import swept_parameters, trial_key
from .gate import WINDOW

if TYPE_CHECKING:
    from ..store.series import TrialRuns
    from ..store.store import Store

#: ``--decide-against series``: the series' current level instead of one experiment.
SERIES = "series"


def read_against(store: Store, ref: str, spec: BenchmarkSpec, plan: Plan, design: Design) -> Against:
    """The base's values of the spec's primary metric for every trial of ``plan``; SpecError when the
    spec declares no metric, or when the base has no value of it for any trial."""
    from ..store.series import experiment_ref, trial_runs

    primary = spec.primary_metric
    if primary is None:
        raise SpecError("--decide-against compares the primary metric: declare `metrics:` in the spec")
    series = spec.series or spec.name
    if ref == SERIES:
        ids = level_experiments(store, series, primary.name, exclude=plan.experiment_id)
        if not ids:
            raise SpecError(f"series {series!r} has no experiment to decide against yet: run the benchmark "
                            "once without --decide-against, or give an experiment id")
        text = f"series {series} ({len(ids)} experiment{'s' * (len(ids) != 1)} since its last accepted change)"
    else:
        found = experiment_ref(store, ref)
        store.experiment(found)  # NotFoundError names it
        if found == plan.experiment_id:
            raise SpecError(f"--decide-against {ref}: that is this experiment; name an earlier one")
        ids, text = [found], f"experiment {found}"
    base = base_values(trial_runs(store, ids), plan, primary.name)
    if not any(base.values()):
        raise SpecError(f"{text} has no succeeded run with {primary.name!r} for any trial of this spec: "
                        "nothing to decide against")
    return Against(text, tuple(ids), primary.name, primary.goal, design, base)


def level_experiments(store: Store, series: str, metric: str, exclude: str = "") -> list[str]:
    """The series' experiments since its last accepted change of ``metric`` (or of every metric), the
    newest :data:`~.gate.WINDOW`, oldest first; ``exclude`` (the candidate) left out."""
    from ..store.series import accepted_changes, recent_experiments

    ids = [e for e in recent_experiments(store, series, float("inf"), 1_000_000) if e != exclude]
    cuts = [ids.index(a.experiment_id) for a in accepted_changes(store, series)
            if a.metric in ("", metric) and a.experiment_id in ids]
    return ids[max(cuts, default=0):][-WINDOW:]


def base_values(runs: dict[str, list[TrialRuns]], plan: Plan,
                metric: str) -> dict[str, tuple[float, ...]]:
    """The base's values of ``metric`` pooled per trial of ``plan`` (by trial id), matched on the
    parameters that vary in the base or in the plan."""
    pairs: list[tuple[str, dict[str, object]]] = [(exp_id, params) for exp_id, trials in runs.items() for params, _ in trials]
    pairs += [("", t.params) for t in plan.trials]
    swept = swept_parameters(pairs)
    pooled: dict[str, list[float]] = {}
    for trials in runs.values():
        for params, metrics in trials:
            values = pooled.setdefault(_key(params, swept), [])
            values.extend(float(m[metric]) for m in metrics if metric in m)
    return {t.id: tuple(pooled.get(_key(t.params, swept), ())) for t in plan.trials}


def _key(params: dict[str, object], swept: Sequence[str] | set[str]) -> str:
    return trial_key({k: v for k, v in params.items() if k in swept})
