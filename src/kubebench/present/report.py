"""One self-contained, offline HTML report of experiments: tables and plotly plots, with the
plotly library inlined once (no CDN).
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..analyse.experiments import compare_experiments, scaling, trial_values
from ..analyse.stats import summarize
from ..errors import SpecError
from ..store.records import ExperimentRecord, RunRecord
from . import figures


@dataclass
class Section:
    """A titled part of the report: tables (HTML) and figures."""

    title: str
    tables: list[str] = field(default_factory=list)
    figures: list[object] = field(default_factory=list)


def experiment_section(record: ExperimentRecord, runs: Sequence[RunRecord], metric: str | None,
                       telemetry: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]] | None = None) -> Section:
    """Results table and plots of one experiment; ``telemetry`` (run id → series) adds its plot."""
    name = metric or record.primary_metric() or _any_metric(runs)
    section = Section(f"{record.id} — {record.name} ({record.backend})")
    section.tables.append(results_html(runs, name))
    trials = trial_values(runs, name)
    for parameter in figures.swept_parameters(trials):
        section.figures.append(figures.metric_vs_parameter(runs, name, parameter, f"{name} vs {parameter}"))
    section.figures.append(figures.distributions(runs, name, f"{name}: runs of each trial"))
    if "workers" in figures.swept_parameters(trials):
        section.figures.append(figures.scaling_curve(scaling(runs, name), "scaling efficiency"))
    if telemetry:
        from ..monitor.plots import telemetry_figure

        figure = telemetry_figure(telemetry, f"telemetry of the first {len(telemetry)} runs")
        if figure is not None:
            section.figures.append(figure)
    return section


def comparison_section(base: ExperimentRecord, base_runs: Sequence[RunRecord], candidate: ExperimentRecord,
                       candidate_runs: Sequence[RunRecord], metric: str | None) -> Section:
    """The candidate compared with the base, trial by trial."""
    name, goal = base.metric_goal(metric)
    rows = compare_experiments(base_runs, candidate_runs, name, goal)
    section = Section(f"{candidate.id} compared with {base.id}")
    header = ["trial", "base median", "candidate median", "ratio", "95% CI", "p", "verdict"]
    body = [[figures.label(r.params), _num(r.comparison.base.median), _num(r.comparison.candidate.median),
             _num(r.comparison.ratio), f"{_num(r.comparison.ratio_ci[0])} … {_num(r.comparison.ratio_ci[1])}",
             _num(r.comparison.p_value), r.comparison.verdict] for r in rows]
    section.tables.append(_table(header, body))
    section.figures.append(figures.comparison_chart(rows, f"{name}: {candidate.id} / {base.id}"))
    return section


def results_html(runs: Sequence[RunRecord], metric: str) -> str:
    """Per-trial statistics of ``metric`` as an HTML table."""
    header = ["trial", "ok", "failed", "mean", "median", "cv", "95% CI", "olympic mean", "min", "max"]
    body = []
    for trial in trial_values(runs, metric):
        s = summarize(trial.values, failed=trial.failed)
        body.append([figures.label(trial.params), str(s.n), str(s.failed), _num(s.mean), _num(s.median),
                     _num(s.cv * 100) + "%", f"{_num(s.ci_low)} … {_num(s.ci_high)}", _num(s.olympic_mean),
                     _num(s.min), _num(s.max)])
    return f"<h3>{html.escape(metric)}</h3>" + _table(header, body)


def render_report(sections: Sequence[Section], title: str) -> str:
    """The whole HTML document."""
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    parts = []
    for section in sections:
        parts.append(f"<section><h2>{html.escape(section.title)}</h2>")
        parts.extend(section.tables)
        for figure in section.figures:
            parts.append(pio.to_html(figure, full_html=False, include_plotlyjs=False))
        parts.append("</section>")
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style>"
        f"<script>{get_plotlyjs()}</script></head><body>"
        f"<h1>{html.escape(title)}</h1><p class='meta'>kubebench {__version__} · {stamp}</p>"
        + "".join(parts) + "</body></html>"
    )


def write_report(path: Path, sections: Sequence[Section], title: str) -> None:
    """Write the report; a folder that does not exist is a clear error."""
    try:
        path.write_text(render_report(sections, title), encoding="utf-8")
    except OSError as e:
        raise SpecError(f"{path}: cannot write the report: {e.strerror or e}") from e


def _any_metric(runs: Sequence[RunRecord]) -> str:
    names = sorted({m for r in runs for m in r.metrics})
    if not names:
        raise SpecError("the experiment has no metrics to report")
    return names[0]


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _num(value: float) -> str:
    return "–" if value is None or value != value else f"{value:.4g}"


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }
th:first-child, td:first-child { text-align: left; }
section { margin-bottom: 3rem; }
.meta { color: #777; }
"""
