"""Plots of runs' telemetry for the HTML report: CPU and memory (and GPU utilisation) over each run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store.records import RunRecord
    from ..store.store import Store

Series = Mapping[str, Sequence[tuple[float, float]]]
#: Runs plotted per experiment: more traces than this are unreadable.
MAX_RUNS = 6
_PANELS = (("cpu_percent", "CPU % (100 = one core)", 1), ("memory_bytes", "memory (MiB)", 1 / 2**20),
           ("gpu0_utilization_percent", "GPU 0 utilisation %", 1))


def runs_telemetry(store: Store, runs: Sequence[RunRecord], limit: int = MAX_RUNS) -> dict[str, Series]:
    """run id → its telemetry, for the first ``limit`` runs that have any."""
    found: dict[str, Series] = {}
    for run in runs:
        if len(found) >= limit:
            break
        series = store.telemetry(run.run_id)
        if series:
            found[run.run_id] = series
    return found


def telemetry_figure(by_run: Mapping[str, Series], title: str, labels: Mapping[str, str] | None = None) -> Any:
    """One subplot per quantity (CPU, memory, GPU when there is one), a trace per run; x: seconds into
    the run. None when no run has a series of its processes.

    ``title`` may hold ``{n}``: the number of runs plotted. ``labels``: run id → legend name (default:
    the run id). A series of one sample is drawn as a marker: a line needs two points.
    """
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    panels = [p for p in _PANELS if any(p[0] in series for series in by_run.values())]
    if not panels:
        return None  # runs too short for their processes to be sampled: nothing of theirs to plot
    plotted = {run_id: series for run_id, series in by_run.items() if any(p[0] in series for p in panels)}
    figure = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, subplot_titles=[p[1] for p in panels])
    for index, (run_id, series) in enumerate(plotted.items()):
        start = min((points[0][0] for points in series.values() if points), default=0.0)
        name = (labels or {}).get(run_id, run_id)
        shown_in_legend = False
        for row, (quantity, _, scale) in enumerate(panels, start=1):
            points = series.get(quantity, ())
            if not points:
                continue
            figure.add_trace(go.Scatter(
                x=[t - start for t, _ in points], y=[v * scale for _, v in points], name=name,
                mode="lines+markers" if len(points) < 3 else "lines", legendgroup=run_id,
                showlegend=not shown_in_legend, line={"color": _COLOURS[index % len(_COLOURS)]},
            ), row=row, col=1)
            shown_in_legend = True
    figure.update_xaxes(title_text="seconds into the run", row=len(panels), col=1)
    figure.update_layout(title=title.replace("{n}", str(len(plotted))), height=260 * len(panels))
    return figure


_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
