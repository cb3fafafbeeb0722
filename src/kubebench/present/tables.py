"""Rich tables for the terminal: the plan, experiments, and per-trial results.

Made to be read at 80 columns: parameters fixed across the trials go on one line above a table
instead of a column each, the metrics the spec declares come first with their units, numbers are
SI-formatted (``8.94 M images/s``), ids are never cut, and every string that came from a spec, a
workload or a store passes through :func:`kubebench.present.text.cell` (no terminal escapes).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich import box
from rich.console import Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..analyse import quality
from ..numerics.stats import Summary, summarize
from ..rules import is_telemetry, metric_order
from ..store.records import FAILED_STATES, ExperimentRecord, RunRecord, TrialResults
from ..timeline import PHASE_METRICS
from .costs import HEADINGS, cost_metrics, usd
from .numbers import metric_unit, percent, plural, short, si
from .text import cell, safe

if TYPE_CHECKING:  # the spec's models cost a tenth of a second to import; results tables need none
    from ..plan.plan import Plan


class TitledTable(Table):
    """A table whose title and caption are lines of their own, never wrapped to the table's width;
    ``above`` holds lines printed between the title and the table (the fixed parameters)."""

    above: list[RenderableType]

    def __rich_console__(self, console, options):
        title, caption, self.title, self.caption = self.title, self.caption, None, None
        try:
            if title:
                yield Text(str(title), style="bold")
            yield from getattr(self, "above", [])
            yield from super().__rich_console__(console, options)
            if caption:
                yield Text(str(caption), style="dim")
        finally:
            self.title, self.caption = title, caption


def new_table(title: str | None = None, caption: str | None = None) -> TitledTable:
    """A table drawn to save width: no outer edge, a rule under the header, two spaces between columns."""
    return TitledTable(title=None if title is None else safe(title), caption=caption, box=box.SIMPLE_HEAD,
                       show_edge=False, pad_edge=False, collapse_padding=True)


def add_id_column(table: Table, name: str, ids: Sequence[str]) -> None:
    """A column of ids wide enough for the longest: an id is what the next command needs, never cut."""
    table.add_column(name, no_wrap=True, min_width=max([len(name), *(len(i) for i in ids)]))


def params_split(points: Sequence[Mapping[str, object]]) -> tuple[dict[str, object], list[str]]:
    """Parameters with one value in every point (name → value), and the names of those that vary."""
    names = list(dict.fromkeys(k for p in points for k in p))
    fixed: dict[str, object] = {}
    swept = []
    for name in names:
        values = {repr(p.get(name)) for p in points}
        if len(values) == 1 and all(name in p for p in points):
            fixed[name] = points[0][name]
        else:
            swept.append(name)
    return fixed, swept


def fixed_line(fixed: Mapping[str, object]) -> Text | None:
    """``fixed: model=small, threads=1``: what every trial shares, on one line."""
    if not fixed:
        return None
    return cell("fixed: " + ", ".join(f"{k}={_param(v)}" for k, v in fixed.items()), style="dim")


def label(params: Mapping[str, object], only: Sequence[str] | None = None) -> str:
    """``k=v, …`` of a parameter point (of the names in ``only`` when given); made safe."""
    shown = [(k, v) for k, v in params.items() if only is None or k in only]
    return safe(", ".join(f"{k}={_param(v)}" for k, v in shown) or "all")


def plan_table(plan: Plan) -> RenderableType:
    """What ``--dry-run`` shows: every trial with its parameters and number of runs."""
    fixed, swept = params_split([t.params for t in plan.trials])
    table = new_table(f"plan of {plan.experiment_id}: {plural(len(plan.trials), 'trial')}, {plural(len(plan.runs), 'run')}")
    add_id_column(table, "trial", [t.id for t in plan.trials])
    for name in swept:
        table.add_column(safe(name), overflow="fold", min_width=len(name))
    table.add_column("runs", justify="right")
    per_trial = {t.id: sum(1 for r in plan.runs if r.trial.id == t.id) for t in plan.trials}
    for trial in plan.trials:
        table.add_row(trial.id, *(cell(param_of(trial.params, p)) for p in swept), str(per_trial[trial.id]))
    return _with_fixed(fixed, table)


def experiments_table(experiments: Sequence[ExperimentRecord], primary: Mapping[str, str] | None = None
                      ) -> RenderableType:
    """One line per experiment: its id, name (where the id does not start with it), state, runs
    (ok/all, failed and cancelled apart), primary metric (``primary``: id → its text), labels and when
    it was made. Ids are never folded or cut; on a narrow terminal the labels are cut first, then the
    name and the primary metric give way, so that every experiment stays one line."""
    return _ExperimentsTable(experiments, primary or {})


class _ExperimentsTable:
    """:func:`experiments_table`, laid out for the console's width when printed."""

    def __init__(self, experiments: Sequence[ExperimentRecord], primary: Mapping[str, str]) -> None:
        self.experiments, self.primary = experiments, primary

    def __rich_console__(self, console, options):
        def width(table: Table) -> int:
            return Measurement.get(console, options.update_width(100_000), table).maximum

        optional = [c for c in ("name", "primary") if self._has(c)]
        if width(self._table(optional, None if self._has("labels") else 0)) <= options.max_width:
            yield self._table(optional, None if self._has("labels") else 0)
            return
        for dropped in ([], optional[:1], optional):  # the name first, then the primary metric
            kept = [c for c in optional if c not in dropped]
            room = options.max_width - width(self._table(kept, 0)) - 2  # what the labels column may take
            if room >= (16 if self._has("labels") else 0):
                break
        yield self._table(kept, room if room >= 8 and self._has("labels") else 0)

    def _has(self, column: str) -> bool:
        if column == "name":
            return any(not e.id.startswith(e.name) for e in self.experiments)
        if column == "primary":
            return bool(self.primary)
        return any(e.labels for e in self.experiments)

    def _table(self, optional: Sequence[str], labels: int | None) -> Table:
        """The table with the ``optional`` columns, and a labels column ``labels`` wide (None: unlimited, 0: none)."""
        from ..store.records import RAN_AND_FAILED
        from .listing import labels_text

        table = new_table("experiments")
        add_id_column(table, "id", [e.id for e in self.experiments])
        cancelled = any(e.runs_by_status.get("cancelled") for e in self.experiments)
        columns = [*(["name"] if "name" in optional else []), "state", "runs ok", "failed",
                   *(["cancelled"] if cancelled else []), *(["primary"] if "primary" in optional else []),
                   *(["labels"] if labels != 0 else []), "created"]
        for name in columns:
            table.add_column(name, justify="right" if name in ("runs ok", "failed", "cancelled", "primary") else "left",
                             no_wrap=True, overflow="ellipsis", max_width=labels if name == "labels" else None)
        for e in self.experiments:
            counts = e.runs_by_status
            failed = sum(counts.get(s, 0) for s in RAN_AND_FAILED)
            values: dict[str, RenderableType] = {"name": cell("" if e.id.startswith(e.name) else e.name), "state": e.current_state,
                      "runs ok": f"{counts.get('succeeded', 0)}/{sum(counts.values())}", "failed": str(failed or ""),
                      "cancelled": str(counts.get("cancelled", 0) or ""), "primary": cell(self.primary.get(e.id, "–")),
                      "labels": cell(labels_text(e.labels)), "created": _when(e.created_at)}
            table.add_row(e.id, *(values[name] for name in columns), style="red" if failed else None)
        return table


