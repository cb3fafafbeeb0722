"""Plotly figures of results: metric versus each swept parameter, per-trial distributions,
scaling curve and comparison chart. Pure: records in, figures out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..analyse.experiments import TrialComparison, TrialValues, params_key, trial_values
from ..analyse.quality import ci_crosses_zero
from ..analyse.studies import ScalingPoint
from ..numerics.stats import Summary, summarize
from ..rules import COMPARE_THRESHOLD
from ..store.records import RunRecord
from .numbers import axis_scale, axis_title

#: A legend below the chart, in the figure's bottom margin: never over the plot nor its axis titles.
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "yref": "container", "y": 0, "yanchor": "bottom"}


def label(params: dict[str, object], skip: Sequence[str] = ()) -> str:
    """``k=v, …`` of a parameter point, leaving out ``skip``."""
    return ", ".join(f"{k}={v}" for k, v in params.items() if k not in skip) or "all"


def swept_parameters(trials: Sequence[TrialValues]) -> list[str]:
    """Parameters that take more than one value across trials, in the spec's order."""
    names = list(dict.fromkeys(k for t in trials for k in t.params))
    return [k for k in names if len({params_key({k: t.params.get(k)}) for t in trials}) > 1]


def metric_vs_parameter(runs: Sequence[RunRecord], metric: str, parameter: str, title: str, unit: str = "") -> Any:
    """Mean of ``metric`` with its 95% CI against ``parameter``; one line per combination of the other
    swept parameters (the fixed ones are the same on every line: they name none).

    A CI that reaches below zero for a metric whose values cannot be negative says only that n is
    too small (the results table says "n too small"): its point gets no bar, and an open marker.
    """
    import plotly.graph_objects as go

    trials = trial_values(runs, metric)
    swept = swept_parameters(trials)
    lines: dict[str, list[TrialValues]] = {}
    for trial in trials:
        lines.setdefault(label(trial.params, [k for k in trial.params if k not in swept or k == parameter]), []).append(trial)
    scale = axis_scale([summarize(t.values).mean for t in trials], unit)
    figure = go.Figure()
    for name, members in lines.items():
        members = sorted(members, key=lambda t: _sortable(t.params.get(parameter)))
        stats = [summarize(t.values) for t in members]
        small = [ci_crosses_zero(s) for s in stats]
        figure.add_trace(go.Scatter(
            x=[str(t.params.get(parameter)) for t in members], y=[s.mean * scale.factor for s in stats],
            name=name if len(lines) > 1 else metric, mode="lines+markers",
            marker={"symbol": ["circle-open" if tiny else "circle" for tiny in small], "size": 8},
            error_y={"type": "data", "symmetric": False,
                     "array": [None if tiny else _gap((s.ci_high - s.mean) * scale.factor) for s, tiny in zip(stats, small)],
                     "arrayminus": [None if tiny else _gap((s.mean - s.ci_low) * scale.factor)
                                    for s, tiny in zip(stats, small)]},
        ))
    caveat = "; open points: n too small for a CI" if any(ci_crosses_zero(summarize(t.values)) for t in trials) else ""
    figure.update_layout(title={"text": title, "subtitle": {"text": f"mean ± 95% CI of the runs{caveat}"}},
                         xaxis_title=parameter, yaxis_title=axis_title(metric, scale.unit),
                         yaxis_tickformat=scale.tickformat or None, showlegend=len(lines) > 1,
                         margin={"t": 80}, legend=LEGEND_BELOW)
    return figure


def distributions(runs: Sequence[RunRecord], metric: str, title: str, unit: str = "") -> Any:
    """Every run's value per trial (named by its swept parameters), as box plots with the points shown."""
    import plotly.graph_objects as go

    trials = trial_values(runs, metric)
    swept = swept_parameters(trials)
    scale = axis_scale([v for t in trials for v in t.values], unit)
    figure = go.Figure()
    for trial in trials:
        figure.add_trace(go.Box(y=[v * scale.factor for v in trial.values],
                                name=label(trial.params, [k for k in trial.params if k not in swept]),
                                boxpoints="all", jitter=0.4))
    figure.update_layout(title=title, yaxis_title=axis_title(metric, scale.unit),
                         yaxis_tickformat=scale.tickformat or None, showlegend=False)
    return figure


