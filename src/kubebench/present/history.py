"""A series' history as terminal tables, JSON and CSV, and as a Plotly figure (report and dashboard)."""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..analyse.history import Change, TrialHistory
from ..numerics.stats import _json_number
from ..store.series_records import SeriesExperiment
from .numbers import axis_scale, axis_title, header_unit, metric_unit, short, short_range, si, si_range
from .text import cell, csv_cell

if TYPE_CHECKING:
    from rich.console import RenderableType


def params_text(params: dict[str, object]) -> str:
    """``bs=32, lr=0.1``, or ``–`` for a trial without parameters."""
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "–"


def percent(value: float) -> str:
    """A signed percentage with one decimal (``−4.8%``), ``–`` when undefined."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:+.1f}%".replace("-", "−")


def change_ci(change: Change) -> tuple[float, float]:
    """The CI of the relative change of the value (ratio − 1)."""
    low, high = change.point.comparison.ratio_ci
    return low - 1, high - 1


def describe(change: Change) -> str:
    """``between commit abc123 → def456: −4.8% [−6.1, −3.5] regressed (p 0.0002)``."""
    c = change.point.comparison
    low, high = change_ci(change)
    interval = "" if math.isnan(low) else f" [{percent(low).rstrip('%')}, {percent(high).rstrip('%')}]"
    status = "accepted: " + (change.point.note or "intended") if change.point.accepted else c.verdict
    p = "" if math.isnan(c.p_value) else f" (p {c.p_value:.2g})"
    return f"between {change.between()}: {percent(c.ratio - 1)}{interval} {status}{p}"


def history_dict(h: TrialHistory, points: bool = True) -> dict:
    """The JSON form of one trial's history: points (unless ``points=False``) and changes."""
    found: dict = {"params": h.params, "metric": h.metric, "unit": unit_of(h), "goal": h.goal, "threshold": h.threshold}
    if points:
        found["points"] = [{"experiment": p.experiment.id, "created_at": p.experiment.created_at,
                            "labels": p.experiment.labels, **{k: _json_number(v) for k, v in vars(p.summary).items()}}
                           for p in h.points]
    found["changes"] = [change_dict(c) for c in h.changes]
    return found


def change_dict(change: Change) -> dict:
    """The JSON form of one change point."""
    c = change.point.comparison
    low, high = change_ci(change)
    return {"index": change.point.index, "experiment": change.after.id, "created_at": change.after.created_at,
            "before": change.before.id,
            "labels_before": change.before.labels, "labels_after": change.after.labels, "between": change.between(),
            "change": _json_number(c.ratio - 1), "change_ci": [_json_number(low), _json_number(high)],
            "p_value": _json_number(c.p_value), "verdict": c.verdict, "accepted": change.point.accepted,
            "note": change.point.note, "environment": list(change.environment), "text": describe(change)}


CSV_COLUMNS = ("params", "metric", "experiment", "created_at", "labels", "n", "median", "ci_low", "ci_high",
               "change", "change_low", "change_high", "verdict", "p_value", "accepted")


