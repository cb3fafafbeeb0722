"""Where the time goes, in the report: a stacked bar of each trial's phase medians, and runs drawn as
timelines (one lane per replica, phases coloured as everywhere: ``kubebench.timeline.COLOURS``).
Pure: records and timelines in, figures and HTML out."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..analyse.startup import CHAIN_METRICS, TrialPhases, startup
from ..store.records import RunRecord
from ..timeline import COLOURS, Boundary, lanes
from .startup import phase_name, seconds
from .tables import label, params_split

#: Runs drawn as timelines in a report: the first repeat of each trial, up to this many.
TIMELINES_SHOWN = 6


def phase_bars(trials: Sequence[TrialPhases], title: str) -> Any:
    """One stacked bar per trial: the median of each phase of its end-to-end time."""
    import plotly.graph_objects as go

    _, swept = params_split([t.params for t in trials])
    names = [label(t.params, swept) or "all" for t in trials]
    figure = go.Figure()
    for metric in CHAIN_METRICS:
        values = [(p.median if (p := t.get(metric)) is not None else 0.0) for t in trials]
        if any(values):
            figure.add_trace(go.Bar(x=names, y=values, name=phase_name(metric), marker_color=COLOURS[metric],
                                    hovertemplate=f"{phase_name(metric)}: %{{y:.3f}} s<extra>%{{x}}</extra>"))
    figure.update_layout(title=title, barmode="stack", yaxis_title="seconds (median over repeats)",
                         legend_traceorder="normal")
    return figure


def run_timeline(timeline: Sequence[Boundary], title: str) -> Any | None:
    """One run as lanes of phases (the run's own, then each replica's); None without a timeline."""
    import plotly.graph_objects as go

    found = lanes(timeline)
    if not found:
        return None
    origin = min(b.t for b in timeline if b.name == "submitted")
    figure, shown = go.Figure(), set()
    for lane in reversed(found):  # the run's lane at the top
        for segment in lane.segments:
            figure.add_trace(go.Bar(
                y=[lane.name], x=[segment.end - segment.start], base=[segment.start - origin], orientation="h",
                name=phase_name(segment.metric), marker_color=COLOURS.get(segment.metric, "#333333"),
                legendgroup=segment.metric, showlegend=segment.metric not in shown,
                hovertemplate=f"{lane.name}: {phase_name(segment.metric)} {seconds(segment.end - segment.start)}"
                              "<extra></extra>"))
            shown.add(segment.metric)
    figure.update_layout(title=title, barmode="overlay", xaxis_title="seconds since submit",
                         height=260 + 28 * len(found), legend={"orientation": "h", "y": -0.35})
    return figure


def startup_parts(runs: Sequence[RunRecord], timelines: Mapping[str, Sequence[Boundary]]) -> tuple[list[str], list[Any]]:
    """The report's tables and figures of an experiment's phases (none when its runs have no timeline)."""
    trials = startup(runs)
    if not trials:
        return [], []
    _, swept = params_split([t.params for t in trials])
    shown = [m for m in CHAIN_METRICS if any(t.get(m) for t in trials)]
    header = "".join(f"<th>{html.escape(phase_name(m))}</th>" for m in ["trial", *shown, "end_to_end_seconds"])
    rows = []
    for trial in trials:
        cells = [label(trial.params, swept) or "all"] + [seconds(p.median) if (p := trial.get(m)) else "–"
                                                         for m in [*shown, "end_to_end_seconds"]]
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    tables = ["<h3>Where the time goes (median of each phase, seconds)</h3>"
              f"<table><thead><tr>{header}</tr></thead>"
              f"<tbody>{''.join(rows)}</tbody></table>"]
    figures = [phase_bars(trials, "phases of each trial (median)")]
    first: dict[str, RunRecord] = {}
    for run in sorted(runs, key=lambda r: r.repeat):
        if run.run_id in timelines and not run.warmup:
            first.setdefault(run.trial_id, run)
    for run in list(first.values())[:TIMELINES_SHOWN]:
        figure = run_timeline(timelines[run.run_id], f"timeline of run {run.run_id} "
                                                     f"({label(run.params, swept) or 'all'}, repeat {run.repeat})")
        if figure is not None:
            figures.append(figure)
    return tables, figures
