"""``kubebench compare``, ``scaling``, ``overhead`` and ``report``."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console

MetricOpt = Annotated[Optional[str], typer.Option("--metric", help="Metric to analyse (default: the primary one).")]


class CompareFormat(str, Enum):
    table = "table"
    json = "json"


def _open(store: Optional[str]):
    from ..settings import settings
    from ..store.store import open_store

    return open_store(settings(store).store_url)


@app.command()
@expected_errors
def compare(
    base: Annotated[str, typer.Argument(help="Base experiment id.", show_default=False)],
    candidate: Annotated[str, typer.Argument(help="Candidate experiment id.", show_default=False)],
    metric: MetricOpt = None,
    format: Annotated[CompareFormat, typer.Option("--format", "-f")] = CompareFormat.table,
    fail_on: Annotated[Optional[str], typer.Option("--fail-on", help="e.g. 'images_per_sec:-3%': exit 1 when a trial regresses by more, significantly.")] = None,
    threshold: Annotated[float, typer.Option(help="Relative change below which a difference is noise.")] = 0.02,
    store: StoreOpt = None,
) -> None:
    """Compare two experiments trial by trial: ratio with CI, p-value, verdict."""
    from ..analyse.compare import fail_on as regressed_beyond
    from ..analyse.compare import parse_fail_on
    from ..analyse.experiments import compare_experiments

    db = _open(store)
    base_record = db.experiment(base)
    db.experiment(candidate)  # an unknown id is a clear error before any work
    base_runs, candidate_runs = db.runs(base), db.runs(candidate)
    name, goal = base_record.metric_goal(metric)
    rows = compare_experiments(base_runs, candidate_runs, name, goal, threshold)
    gate = parse_fail_on(fail_on) if fail_on else None
    gated = rows
    if gate and gate[0] != name:
        gated = compare_experiments(base_runs, candidate_runs, gate[0], base_record.metric_goal(gate[0])[1], threshold)
    if format is CompareFormat.json:
        sys.stdout.write(json.dumps([r.to_dict() for r in rows], indent=2) + "\n")
    else:
        from ..present.studies import comparison_table

        make_console().print(comparison_table(rows, base, candidate))
    _warn_environments(db, base, candidate)
    if gate and any(regressed_beyond(r.comparison, gate[1]) for r in gated):
        make_console(stderr=True).print(f"regression beyond {fail_on}: failing")
        raise typer.Exit(1)


def _warn_environments(db, base: str, candidate: str) -> None:
    """Warn when the two experiments ran on different hardware or software (most used environment of each)."""
    from ..provenance import provenance_differences

    base_envs, candidate_envs = db.environments(base), db.environments(candidate)
    if not base_envs or not candidate_envs:
        return
    for line in provenance_differences(base_envs[0][0], candidate_envs[0][0]):
        make_console(stderr=True).print(f"[yellow]warning:[/] environments differ: {line}")


@app.command()
@expected_errors
def scaling(
    experiment_id: Annotated[str, typer.Argument(help="Experiment sweeping the number of workers.", show_default=False)],
    metric: MetricOpt = None,
    workers_param: Annotated[str, typer.Option("--workers-param", help="Parameter holding the worker count.")] = "workers",
    store: StoreOpt = None,
) -> None:
    """Scaling efficiency of a workers sweep: throughput(N) / (N × throughput(1)), with CI."""
    from ..analyse.experiments import scaling as scaling_study
    from ..present.studies import scaling_table

    db = _open(store)
    name, _ = db.experiment(experiment_id).metric_goal(metric)
    make_console().print(scaling_table(scaling_study(db.runs(experiment_id), name, workers_param), name))


@app.command()
@expected_errors
def overhead(
    bare: Annotated[str, typer.Argument(help="Experiment run bare (e.g. local backend).", show_default=False)],
    platform: Annotated[str, typer.Argument(help="The same spec run through the platform.", show_default=False)],
    metric: MetricOpt = None,
    store: StoreOpt = None,
) -> None:
    """Platform overhead: the same spec on two backends or configurations ("overhead +x% ± y%")."""
    from ..analyse.experiments import overheads
    from ..present.studies import overhead_table

    db = _open(store)
    name, goal = db.experiment(bare).metric_goal(metric)
    make_console().print(overhead_table(overheads(db.runs(bare), db.runs(platform), name, goal), name))


@app.command()
@expected_errors
def report(
    experiment_ids: Annotated[list[str], typer.Argument(help="Experiments; with several, each is compared with the first.", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write.")] = Path("report.html"),
    metric: MetricOpt = None,
    store: StoreOpt = None,
) -> None:
    """Write one self-contained offline HTML report with tables and plots."""
    from ..present.report import comparison_section, experiment_section, write_report

    db = _open(store)
    records = [db.experiment(i) for i in experiment_ids]
    runs = {r.id: db.runs(r.id) for r in records}
    from ..monitor.plots import runs_telemetry

    sections = [experiment_section(r, runs[r.id], metric, runs_telemetry(db, runs[r.id])) for r in records]
    base = records[0]
    sections += [comparison_section(base, runs[base.id], r, runs[r.id], metric) for r in records[1:]]
    from .history import history_sections

    sections += history_sections(db, records, metric)  # the series' history plot, when there is one
    write_report(output, sections, "kubebench report: " + ", ".join(experiment_ids))
    make_console().print(f"report written to {output}")