def history_csv(histories: Sequence[TrialHistory]) -> str:
    """One row per point; the point where a change starts carries the change."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for h in histories:
        at = {c.point.index: c for c in h.changes}
        for i, p in enumerate(h.points):
            s, change = p.summary, at.get(i)
            row = [params_text(h.params), h.metric, p.experiment.id, f"{p.experiment.created_at:.3f}",
                   ";".join(f"{k}={v}" for k, v in p.experiment.labels.items()), s.n, s.median, s.ci_low, s.ci_high]
            if change is not None:
                c = change.point.comparison
                row += [c.ratio - 1, *change_ci(change), c.verdict, c.p_value, change.point.accepted]
            else:
                row += [""] * 6
            writer.writerow(["" if isinstance(v, float) and math.isnan(v) else csv_cell(v) for v in row])
    return out.getvalue()


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """The values as a line of block characters (lowest ▁, highest █); nan as a space."""
    known = [v for v in values if math.isfinite(v)]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = (high - low) or 1.0
    return "".join(_BARS[min(7, int((v - low) / span * 8))] if math.isfinite(v) else " " for v in values)


def unit_of(h: TrialHistory) -> str:
    """The unit a trial's values are shown in: the declared one, else one read from the metric's name."""
    return metric_unit(h.metric, h.unit)


def history_tables(histories: Sequence[TrialHistory], series: str, last: int = 0, trend: int = 40) -> list:
    """Rich renderables: one row per trial (its latest median, a sparkline of its last ``trend`` medians,
    its changes), every change with what surrounds it, and with ``last`` the last points of each trial.

    Laid out as the results table is: the trial's parameters are never folded or dropped, numbers
    carry SI prefixes and the metric's unit (``3.40 M ops/s``); on a narrow terminal each row is a
    block of "name  value" lines."""
    from .tables import fitted_blocks, new_table

    metric = histories[0].metric if histories else ""
    unit = unit_of(histories[0]) if histories else ""
    summary = new_table(f"{series} · {metric} ({histories[0].goal if histories else ''})")
    for name in ("trial", "points", "latest", f"median {header_unit(unit)}".strip(), "95% CI",
                 f"last {trend} medians", "changes"):
        summary.add_column(name, justify="right" if name in ("points", "95% CI") or name.startswith("median") else "left",
                           no_wrap=name != "changes", overflow="fold")
    rows: list[tuple[RenderableType, Sequence[tuple[str, RenderableType]]]] = []
    for h in histories:
        p = h.points[-1]
        marks = " ".join(_mark(c) for c in h.changes[-3:]) + (" …" if len(h.changes) > 3 else "")
        cells = [str(len(h.points)), p.experiment.id, short(p.summary.median, unit),
                 short_range(p.summary.ci_low, p.summary.ci_high, unit),
                 sparkline([q.summary.median for q in h.points[-trend:]]), marks or "none"]
        summary.add_row(cell(params_text(h.params)), *cells)
        rows.append((cell(params_text(h.params), style="bold"),
                     [("points", cells[0]), ("latest", cells[1]), ("median", si(p.summary.median, unit)),
                      ("95% CI", si_range(p.summary.ci_low, p.summary.ci_high, unit)),
                      (f"last {min(trend, len(h.points))} medians", cells[4]), ("changes", cell(cells[5]))]))
    out: list = [fitted_blocks(summary, rows)]
    for h in histories:
        for change in h.changes:
            style = "green" if change.point.comparison.verdict == "improved" or change.point.accepted else "bold red"
            out.append(cell(f"  {params_text(h.params)} · {change.after.id}: {describe(change)}", style=style))
            out.extend(cell(f"    environment: {line}", style="yellow") for line in change.environment)
    if last:
        out.extend(_points_table(h, series, last) for h in histories)
    return out


def _mark(change: Change) -> str:
    if change.point.accepted:
        return f"✓{percent(change.point.comparison.ratio - 1)}@{change.after.id}"
    arrow = "▲" if change.point.comparison.verdict == "improved" else "▼"
    return f"{arrow}{percent(change.point.comparison.ratio - 1)}@{change.after.id}"


def _points_table(h: TrialHistory, series: str, last: int):
    from .tables import fitted_blocks, new_table

    at = {c.point.index: c for c in h.changes}
    unit = unit_of(h)
    table = new_table(f"{series} · {h.metric} · {params_text(h.params)}")
    for name in ("experiment", "created", "labels", "n", f"median {header_unit(unit)}".strip(), "95% CI", "change"):
        table.add_column(name, justify="right" if name in ("n", "95% CI") or name.startswith("median") else "left",
                         no_wrap=name != "labels", overflow="fold")
    start = max(0, len(h.points) - last)
    rows: list[tuple[RenderableType, Sequence[tuple[str, RenderableType]]]] = []
    if start:
        table.add_row(f"… {start} earlier", "", "", "", "", "", "")
        rows.append((cell(f"… {start} earlier", style="dim"), []))
    for i in range(start, len(h.points)):
        p, change = h.points[i], at.get(i)
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(p.experiment.created_at))
        labels = cell(" ".join(f"{k}={v}" for k, v in p.experiment.labels.items()))
        mark = _mark(change) if change else ""
        table.add_row(p.experiment.id, created, labels, str(p.summary.n), short(p.summary.median, unit),
                      short_range(p.summary.ci_low, p.summary.ci_high, unit), mark)
        rows.append((cell(f"{p.experiment.id}  {created}", style="bold"),
                     [("labels", labels), ("n", str(p.summary.n)), ("median", si(p.summary.median, unit)),
                      ("95% CI", si_range(p.summary.ci_low, p.summary.ci_high, unit)), *([("change", mark)] if mark else [])]))
    return fitted_blocks(table, rows)


#: Trials drawn at first in a history plot (those with a change first); the others are a click on their
#: legend entry away. Twenty trials of 500 points each drawn at once took 1.3 s to plot and were unreadable.
SHOWN_TRIALS = 6

#: A trial's points get markers up to this many; a longer series is drawn as a line (hover and click
#: still find each point). Markers are one SVG element each: 6 trials × 500 points with markers took
#: 560 ms to draw in Chromium, as lines 140 ms (``bench/history_scale.py``).
MARKED_POINTS = 100


#: Label keys that name an experiment on a history axis, before any other label that differs.
AXIS_LABELS = ("version", "commit", "tag", "image")
#: Experiments named on a history axis at most (evenly spread); hover and the table name every one.
AXIS_TICKS = 12


def experiment_names(experiments: Sequence[SeriesExperiment]) -> tuple[str, list[str]]:
    """What tells the experiments of a series apart on an axis, as asv names commits, and what that is:
    the value of the first label that differs between them (``version`` and ``commit`` first), else
    their creation times as precisely as needed to differ (days, then minutes, then seconds), else ids."""
    keys = list(dict.fromkeys(k for e in experiments for k in e.labels))
    differing = [k for k in keys if len({e.labels.get(k) for e in experiments}) > 1]
    if differing:
        key = next((k for k in AXIS_LABELS if k in differing), differing[0])
        return key, [e.labels.get(key, "–") for e in experiments]
    for pattern in ("%Y-%m-%d", "%m-%d %H:%M", "%H:%M:%S"):
        names = [time.strftime(pattern, time.localtime(e.created_at)) for e in experiments]
        if len(set(names)) == len(names):
            return "created", names
    return "id", [e.id for e in experiments]


def history_figure(histories: Sequence[TrialHistory], title: str = "") -> dict:
    """A Plotly figure (as a dict): per trial, medians with CI bands, change points marked and annotated.

    The x axis is the series' experiments, evenly spaced in time order and named by
    :func:`experiment_names` (a dozen ticks at most); the y axis carries the metric's unit, in SI."""
    traces: list[dict] = []
    shapes: list[dict] = []
    annotations: list[dict] = []
    marks: list[dict] = []
    changed = [n for n, h in enumerate(histories) if h.changes]
    shown = set((changed + [n for n in range(len(histories)) if n not in changed])[:max(SHOWN_TRIALS, len(changed))])
    experiments = sorted({p.experiment.id: p.experiment for h in histories for p in h.points}.values(),
                         key=lambda e: (e.created_at, e.id))
    position = {e.id: i for i, e in enumerate(experiments)}
    named_by, names = experiment_names(experiments)
    unit = unit_of(histories[0]) if histories else ""
    scale = axis_scale([p.summary.median for h in histories for p in h.points], unit)
    for n, h in enumerate(histories):
        x = [position[p.experiment.id] for p in h.points]
        name = params_text(h.params)
        lows = [_json_number(p.summary.ci_low * scale.factor) for p in h.points]
        highs = [_json_number(p.summary.ci_high * scale.factor) for p in h.points]
        group, visible = f"t{n}", True if n in shown else "legendonly"
        traces.append({"type": "scatter", "x": x + x[::-1], "y": highs + lows[::-1], "fill": "toself",
                       "line": {"width": 0}, "opacity": 0.2, "hoverinfo": "skip", "showlegend": False,
                       "legendgroup": group, "name": name + " CI", "visible": visible})
        mode = "lines+markers" if len(h.points) <= MARKED_POINTS else "lines"
        traces.append({"type": "scatter", "mode": mode, "x": x, "name": name, "legendgroup": group,
                       "visible": visible,
                       "y": [_json_number(p.summary.median * scale.factor) for p in h.points],
                       "customdata": [p.experiment.id for p in h.points],
                       "text": [" ".join(f"{k}={v}" for k, v in p.experiment.labels.items()) for p in h.points],
                       "hovertext": [f"{names[position[p.experiment.id]]}: {si(p.summary.median, unit)}" for p in h.points],
                       "hovertemplate": "%{customdata}<br>%{hovertext}<br>%{text}<extra>" + name + "</extra>"})
        for change in h.changes:
            at = x[change.point.index]
            color = "#2a9d8f" if change.point.accepted else (
                "#2e7d32" if change.point.comparison.verdict == "improved" else "#c62828")
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": at, "x1": at, "y0": 0, "y1": 1,
                           "line": {"color": color, "dash": "dot" if change.point.accepted else "dash", "width": 1}})
            annotations.append({"x": at, "yref": "paper", "y": 1, "yanchor": "bottom", "showarrow": False, "yshift": 13 * n,
                                "font": {"color": color, "size": 11},
                                "text": ("accepted " if change.point.accepted else "") + percent(change.point.comparison.ratio - 1),
                                "hovertext": describe(change)})
            marks.append({"x": at, "experiment": change.after.id, "before": change.before.id, "trial": name,
                          "accepted": change.point.accepted, "text": describe(change)})
    metric = histories[0].metric if histories else ""
    step = max(1, -(-len(experiments) // AXIS_TICKS))
    ticks = list(range(0, len(experiments), step))
    if experiments and ticks[-1] != len(experiments) - 1:
        ticks.append(len(experiments) - 1)
    layout = {"title": {"text": title},
              "xaxis": {"title": {"text": f"experiment ({named_by})"}, "tickmode": "array", "tickvals": ticks,
                        "ticktext": [names[i] for i in ticks]},
              "yaxis": {"title": {"text": axis_title(metric, scale.unit)}, "tickformat": scale.tickformat},
              "shapes": shapes, "annotations": annotations, "hovermode": "closest", "margin": {"t": 60},
              # for the dashboard's chart: every experiment's name on the axis, and each change's ends
              "meta": {"names": names, "experiments": [e.id for e in experiments], "changes": marks,
                       "unit": scale.unit, "factor": scale.factor}}
    return {"data": traces, "layout": layout}


def history_section(histories: Sequence[TrialHistory], series: str):
    """A section of ``kubebench report``: the series' changes as a table, and its history plot."""
    import html

    from .report import Section

    section = Section(f"History of series {series}: {histories[0].metric if histories else ''}")
    rows = [(params_text(h.params), c.after.id, describe(c)) for h in histories for c in h.changes]
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in rows)
    points = sum(len(h.points) for h in histories)
    section.tables.append(
        f"<p>{points} points of {len(histories)} trial(s); {len(rows) or 'no'} change point(s).</p>"
        + (f"<table><thead><tr><th>trial</th><th>at</th><th>change</th></tr></thead><tbody>{body}</tbody></table>"
           if rows else ""))
    section.figures.append(history_figure(histories, f"{series}: {histories[0].metric if histories else ''}"))
    return section
