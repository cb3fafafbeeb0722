"""Terminal tables of what results cost (throughput, MFU, energy, price) and how they compare with
published references; laid out as :mod:`.tables` lays out results (trials by what varies, the fixed
parameters on a line above, SI numbers with units, MFU as a percentage, prices in dollars)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from rich.console import RenderableType
from rich.text import Text

from ..analyse.experiments import trial_values
from ..analyse.reference import ReferenceCheck
from ..collect.cost import ITEMS
from ..numerics.stats import summarize
from ..store.records import RunRecord
from .costs import PRICES, usd
from .numbers import percent, si
from .tables import _with_fixed, fitted_blocks, label, new_table, params_split
from .text import cell

#: What ``efficiency`` says instead of an empty table.
NO_THROUGHPUT = ("no throughput metric to base efficiency on: the runs report none of "
                 + ", ".join(ITEMS) + " (items/s), nor MFU, energy or cost")


def efficiency_columns(runs: Sequence[RunRecord]) -> list[tuple[str, str]]:
    """(metric, heading) of the efficiency metrics present in the runs, in a fixed order."""
    present = {name for r in runs for name in r.metrics}
    columns = [(m, m) for m in ITEMS if m in present]
    columns += [(m, h) for m, h in (("mfu", "MFU"), ("tflops_per_device", "TFLOP/s/dev"),
                                     ("energy_joules", "energy")) if m in present]
    for _, (item, _, usd_metric) in ITEMS.items():
        columns += [(m, h) for m, h in ((f"joules_per_{item}", f"J/{item}"), (usd_metric, PRICES[usd_metric]))
                    if m in present]
    columns += [("cost_usd", "$/run")] if "cost_usd" in present else []
    return columns


def _formatter(metric: str) -> Callable[[float], str]:
    """How a column of ``metric`` writes its medians."""
    if metric in ITEMS:
        return lambda v: si(v, f"{ITEMS[metric][0]}s/s")
    if metric == "mfu":
        return percent
    if metric == "tflops_per_device":
        return lambda v: si(v * 1e12, "FLOP/s")
    if metric == "energy_joules" or metric.startswith("joules_per_"):
        return lambda v: si(v, "J")
    if metric == "cost_usd" or metric in PRICES:
        return usd
    return si


def efficiency_table(runs: Sequence[RunRecord], title: str) -> RenderableType:
    """Per trial, the median of each efficiency metric over its counted runs; a sentence instead of an
    empty table when the runs carry none."""
    columns = efficiency_columns(runs)
    if not columns:
        return Text(NO_THROUGHPUT, style="yellow")
    trials = trial_values(runs, columns[0][0])
    fixed, swept = params_split([t.params for t in trials])
    table = new_table(title)
    table.add_column("trial", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    for _, heading in columns:
        table.add_column(heading, justify="right", no_wrap=True)
    medians = {metric: {t.trial_id: t for t in trial_values(runs, metric)} for metric, _ in columns}
    rows = []
    for trial in trials:
        cells = [_formatter(m)(summarize(medians[m][trial.trial_id].values).median)
                 if trial.trial_id in medians[m] else "–" for m, _ in columns]
        name = cell(label(trial.params, swept), style="bold")
        table.add_row(cell(label(trial.params, swept)), str(len(trial.values)), *cells)
        rows.append((name, [("n", str(len(trial.values))), *zip([h for _, h in columns], cells)]))
    return fitted_blocks(_with_fixed(fixed, table), rows)


def reference_table(checks: Sequence[ReferenceCheck], min_ratio: float | None = None) -> RenderableType:
    """Each trial as a fraction of its reference, with the CI and the gate's verdict."""
    fixed, swept = params_split([c.params for c in checks])
    table = new_table("against published references")
    rows: list = []
    for name in ("trial", "metric", "median", "reference", "% of reference", "95% CI", "gate", "source"):
        table.add_column(name, justify="left" if name in ("trial", "metric", "gate", "source") else "right",
                         no_wrap=name != "source", overflow="fold")
    for c in checks:
        limit = c.reference.min_ratio if min_ratio is None else min_ratio
        ci = "–" if any(math.isnan(v) for v in c.ci) else f"{c.ci[0]:.1%} … {c.ci[1]:.1%}"
        gate = Text(f"≥ {limit:.0%}", style="green") if c.passed(min_ratio) else Text(f"< {limit:.0%}", style="bold red")
        fraction = "–" if math.isnan(c.fraction) else f"{c.fraction:.1%}"
        unit = c.reference.unit
        cells = [si(c.values.median, unit), si(c.reference.value, unit), fraction, ci]
        table.add_row(cell(label(c.params, swept)), cell(c.reference.metric), *cells, gate, cell(c.reference.source))
        rows.append((cell(f"{label(c.params, swept)} · {c.reference.metric}", style="bold"),
                     [*zip(("median", "reference", "% of reference", "95% CI"), cells), ("gate", gate),
                      ("source", cell(c.reference.source))]))
    return fitted_blocks(_with_fixed(fixed, table), rows)
