"""Terminal tables of comparisons, scaling and overhead studies (laid out as :mod:`.tables` does)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from ..analyse import quality
from ..analyse.compare import ci_label
from ..analyse.experiments import TrialComparison, family_note, params_key
from ..analyse.studies import Overhead, ScalingPoint
from ..rules import COMPARE_ALPHA
from .numbers import percent, short
from .tables import fixed_line, label, new_table, param_of, params_split
from .text import cell, safe

VERDICT_STYLE = {"improved": "green", "regressed": "bold red", "unchanged": "", "inconclusive": "yellow"}
#: Verdict reasons printed under a comparison table; the JSON has every one.
SHOWN_REASONS = 10


def _ratio_ci(ci: tuple[float, float]) -> str:
    return "–" if any(math.isnan(v) for v in ci) else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _p(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2g}"


def experiment_differences(base: Mapping[str, object], candidate: Mapping[str, object]) -> list[str]:
    """The parameters fixed in each experiment whose values differ: what is being compared."""
    return [k for k in dict.fromkeys([*base, *candidate]) if repr(base.get(k)) != repr(candidate.get(k))]


def _differences_line(names: Sequence[str], base: Mapping[str, object], candidate: Mapping[str, object]) -> Text:
    def side(params: Mapping[str, object]) -> str:
        return ", ".join(f"{k}={params[k]}" if k in params else f"{k} unset" for k in names)

    return cell(f"base: {side(base)} · candidate: {side(candidate)}", style="bold")


def comparison_table(rows: Sequence[TrialComparison], base_id: str, candidate_id: str, unit: str = "",
                     base_fixed: Mapping[str, object] | None = None,
                     candidate_fixed: Mapping[str, object] | None = None) -> RenderableType:
    """One row per trial of the base: medians, ratio with CI, p-value and the verdict. Above: the
    fixed parameters that differ between the experiments (``base_fixed`` vs ``candidate_fixed``) and
    those they share; below: why each inconclusive trial is so."""
    metric = rows[0].metric if rows else ""
    fixed, swept = params_split([r.params for r in rows])
    differ = experiment_differences(base_fixed or {}, candidate_fixed or {}) if base_fixed is not None else []
    shared = {k: v for k, v in fixed.items() if k not in differ}
    table = new_table(f"{metric}{f' ({unit})' if unit else ''}: {candidate_id} (candidate) vs {base_id} (base)")
    for name in swept:
        table.add_column(safe(name), overflow="fold", min_width=len(name))
    table.add_column("n b/c", justify="right", no_wrap=True)
    if any(any(r.failed) for r in rows):
        table.add_column("failed b/c", justify="right", no_wrap=True)
    note = family_note(rows)
    family = bool(note)
    for name in ("base", "cand", "ratio", ci_label(rows[0].comparison.alpha if rows else COMPARE_ALPHA), "p") + (
            ("adj. p",) if family else ()):
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True, min_width=len("inconclusive"))
    for row in rows:
        c = row.comparison
        cells: list[RenderableType] = [cell(param_of(row.params, p)) for p in swept]
        cells.append(f"{c.base.n}/{'–' if row.missing else c.candidate.n}")
        if any(any(r.failed) for r in rows):
            cells.append("%d/%d" % row.failed)
        cells += [short(c.base.median, unit), short(c.candidate.median, unit), _ratio(c.ratio),
                  _ratio_ci(c.ratio_ci), _p(c.p_value)] + ([_p(row.adjusted_p)] if family else [])
        cells.append(Text("missing" if row.missing else c.verdict, style=VERDICT_STYLE[c.verdict]))
        table.add_row(*cells)
    table.above = [_differences_line(differ, base_fixed or {}, candidate_fixed or {})] if differ else []
    table.above += [line for line in (fixed_line(shared),) if line is not None]
    notes = [cell(f"p: one-sided, in the direction the candidate moved; adj. p: {note}")] if family else []
    return Group(table, *notes, *_reasons(rows, swept))


def _ratio(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.3f}"


def _reasons(rows: Sequence[TrialComparison], swept: Sequence[str]) -> list[Text]:
    """Why each trial is inconclusive (or missing), one line each."""
    unclear = [r for r in rows if r.comparison.verdict == "inconclusive"]
    lines = [cell(f"{label(r.params, swept)}: {r.comparison.reason}", style="yellow") for r in unclear[:SHOWN_REASONS]]
    if len(unclear) > SHOWN_REASONS:
        lines.append(cell(f"… and {len(unclear) - SHOWN_REASONS} more inconclusive trials (-f json has every reason)"))
    return lines


def scaling_table(groups: Sequence[tuple[dict[str, object], list[ScalingPoint]]], metric: str, unit: str = "",
                  threads: Mapping[tuple[str, int], str] | None = None) -> RenderableType:
    """Speedup and efficiency (throughput(N) / (N × throughput(1))) per worker count, with the threads
    each replica used (``threads``: (params_key of the other parameters, workers) → threads), and warnings."""
    fixed, swept = params_split([rest for rest, _ in groups])
    table = new_table(f"scaling efficiency of {metric}{f' ({unit})' if unit else ''}")
    for name in swept:
        table.add_column(safe(name), overflow="fold", min_width=len(name))
    table.add_column("workers", justify="right", no_wrap=True)
    if threads is not None:
        table.add_column("threads\n/replica", justify="right", no_wrap=True)
    for name in ("median", "speedup", "efficiency", "95% CI"):
        table.add_column(name, justify="right", no_wrap=True)
    warnings: list[str] = []
    for rest, points in groups:
        # no 1-worker run of this configuration: nothing to measure an efficiency against (its own
        # smallest count would read 100%, review 2026-12-02 #10)
        baseline = bool(points) and points[0].baseline_workers == 1
        for p in points:
            ci = "–" if not baseline or any(math.isnan(v) for v in p.efficiency_ci) else \
                f"{p.efficiency_ci[0]:.0%}–{p.efficiency_ci[1]:.0%}"
            row: list[RenderableType] = [*(cell(param_of(rest, name)) for name in swept), str(p.workers)]
            if threads is not None:
                row.append(cell(threads.get((params_key(rest), p.workers), "?")))
            row += [short(p.throughput.median, unit), _ratio(p.speedup) if baseline else "–",
                    percent(p.efficiency) if baseline else "–", ci]
            table.add_row(*row)
        if not baseline and points:
            where = label(rest, swept) if swept else "the experiment"
            others = [label(r, swept) for r, q in groups if q and q[0].baseline_workers == 1 and r != rest]
            warnings.append(f"no 1-worker baseline for {where}: its efficiency is not measured (its smallest count "
                            f"is {points[0].baseline_workers} workers)"
                            + (f"; {others[0]} has one, but is another configuration" if others else "")
                            + "; run it at 1 worker too")
            continue
        warnings += quality.scaling_warnings(points, label(rest, swept) if swept else "")
    if threads is not None and len({t for t in threads.values() if t != "?"}) > 1:
        warnings.append("the threads per replica differ between worker counts: the runs are not like-for-like "
                        "(pass the thread count explicitly, e.g. the CNN's --threads)")
    table.above = [line for line in (fixed_line(fixed),) if line is not None]
    notes = [] if threads is not None else [cell(
        "threads per replica: not recorded (no threads parameter, no 'threads=N' in the rank-0 log); "
        "pass them explicitly to compare like for like", style="dim")]
    return Group(table, *notes, *(cell("warning: " + w, style="yellow") for w in warnings))


def overhead_table(rows: Sequence[tuple[dict[str, object], Overhead]], metric: str, unit: str = "") -> RenderableType:
    """The platform's overhead over bare runs per matched trial."""
    fixed, swept = params_split([params for params, _ in rows])
    table = new_table(f"platform overhead on {metric}{f' ({unit})' if unit else ''}")
    for name in swept:
        table.add_column(safe(name), overflow="fold", min_width=len(name))
    for name in ("bare median", "platform median", "overhead"):
        table.add_column(name, justify="right", no_wrap=True)
    for params, o in rows:
        table.add_row(*(cell(param_of(params, p)) for p in swept), short(o.bare.median, unit),
                      short(o.platform.median, unit), o.describe().removeprefix("overhead "))
    table.above = [line for line in (fixed_line(fixed),) if line is not None]
    return table
