"""Rich tables for the terminal: the plan, experiments, and per-trial results."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

from ..analyse.stats import summarize
from ..store.records import FAILED_STATES, ExperimentRecord, RunRecord, TrialResults

if TYPE_CHECKING:  # the spec's models cost a tenth of a second to import; results tables need none
    from ..plan.plan import Plan

#: Medians of metrics other than the primary one shown per trial: more would not fit a terminal.
MAX_OTHER_METRICS = 3


def plan_table(plan: Plan) -> Table:
    """What ``--dry-run`` shows: every trial with its parameters and number of runs."""
    params = list(dict.fromkeys(k for t in plan.trials for k in t.params))
    table = Table(title=f"plan of {plan.experiment_id}: {len(plan.trials)} trials, {len(plan.runs)} runs")
    for name in ["trial", *params, "runs"]:
        table.add_column(name, justify="right" if name == "runs" else "left")
    per_trial = {t.id: sum(1 for r in plan.runs if r.trial.id == t.id) for t in plan.trials}
    for trial in plan.trials:
        table.add_row(trial.id, *(_fmt(trial.params.get(p)) for p in params), str(per_trial[trial.id]))
    return table


def experiments_table(experiments: Sequence[ExperimentRecord]) -> Table:
    """One row per experiment with its run counts."""
    table = Table(title="experiments")
    for name in ("id", "name", "backend", "created", "runs", "succeeded", "failed"):
        table.add_column(name)
    for e in experiments:
        counts = e.runs_by_status
        failed = sum(counts.get(s, 0) for s in FAILED_STATES)
        table.add_row(e.id, e.name, e.backend, _when(e.created_at), str(sum(counts.values())),
                      str(counts.get("succeeded", 0)), str(failed))
    return table


def results_table(trials: Sequence[TrialResults], primary: str | None, title: str = "results") -> Table:
    """One row per trial: parameters, run counts by state, and the primary metric's median and spread."""
    params = list(dict.fromkeys(name for trial in trials for name in trial.params))
    metrics = sorted({name for trial in trials for values in trial.metrics for name in values})
    primary = primary if primary in metrics else (metrics[0] if metrics else None)
    others = [m for m in metrics if m != primary]
    hidden, others = others[MAX_OTHER_METRICS:], others[:MAX_OTHER_METRICS]
    caption = f"{len(hidden)} more metrics: see -f csv or -f json" if hidden else None
    table = Table(title=title, caption=caption)
    for name in ("trial", *params, "ok", "failed"):
        table.add_column(name, justify="right" if name in ("ok", "failed") else "left")
    if primary:
        for name in (f"{primary} median", "cv", "95% CI of mean"):
            table.add_column(name, justify="right")
    for name in others:
        table.add_column(f"{name} median", justify="right")
    for trial in trials:
        ok = trial.runs_by_status.get("succeeded", 0)
        failed = sum(trial.runs_by_status.get(state, 0) for state in FAILED_STATES)
        row = [trial.trial_id, *(_fmt(trial.params.get(p)) for p in params), str(ok), str(failed)]
        if primary:
            s = summarize([values[primary] for values in trial.metrics if primary in values])
            row += [_num(s.median), _pct(s.cv), f"{_num(s.ci_low)} … {_num(s.ci_high)}"]
        for name in others:
            row.append(_num(summarize([values[name] for values in trial.metrics if name in values]).median))
        table.add_row(*row, style="red" if failed and not ok else None)
    return table


def failures_table(runs: Sequence[RunRecord]) -> Table | None:
    """Failed runs with their reason, or None when there are none."""
    failed = [r for r in runs if r.status in FAILED_STATES]
    if not failed:
        return None
    table = Table(title="failed runs")
    for name in ("run", "trial", "repeat", "status", "exit", "reason"):
        table.add_column(name)
    for r in failed:
        table.add_row(r.run_id, r.trial_id, str(r.repeat), r.status, _fmt(r.exit_code), r.reason)
    return table


def _num(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4g}" if abs(value) < 1e6 else f"{value:.3e}"


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value * 100:.1f}%"


def _fmt(value: object) -> str:
    return "" if value is None else str(value)


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))