@dataclass(frozen=True)
class MetricChoice:
    """Which metrics a results table shows, in order (the first in full), and which it leaves out."""

    shown: list[str]
    units: dict[str, str]
    hidden: list[str]
    telemetry_hidden: int
    #: ``cost_usd`` and the price per item, shown in columns of their own (when not among ``shown``)
    cost: list[str] = field(default_factory=list)
    #: the run's phases not shown (``kubebench startup`` shows them)
    phases_hidden: int = 0


def choose_metrics(found: Sequence[str], declared: Sequence[Mapping[str, object]], primary: str | None,
                   chosen: Sequence[str] = (), telemetry: bool = False) -> MetricChoice:
    """The metrics to show: ``chosen`` when given; else the declared ones (primary first), or the
    workload's own when none are declared; telemetry only when asked for; the cost per run and per
    item whenever the runs carry them."""
    names = [str(m["name"]) for m in declared]
    found = metric_order(found)  # after the declared ones: requests, throughputs, latencies …, self-checks last
    if chosen:
        shown = list(dict.fromkeys(chosen))
    else:
        shown = names or [m for m in found if not is_telemetry(m) and m not in PHASE_METRICS]
        if primary in shown:
            shown = [primary, *(m for m in shown if m != primary)]
        if telemetry:
            shown += [m for m in found if is_telemetry(m) and m not in shown]
    cost = [m for m in cost_metrics(found) if m not in shown]
    rest = [m for m in found if m not in shown and m not in cost]
    units = {str(m["name"]): str(m.get("unit") or "") for m in declared}
    phases = [m for m in rest if m in PHASE_METRICS]
    rest = [m for m in rest if m not in PHASE_METRICS]
    return MetricChoice(shown, {m: metric_unit(m, units.get(m, "")) for m in shown},
                        [m for m in rest if not is_telemetry(m)], sum(1 for m in rest if is_telemetry(m)), cost,
                        len(phases))


