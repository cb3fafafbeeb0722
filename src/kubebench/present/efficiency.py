"""Terminal tables of what results cost (throughput, MFU, energy, price) and how they compare with
published references."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.table import Table

from ..analyse.experiments import trial_values
from ..analyse.reference import ReferenceCheck
from ..efficiency.cost import ITEMS
from ..numerics.stats import summarize
from ..store.records import RunRecord
from .costs import PRICES


def _params(params: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "–"


def _num(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.4g}"


def efficiency_columns(runs: Sequence[RunRecord]) -> list[tuple[str, str]]:
    """(metric, heading) of the efficiency metrics present in the runs, in a fixed order."""
    present = {name for r in runs for name in r.metrics}
    columns = [(m, m) for m in ITEMS if m in present]
    columns += [(m, h) for m, h in (("mfu", "MFU"), ("tflops_per_device", "TFLOP/s/dev"),
                                     ("energy_joules", "energy J")) if m in present]
    for _, (item, _, usd) in ITEMS.items():
        columns += [(m, h) for m, h in ((f"joules_per_{item}", f"J/{item}"), (usd, PRICES[usd])) if m in present]
    columns += [("cost_usd", "cost $")] if "cost_usd" in present else []
    return columns


def efficiency_table(runs: Sequence[RunRecord], title: str) -> Table:
    """Per trial, the median of each efficiency metric over its counted runs."""
    columns = efficiency_columns(runs)
    table = Table(title=title)
    table.add_column("trial")
    table.add_column("n", justify="right")
    for _, heading in columns:
        table.add_column(heading, justify="right")
    medians = {metric: {t.trial_id: t for t in trial_values(runs, metric)} for metric, _ in columns}
    for trial in trial_values(runs, columns[0][0]) if columns else []:
        cells = [_num(summarize(medians[m][trial.trial_id].values).median) for m, _ in columns]
        table.add_row(_params(trial.params), str(len(trial.values)), *cells)
    return table


def reference_table(checks: Sequence[ReferenceCheck], min_ratio: float | None = None) -> Table:
    """Each trial as a fraction of its reference, with the CI and the gate's verdict."""
    table = Table(title="against published references")
    for name in ("trial", "metric", "median", "reference", "% of reference", "95% CI", "gate", "source"):
        table.add_column(name, justify="left" if name in ("trial", "metric", "gate", "source") else "right")
    for c in checks:
        limit = c.reference.min_ratio if min_ratio is None else min_ratio
        ci = "–" if any(math.isnan(v) for v in c.ci) else f"{c.ci[0]:.1%} … {c.ci[1]:.1%}"
        gate = f"[green]≥ {limit:.0%}[/]" if c.passed(min_ratio) else f"[bold red]< {limit:.0%}[/]"
        fraction = "–" if math.isnan(c.fraction) else f"{c.fraction:.1%}"
        unit = f" {c.reference.unit}" if c.reference.unit else ""
        table.add_row(_params(c.params), c.reference.metric, _num(c.values.median), f"{c.reference.value:g}{unit}",
                      fraction, ci, gate, c.reference.source)
    return table
