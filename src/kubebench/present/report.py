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
from ..analyse import quality
from ..analyse.compare import ci_label
from ..analyse.experiments import compare_experiments, scaling, trial_values
from ..errors import SpecError
from ..numerics.stats import summarize
from ..rules import COMPARE_ALPHA, COMPARE_THRESHOLD, worker_parameters
from ..store.records import ExperimentRecord, RunRecord
from . import figures
from .costs import comparison_line, cost_html
from .numbers import metric_unit, percent, short, si, si_range


@dataclass
class Section:
    """A titled part of the report: tables (HTML) and figures."""

    title: str
    tables: list[str] = field(default_factory=list)
    figures: list[object] = field(default_factory=list)


def experiment_section(record: ExperimentRecord, runs: Sequence[RunRecord], metric: str | None,
                       telemetry: Mapping[str, Mapping[str, Sequence[tuple[float, float]]]] | None = None) -> Section:
    """Results table, warnings and plots of one experiment; ``telemetry`` (run id → series) adds its plot."""
    name = metric or record.primary_metric() or _any_metric(runs)
    unit = _unit(record, name)
    section = Section(f"{record.id} — {record.name} ({record.backend})")
    text = _description(record)
    if text:  # what the benchmark is, as its spec says (review 2026-12-02 #30)
        section.tables.append(f"<p class='description'>{html.escape(text)}</p>")
    section.tables.append(results_html(runs, name, unit))
    trials = trial_values(runs, name)
    swept = figures.swept_parameters(trials)
    section.tables.append(cost_html(runs, lambda params: figures.label(params, [k for k in params if k not in swept])))
    for parameter in swept:
        section.figures.append(figures.metric_vs_parameter(runs, name, parameter, f"{name} vs {parameter}", unit))
    section.figures.append(figures.distributions(runs, name, f"{name}: runs of each trial", unit))
    workers = worker_parameters(swept)
    if len(workers) == 1:
        groups = scaling(runs, name, workers[0])
        section.figures.append(figures.scaling_curve(groups, f"scaling efficiency over {workers[0]}", workers[0]))
        section.tables.append(_warnings([w for rest, points in groups for w in quality.scaling_warnings(
            points, figures.label(rest, [k for k in rest if k not in swept]))]))
    # latency vs load, goodput, frontier, capacity (serving runs only)
    from .serving import serving_parts

    serving_tables, serving_figures = serving_parts(record, runs)
    section.tables += serving_tables
    section.figures += serving_figures
    if telemetry:
        from ..monitor.plots import telemetry_figure

        labels = {r.run_id: f"{figures.label(r.params, [k for k in r.params if k not in swept])} · repeat {r.repeat}"
                  for r in runs if r.run_id in telemetry}
        figure = telemetry_figure(telemetry, "telemetry of the first {n} runs with samples", labels)
        if figure is not None:
            section.figures.append(figure)
    return section


def comparison_section(base: ExperimentRecord, base_runs: Sequence[RunRecord], candidate: ExperimentRecord,
                       candidate_runs: Sequence[RunRecord], metric: str | None) -> Section:
    """The candidate compared with the base, trial by trial, with the reason of each verdict."""
    name, goal = base.metric_goal(metric)
    unit = _unit(base, name)
    rows = compare_experiments(base_runs, candidate_runs, name, goal)
    section = Section(f"{candidate.id} compared with {base.id}")
    swept = figures.swept_parameters(trial_values(base_runs, name))
    base_fixed, candidate_fixed = _fixed(base_runs, swept), _fixed(candidate_runs, swept)
    differ = [k for k in dict.fromkeys([*base_fixed, *candidate_fixed]) if base_fixed.get(k) != candidate_fixed.get(k)]
    if differ:
        text = " · ".join(f"{k}: {base_fixed.get(k, 'unset')} → {candidate_fixed.get(k, 'unset')}" for k in differ)
        section.tables.append(f"<p class='meta'>base → candidate: {html.escape(text)}</p>")
    header = ["trial", f"base median{_in(unit)}", f"candidate median{_in(unit)}", "ratio",
              ci_label(rows[0].comparison.alpha if rows else COMPARE_ALPHA), "p (one-sided)", "verdict", "why"]
    body = [[figures.label(r.params, [k for k in r.params if k not in swept]), short(r.comparison.base.median, unit),
             short(r.comparison.candidate.median, unit), _num(r.comparison.ratio),
             f"{_num(r.comparison.ratio_ci[0])} … {_num(r.comparison.ratio_ci[1])}", _num(r.comparison.p_value),
             "missing" if r.missing else r.comparison.verdict, r.comparison.reason] for r in rows]
    section.tables.append(_table(header, body, text_columns=2))
    cost = comparison_line(base_runs, candidate_runs)
    if cost:
        section.tables.append(f"<p class='cost'>{html.escape(cost)}</p>")
    threshold = rows[0].comparison.threshold if rows else COMPARE_THRESHOLD
    section.figures.append(figures.comparison_chart(rows, f"{name}: {candidate.id} / {base.id}", threshold))
    return section