class Fitted:
    """``wide`` where the console is wide enough for it unsqueezed, else ``narrow`` (the same content
    as one block per row): at 80 columns no column is dropped or cut, and no id is folded."""

    def __init__(self, wide: TitledTable, narrow: RenderableType) -> None:
        self.wide, self.narrow = wide, narrow

    def __rich_console__(self, console, options):
        natural = Measurement.get(console, options.update_width(100_000), self.wide).maximum
        yield self.wide if natural <= options.max_width else self.narrow


def results_table(trials: Sequence[TrialResults], choice: MetricChoice, title: str = "results") -> RenderableType:
    """One row per trial: swept parameters, run counts (when they differ), the first metric's median
    with the 95% CI of its mean (± relative half-width) and CV, the other metrics' medians, and the
    median cost per run and per item when the runs have one; the fixed parameters on a line above.

    On a terminal too narrow for that table, each trial is a block of "metric: value" lines under
    its swept parameters (as vLLM's summary reads at 80 columns)."""
    fixed, swept = params_split([t.params for t in trials])
    counts = {(t.runs_by_status.get("succeeded", 0), _failed(t)) for t in trials}
    same_counts = len(counts) == 1 and next(iter(counts))[1] == 0
    if same_counts and trials:
        title += f": {plural(len(trials), 'trial')} × {plural(next(iter(counts))[0], 'run')}"
    table = new_table(title, caption=_hidden_caption(choice))
    for name in swept:
        table.add_column(safe(name), no_wrap=True)
    if not same_counts:
        table.add_column("ok", justify="right", no_wrap=True)
        table.add_column("failed", justify="right", no_wrap=True)
    for index, name in enumerate(choice.shown):
        unit = choice.units[name]
        table.add_column(safe(f"{name}\nmedian{' ' + unit if unit else ''}"), justify="right", no_wrap=True,
                         min_width=min(len(name), 16))
        if index == 0:
            table.add_column("95% CI\nof mean", justify="right", no_wrap=True)
            table.add_column("cv", justify="right", no_wrap=True)
    for name in choice.cost:
        table.add_column(f"{HEADINGS[name]}\nmedian", justify="right", no_wrap=True)
    blocks: list[RenderableType] = []
    for trial in trials:
        ok, failed = trial.runs_by_status.get("succeeded", 0), _failed(trial)
        summaries = {name: summarize([values[name] for values in trial.metrics if name in values])
                     for name in [*choice.shown, *choice.cost]}
        row: list[RenderableType] = [cell(param_of(trial.params, p)) for p in swept]
        if not same_counts:
            row += [str(ok), str(failed)]
        for index, name in enumerate(choice.shown):
            row.append(short(summaries[name].median, choice.units[name]))
            if index == 0:
                row += [ci_relative(summaries[name]), percent(summaries[name].cv)]
        row += [usd(summaries[m].median) for m in choice.cost]
        style = "red" if failed and not ok else None
        table.add_row(*row, style=style)
        blocks.append(_trial_block(trial, swept, choice, summaries, None if same_counts else (ok, failed), style))
    wide = _with_fixed(fixed, table)
    return Fitted(wide, Group(*_title_lines(wide), *blocks, *_caption_lines(wide)))