def scaling_curve(groups: Sequence[tuple[dict[str, object], list[ScalingPoint]]], title: str,
                  workers_param: str = "workers") -> Any:
    """Scaling efficiency against workers with CI, beside the ideal 100%; a tick per worker count."""
    import plotly.graph_objects as go

    figure = go.Figure()
    groups = [(rest, points) for rest, points in groups if points and points[0].baseline_workers == 1]
    names = list(dict.fromkeys(k for rest, _ in groups for k in rest))
    fixed = [k for k in names if len({params_key({k: rest.get(k)}) for rest, _ in groups}) == 1]
    for rest, points in groups:  # a configuration without a 1-worker run has no efficiency to draw
        figure.add_trace(go.Scatter(
            x=[p.workers for p in points], y=[p.efficiency for p in points],
            name=label(rest, fixed) if len(groups) > 1 else "measured",
            mode="lines+markers",
            error_y={"type": "data", "symmetric": False,
                     "array": [_gap(p.efficiency_ci[1] - p.efficiency) for p in points],
                     "arrayminus": [_gap(p.efficiency - p.efficiency_ci[0]) for p in points]},
        ))
    workers = sorted({p.workers for _, points in groups for p in points})
    figure.add_trace(go.Scatter(x=workers, y=[1.0] * len(workers), name="ideal", mode="lines",
                                line={"dash": "dash", "color": "grey"}))
    figure.update_layout(title=title, xaxis_title=workers_param, yaxis_title="efficiency (95% CI)",
                         yaxis_tickformat=".0%", xaxis={"tickmode": "array", "tickvals": workers}, legend=LEGEND_BELOW,
                         margin={"b": 110})
    return figure


def comparison_chart(rows: Sequence[TrialComparison], title: str, threshold: float = COMPARE_THRESHOLD) -> Any:
    """Candidate/base ratio per trial with its CI, coloured by verdict, over the ±threshold band
    within which a whole CI reads "unchanged"."""
    import plotly.graph_objects as go

    colours = {"improved": "#2ca02c", "regressed": "#d62728", "unchanged": "#7f7f7f", "inconclusive": "#ff7f0e"}
    names = list(dict.fromkeys(k for r in rows for k in r.params))
    fixed = [k for k in names if len({params_key({k: r.params.get(k)}) for r in rows}) == 1]
    figure = go.Figure(go.Scatter(
        x=[label(r.params, fixed if len(rows) > 1 else ()) for r in rows], y=[r.comparison.ratio for r in rows],
        mode="markers",
        marker={"color": [colours[r.comparison.verdict] for r in rows], "size": 10},
        text=["missing" if r.missing else r.comparison.verdict for r in rows], name="candidate / base",
        error_y={"type": "data", "symmetric": False,
                 "array": [_gap(r.comparison.ratio_ci[1] - r.comparison.ratio) for r in rows],
                 "arrayminus": [_gap(r.comparison.ratio - r.comparison.ratio_ci[0]) for r in rows]},
    ))
    figure.add_hrect(y0=1 - threshold, y1=1 + threshold, fillcolor="grey", opacity=0.15, line_width=0,
                     annotation_text=f"±{threshold:.0%}", annotation_position="top left")
    figure.add_hline(y=1.0, line_dash="dash", line_color="grey")
    figure.update_layout(title=title, yaxis_title="candidate / base (ratio of medians, 90% CI)")
    return figure


def _low(s: Summary) -> float:
    """The CI's lower end, cut at zero for values that cannot be negative (see :func:`metric_vs_parameter`)."""
    return 0.0 if ci_crosses_zero(s) else s.ci_low


def _in(unit: str) -> str:
    return f" ({unit})" if unit else ""


def _gap(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value


def _sortable(value: object) -> tuple[int, object]:
    return (0, value) if isinstance(value, (int, float)) else (1, str(value))
