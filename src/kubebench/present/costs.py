"""What runs cost, as ``results``, ``compare``, the report and the dashboard show it: the median
``cost_usd`` per run and the median price per item (the first ``usd_per_*`` metric the runs carry;
:mod:`kubebench.collect.cost` computes both when the spec has ``prices:``)."""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..collect.cost import ITEMS
from ..store.records import RunRecord

COST = "cost_usd"
#: Price-per-item metric → its heading (``$/M tokens``), in the order of :data:`ITEMS`.
PRICES = {usd: f"$/{'M' if scale == 1e6 else 'k'} {item}s" for _, (item, scale, usd) in ITEMS.items()}
HEADINGS = {COST: "$/run", **PRICES}


def cost_metrics(names: Iterable[str]) -> list[str]:
    """``cost_usd`` and the runs' price per item, when they carry a cost; [] otherwise."""
    present = set(names)
    if COST not in present:
        return []
    return [COST, *[m for m in PRICES if m in present][:1]]


def usd(value: float | None) -> str:
    """``$0.0123``: three significant digits, never an exponent; "–" for none/nan."""
    if value is None or not math.isfinite(value):
        return "–"
    if value == 0:
        return "$0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"${value:.{decimals}f}"


@dataclass(frozen=True)
class Cost:
    """Medians over a set of runs: USD per run and, when the runs report a throughput, per item."""

    per_run: float
    price_metric: str | None = None
    per_item: float | None = None

    def text(self) -> str:
        """``$0.0123/run, $1.23/M tokens``."""
        item = f", {usd(self.per_item)}{PRICES[self.price_metric].removeprefix('$')}" if self.price_metric else ""
        return f"{usd(self.per_run)}/run{item}"


def median_cost(metrics: Sequence[Mapping[str, float]]) -> Cost | None:
    """The medians of the runs' ``metrics`` (one dict per run); None when none has a cost."""
    names = cost_metrics(name for values in metrics for name in values)
    if not names:
        return None
    def median(name: str) -> float:
        return statistics.median(v[name] for v in metrics if name in v)

    return Cost(median(COST), names[1], median(names[1])) if len(names) > 1 else Cost(median(COST))


def experiment_cost(runs: Sequence[RunRecord]) -> Cost | None:
    """:func:`median_cost` of the counted runs that succeeded (warm-ups left out)."""
    return median_cost([r.metrics for r in runs if not r.warmup and r.status == "succeeded"])


def comparison_line(base_runs: Sequence[RunRecord], candidate_runs: Sequence[RunRecord]) -> str | None:
    """One line under a comparison: both median costs and the candidate's price per item over the
    base's; None unless both experiments carry a cost."""
    base, candidate = experiment_cost(base_runs), experiment_cost(candidate_runs)
    if base is None or candidate is None:
        return None
    line = f"median cost per run: base {usd(base.per_run)}, candidate {usd(candidate.per_run)}"
    if base.price_metric and base.price_metric == candidate.price_metric and base.per_item and candidate.per_item:
        line += f" · {PRICES[base.price_metric]} candidate/base: {candidate.per_item / base.per_item:.3f}"
    return line


def cost_html(runs: Sequence[RunRecord], label: Callable[[dict[str, object]], str]) -> str:
    """The report's cost table: per trial (``label(params)`` names it), the median cost per run and
    per item; "" when no run has a cost."""
    from ..analyse.experiments import trial_values  # NumPy and SciPy: not for the results table

    names = cost_metrics(name for r in runs for name in r.metrics)
    if not names:
        return ""
    columns = [trial_values(runs, m) for m in names]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ("trial", "n", *(HEADINGS[m] for m in names)))
    body = ""
    for row in zip(*columns):
        cells = [label(row[0].params), str(len(row[0].values)),
                 *(usd(statistics.median(t.values)) if t.values else "–" for t in row)]
        body += "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
    return f"<h3>cost (median)</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