def fitted_blocks(table: TitledTable, rows: Sequence[tuple[RenderableType, Sequence[tuple[str, RenderableType]]]]
                  ) -> Fitted:
    """``table`` where it fits, else one block per row: its heading, then "name  value" lines."""
    blocks: list[RenderableType] = []
    for heading, pairs in rows:
        grid = Table.grid(padding=(0, 2), pad_edge=False)
        grid.add_column(no_wrap=True)
        grid.add_column(justify="right", no_wrap=True)
        for name, value in pairs:
            grid.add_row(cell("  " + name), value)
        blocks.append(Group(heading, grid))
    return Fitted(table, Group(*_title_lines(table), *blocks, *_caption_lines(table)))


def _title_lines(table: TitledTable) -> list[RenderableType]:
    """What a :class:`TitledTable` prints above its table: the title and the ``above`` lines."""
    return [*([Text(str(table.title), style="bold")] if table.title else []), *getattr(table, "above", [])]


def _caption_lines(table: TitledTable) -> list[RenderableType]:
    return [Text(str(table.caption), style="dim")] if table.caption else []


def _trial_block(trial: TrialResults, swept: Sequence[str], choice: MetricChoice, summaries: Mapping[str, Summary],
                 counts: tuple[int, int] | None, style: str | None) -> RenderableType:
    """One trial as lines of "metric  value" under its swept parameters (the narrow results table)."""
    heading = cell(label(trial.params, swept) if swept else "all", style=style or "bold")
    if counts is not None:
        heading.append(f"  ({counts[0]} ok, {counts[1]} failed)", style="dim")
    grid = Table.grid(padding=(0, 2), pad_edge=False)
    grid.add_column(no_wrap=True)
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(overflow="fold")  # the CI and CV: what wraps on a very narrow terminal
    for index, name in enumerate(choice.shown):
        s = summaries[name]
        extra = f"95% CI ±{ci_relative(s).lstrip('±')} · cv {percent(s.cv)}" if index == 0 else ""
        grid.add_row(cell("  " + name), si(s.median, choice.units[name]), extra)
    for name in choice.cost:
        grid.add_row(cell(f"  {HEADINGS[name]}"), usd(summaries[name].median), "")
    return Group(heading, grid)


def ci_relative(s: Summary) -> str:
    """The 95% CI of the mean as ``±1.2%`` (half its width over the mean); "n too small" when it reaches
    below zero for values that cannot be negative, "–" when there is none (fewer than 2 values)."""
    if quality.ci_crosses_zero(s):
        return "n too small"
    return "–" if s.ci_half_width_rel != s.ci_half_width_rel else f"±{percent(s.ci_half_width_rel)}"


def results_warnings(trials: Sequence[TrialResults], metric: str | None) -> list[str]:
    """Quality warnings about ``metric`` across the trials: runs that disagree (a CV above 10%), CIs
    that say n is too small, and runs whose step time drifted (not in a steady state)."""
    if not metric:
        return []
    _, swept = params_split([t.params for t in trials])
    summaries = {label(t.params, swept): summarize([v[metric] for v in t.metrics if metric in v]) for t in trials}
    low = [name for name, s in summaries.items() if quality.ci_crosses_zero(s)]
    warnings = [f"{metric}: {w}" for w in quality.noise_warnings({k: s.cv for k, s in summaries.items()})
                + quality.zero_crossing_warning(low)]
    drifting = sum(t.drifting for t in trials)
    if drifting:
        succeeded = sum(t.runs_by_status.get("succeeded", 0) for t in trials)
        warnings.append(f"{drifting} of {plural(succeeded, 'run')} drifting: their step time changed within the run "
                        "(not a steady state; `kubebench results ID -f json` has each run's info)")
    return warnings


