"""Terminal tables of comparisons, scaling and overhead studies."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.table import Table

from ..analyse.experiments import TrialComparison
from ..analyse.studies import Overhead, ScalingPoint

VERDICT_STYLE = {"improved": "green", "regressed": "bold red", "unchanged": "", "inconclusive": "yellow"}


def _params(params: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "–"


def _num(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.4g}"


def _ratio_ci(ci: tuple[float, float]) -> str:
    return "–" if any(math.isnan(v) for v in ci) else f"{ci[0]:.3f} … {ci[1]:.3f}"


def comparison_table(rows: Sequence[TrialComparison], base_id: str, candidate_id: str) -> Table:
    """One row per matched trial: medians, ratio with CI, p-value and the verdict."""
    metric = rows[0].metric if rows else ""
    table = Table(title=f"{metric}: {candidate_id} (candidate) vs {base_id} (base)")
    for name in ("trial", "n base/cand", "failed", "base median", "cand median", "ratio", "95% CI", "p", "verdict"):
        table.add_column(name, justify="left" if name in ("trial", "verdict") else "right")
    for row in rows:
        c = row.comparison
        verdict = f"[{VERDICT_STYLE[c.verdict]}]{c.verdict}[/]" if VERDICT_STYLE[c.verdict] else c.verdict
        table.add_row(_params(row.params), f"{c.base.n}/{c.candidate.n}", "%d/%d" % row.failed, _num(c.base.median),
                      _num(c.candidate.median), _num(c.ratio), _ratio_ci(c.ratio_ci), _num(c.p_value), verdict)
    return table


def scaling_table(groups: Sequence[tuple[dict[str, object], list[ScalingPoint]]], metric: str) -> Table:
    """Speedup and efficiency (throughput(N) / (N × throughput(1))) per worker count."""
    table = Table(title=f"scaling efficiency of {metric}")
    for name in ("other parameters", "workers", "median", "speedup", "efficiency", "95% CI"):
        table.add_column(name, justify="left" if name == "other parameters" else "right")
    for rest, points in groups:
        for p in points:
            ci = "–" if any(math.isnan(v) for v in p.efficiency_ci) else f"{p.efficiency_ci[0]:.1%} … {p.efficiency_ci[1]:.1%}"
            efficiency = "–" if math.isnan(p.efficiency) else f"{p.efficiency:.1%}"
            table.add_row(_params(rest), str(p.workers), _num(p.throughput.median), _num(p.speedup), efficiency, ci)
    return table


def overhead_table(rows: Sequence[tuple[dict[str, object], Overhead]], metric: str) -> Table:
    """The platform's overhead over bare runs per matched trial."""
    table = Table(title=f"platform overhead on {metric}")
    for name in ("trial", "bare median", "platform median", "overhead"):
        table.add_column(name, justify="left" if name == "trial" else "right")
    for params, o in rows:
        table.add_row(_params(params), _num(o.bare.median), _num(o.platform.median), o.describe())
    return table
