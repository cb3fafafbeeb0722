"""A series' history as terminal tables, JSON and CSV, and as a Plotly figure (report and dashboard)."""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Sequence

from ..analyse.history import Change, TrialHistory
from ..numerics.stats import _json_number


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
    found: dict = {"params": h.params, "metric": h.metric, "goal": h.goal, "threshold": h.threshold}
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
            writer.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in row])
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


def history_tables(histories: Sequence[TrialHistory], series: str, last: int = 0, trend: int = 40) -> list:
    """Rich renderables: one row per trial (its latest median, a sparkline of its last ``trend`` medians,
    its changes), every change with what surrounds it, and with ``last`` the last points of each trial."""
    from rich.table import Table
    from rich.text import Text

    metric = histories[0].metric if histories else ""
    summary = Table(title=f"{series} · {metric} ({histories[0].goal if histories else ''})", title_justify="left")
    for name in ("trial", "points", "latest", "median", "95% CI", f"last {trend} medians", "changes"):
        summary.add_column(name, justify="right" if name in ("points", "median", "95% CI") else "left")
    for h in histories:
        p = h.points[-1]
        marks = " ".join(_mark(c) for c in h.changes[-3:]) + (" …" if len(h.changes) > 3 else "")
        summary.add_row(params_text(h.params), str(len(h.points)), p.experiment.id, _num(p.summary.median),
                        _ci(p.summary.ci_low, p.summary.ci_high),
                        sparkline([q.summary.median for q in h.points[-trend:]]), marks or "none")
    out: list = [summary]
    for h in histories:
        for change in h.changes:
            style = "green" if change.point.comparison.verdict == "improved" or change.point.accepted else "bold red"
            out.append(Text(f"  {params_text(h.params)} · {change.after.id}: {describe(change)}", style=style))
            out.extend(Text(f"    environment: {line}", style="yellow") for line in change.environment)
    if last:
        out.extend(_points_table(h, series, last) for h in histories)
    return out


def _mark(change: Change) -> str:
    if change.point.accepted:
        return f"✓{percent(change.point.comparison.ratio - 1)}@{change.after.id}"
    arrow = "▲" if change.point.comparison.verdict == "improved" else "▼"
    return f"{arrow}{percent(change.point.comparison.ratio - 1)}@{change.after.id}"


def _points_table(h: TrialHistory, series: str, last: int):
    from rich.table import Table

    at = {c.point.index: c for c in h.changes}
    table = Table(title=f"{series} · {h.metric} · {params_text(h.params)}", title_justify="left")
    for name in ("experiment", "created", "labels", "n", "median", "95% CI", "change"):
        table.add_column(name, justify="right" if name in ("n", "median", "95% CI") else "left")
    start = max(0, len(h.points) - last)
    if start:
        table.add_row(f"… {start} earlier", "", "", "", "", "", "")
    for i in range(start, len(h.points)):
        p, change = h.points[i], at.get(i)
        table.add_row(p.experiment.id, time.strftime("%Y-%m-%d %H:%M", time.localtime(p.experiment.created_at)),
                      " ".join(f"{k}={v}" for k, v in p.experiment.labels.items()), str(p.summary.n),
                      _num(p.summary.median), _ci(p.summary.ci_low, p.summary.ci_high), _mark(change) if change else "")
    return table


def _num(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.4g}"


def _ci(low: float, high: float) -> str:
    return "–" if math.isnan(low) else f"{low:.4g} … {high:.4g}"


#: Trials drawn at first in a history plot (those with a change first); the others are a click on their
#: legend entry away. Twenty trials of 500 points each drawn at once took 1.3 s to plot and were unreadable.
SHOWN_TRIALS = 6

#: A trial's points get markers up to this many; a longer series is drawn as a line (hover and click
#: still find each point). Markers are one SVG element each: 6 trials × 500 points with markers took
#: 560 ms to draw in Chromium, as lines 140 ms (``bench/history_scale.py``).
MARKED_POINTS = 100


def history_figure(histories: Sequence[TrialHistory], title: str = "") -> dict:
    """A Plotly figure (as a dict): per trial, medians with CI bands, change points marked and annotated."""
    traces, shapes, annotations = [], [], []
    changed = [n for n, h in enumerate(histories) if h.changes]
    shown = set((changed + [n for n in range(len(histories)) if n not in changed])[:max(SHOWN_TRIALS, len(changed))])
    for n, h in enumerate(histories):
        x = [time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p.experiment.created_at)) for p in h.points]
        name = params_text(h.params)
        lows = [_json_number(p.summary.ci_low) for p in h.points]
        highs = [_json_number(p.summary.ci_high) for p in h.points]
        group, visible = f"t{n}", True if n in shown else "legendonly"
        traces.append({"type": "scatter", "x": x + x[::-1], "y": highs + lows[::-1], "fill": "toself",
                       "line": {"width": 0}, "opacity": 0.2, "hoverinfo": "skip", "showlegend": False,
                       "legendgroup": group, "name": name + " CI", "visible": visible})
        mode = "lines+markers" if len(h.points) <= MARKED_POINTS else "lines"
        traces.append({"type": "scatter", "mode": mode, "x": x, "name": name, "legendgroup": group,
                       "visible": visible,
                       "y": [_json_number(p.summary.median) for p in h.points],
                       "customdata": [p.experiment.id for p in h.points],
                       "text": [" ".join(f"{k}={v}" for k, v in p.experiment.labels.items()) for p in h.points],
                       "hovertemplate": "%{customdata}<br>%{y:.4g}<br>%{text}<extra>" + name + "</extra>"})
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
    metric = histories[0].metric if histories else ""
    layout = {"title": {"text": title}, "xaxis": {"title": {"text": "experiment (time)"}},
              "yaxis": {"title": {"text": metric}}, "shapes": shapes, "annotations": annotations,
              "hovermode": "closest", "margin": {"t": 60}}
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