def ci_text(s: Summary, unit: str = "") -> str:
    """``lo … hi`` of the CI of the mean; "n too small" when it reaches below zero for values that
    cannot be negative (a t-interval of 2 spread runs), "–" when there is none."""
    if quality.ci_crosses_zero(s):
        return "n too small"
    if s.ci_low != s.ci_low or s.ci_high != s.ci_high:
        return "–"
    return f"{short(s.ci_low, unit)} … {short(s.ci_high, unit)}"


def failures_table(runs: Sequence[RunRecord], swept: Sequence[str] | None = None) -> Table | None:
    """Failed runs with their reason, or None when there are none; a run's trial is shown by the
    ``swept`` parameters (default: those that differ between the failed runs). Repeats count from 0,
    as in JSON."""
    failed = [r for r in runs if r.status in FAILED_STATES]
    if not failed:
        return None
    if swept is None:
        _, swept = params_split([r.params for r in failed])
    table = new_table("failed runs")
    add_id_column(table, "run", [r.run_id for r in failed])
    table.add_column("trial", overflow="fold")
    table.add_column("repeat", justify="right")
    table.add_column("status")
    table.add_column("exit", justify="right")
    table.add_column("reason", overflow="fold", ratio=1)
    for r in failed:
        repeat = f"w{r.repeat}" if r.warmup else str(r.repeat)
        exit_code = "" if r.exit_code is None else str(r.exit_code)
        reason = cell(r.reason)
        line = last_line(r.log_tail) if r.status != "cancelled" else ""
        if line:  # where the cause usually is (ModuleNotFoundError: …), beside the exit code
            reason.append_text(cell("\n" + line, style="dim"))
        table.add_row(r.run_id, label(r.params, swept), repeat, r.status, exit_code, reason)
    return table


def last_line(log: str, width: int = 200) -> str:
    """The last line of a log that is not blank, on one line and cut at ``width`` ("" for none)."""
    from .text import safe_line

    line = next((text.strip() for text in reversed(log.splitlines()) if text.strip()), "")
    line = safe_line(line)
    return line if len(line) <= width else line[:width - 1] + "…"


def _with_fixed(fixed: Mapping[str, object], table: TitledTable) -> TitledTable:
    line = fixed_line(fixed)
    table.above = [line] if line is not None else []
    return table


def _hidden_caption(choice: MetricChoice) -> str | None:
    parts = []
    if choice.hidden:
        names = ", ".join(choice.hidden[:4]) + (", …" if len(choice.hidden) > 4 else "")
        parts.append(f"also measured: {safe(names)} (--metric NAME)")
    if choice.telemetry_hidden:
        n = choice.telemetry_hidden
        parts.append(f"{n} telemetry metric{'s' if n > 1 else ''} (--telemetry)")
    if choice.phases_hidden:
        n = choice.phases_hidden
        parts.append(f"{n} phase{'s' if n > 1 else ''} (kubebench startup ID)")
    return "; ".join(parts) or None


def _failed(trial: TrialResults) -> int:
    return sum(trial.runs_by_status.get(state, 0) for state in FAILED_STATES)


def _param(value: object) -> str:
    """A parameter's value as written in YAML terms (None is ``null``)."""
    return "null" if value is None else str(value)


def param_of(params: Mapping[str, object], name: str) -> str:
    """The value of ``name`` in a trial's parameters; blank where the trial has no such parameter."""
    return _param(params[name]) if name in params else ""


def _when(timestamp: float) -> str:
    """``12-02 01:28`` this year, ``2025-12-02`` before: one short column."""
    if time.localtime(timestamp).tm_year == time.localtime().tm_year:
        return time.strftime("%m-%d %H:%M", time.localtime(timestamp))
    return time.strftime("%Y-%m-%d", time.localtime(timestamp))