def results_html(runs: Sequence[RunRecord], metric: str, unit: str = "") -> str:
    """Per-trial statistics of ``metric`` as an HTML table, the fixed parameters above it and its
    quality warnings below."""
    trials = trial_values(runs, metric)
    swept = figures.swept_parameters(trials)
    fixed = {k: v for k, v in (trials[0].params.items() if trials else ()) if k not in swept}
    header = ["trial", "ok", "failed", "mean", "median", "cv", "95% CI", "olympic mean", "min", "max"]
    body, summaries = [], {}
    for trial in trials:
        s = summarize(trial.values, failed=trial.failed)
        summaries[figures.label(trial.params, [k for k in trial.params if k not in swept])] = s
        ci = "n too small" if quality.ci_crosses_zero(s) else si_range(s.ci_low, s.ci_high, unit)
        body.append([figures.label(trial.params, [k for k in trial.params if k not in swept]), str(s.n),
                     str(s.failed), si(s.mean, unit), si(s.median, unit), percent(s.cv), ci,
                     si(s.olympic_mean, unit), si(s.min, unit), si(s.max, unit)])
    warnings = quality.noise_warnings({k: s.cv for k, s in summaries.items()}) + quality.zero_crossing_warning(
        [k for k, s in summaries.items() if quality.ci_crosses_zero(s)])
    fixed_text = ", ".join(f"{k}={v}" for k, v in fixed.items())
    return (f"<h3>{html.escape(metric)}{html.escape(_in(unit))}</h3>"
            + (f"<p class='meta'>fixed: {html.escape(fixed_text)}</p>" if fixed_text else "")
            + _table(header, body) + _warnings(warnings))


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


def _description(record: ExperimentRecord) -> str:
    """The spec's ``description:`` ("" when it has none)."""
    from .serving import spec_of

    found = spec_of(record).get("description")
    return found.strip() if isinstance(found, str) else ""


def _any_metric(runs: Sequence[RunRecord]) -> str:
    names = sorted({m for r in runs for m in r.metrics})
    if not names:
        raise SpecError("the experiment has no metrics to report")
    return names[0]


def _table(header: list[str], rows: list[list[str]], text_columns: int = 0) -> str:
    """An HTML table, numbers right-aligned; the first and the last ``text_columns`` columns are text."""
    def cls(i: int) -> str:
        return " class='text'" if i >= len(header) - text_columns else ""

    head = "".join(f"<th{cls(i)}>{html.escape(h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{cls(i)}>{html.escape(c)}</td>" for i, c in enumerate(row)) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fixed(runs: Sequence[RunRecord], swept: Sequence[str]) -> dict[str, object]:
    """The parameters of an experiment other than ``swept`` (those of its first run)."""
    return {k: v for k, v in (runs[0].params.items() if runs else ()) if k not in swept}


def _num(value: float) -> str:
    return "–" if value is None or value != value else f"{value:.4g}"


def _unit(record: ExperimentRecord, metric: str) -> str:
    declared = next((str(m.get("unit") or "") for m in record.declared_metrics() if m["name"] == metric), "")
    return metric_unit(metric, declared)


def _in(unit: str) -> str:
    return f" ({unit})" if unit else ""


def _warnings(lines: Sequence[str]) -> str:
    return "".join(f"<p class='warning'>warning: {html.escape(line)}</p>" for line in lines)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: right; }
th:first-child, td:first-child, th.text, td.text { text-align: left; }
section { margin-bottom: 3rem; }
.meta { color: #777; }
.description { max-width: 80ch; white-space: pre-line; }
.warning { color: #8a5a00; background: #fff6e0; padding: 0.3rem 0.6rem; border-left: 3px solid #e0a000; }
"""
