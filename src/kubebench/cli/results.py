"""``kubebench experiments``, ``show`` and ``results``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console

if TYPE_CHECKING:
    from ..store.reader import ResultsSource

MetricsOpt = Annotated[Optional[list[str]], typer.Option(
    "--metric", "-m", metavar="NAME", help="A metric to show (repeat for several; default: the spec's declared metrics).")]
TelemetryOpt = Annotated[bool, typer.Option("--telemetry", help="Also show kubebench's telemetry metrics (CPU, memory, GPU).")]


class ResultFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


def print_results(console, store: ResultsSource, experiment_id: str, metrics: Sequence[str] = (),
                  telemetry: bool = False) -> int:
    """Print the per-trial table, its warnings and the failed runs; return how many runs failed
    (warm-ups too). ``metrics``: the metrics to show (default: the declared ones); ``telemetry``: add
    kubebench's telemetry metrics."""
    from ..analyse.checks import check_metric
    from ..present.tables import choose_metrics, failures_table, params_split, results_table, results_warnings
    from ..present.text import cell
    from ..store.records import FAILED_STATES

    trials = store.trial_results(experiment_id)
    record = store.experiment(experiment_id)
    declared = record.declared_metrics()
    found = sorted({name for trial in trials for values in trial.metrics for name in values})
    for name in metrics:
        check_metric(name, found, declared=[str(m["name"]) for m in declared])
    choice = choose_metrics(found, declared, record.primary_metric(), metrics, telemetry)
    console.print(results_table(trials, choice, title=f"results of {experiment_id}"))
    for line in results_warnings(trials, choice.shown[0] if choice.shown else None):
        console.print(cell("warning: " + line, style="yellow"))
    print_decisions(console, store, experiment_id)
    failed = store.runs(experiment_id, include_warmup=True, logs=True, statuses=FAILED_STATES)
    if failed:
        console.print(failures_table(failed, params_split([t.params for t in trials])[1]))
    return len(failed)


def print_decisions(console, store: ResultsSource, experiment_id: str) -> list:
    """The trials' sequential decisions (``run --decide-against``), if it has any; return them."""
    found = store.decisions(experiment_id)
    if found:
        from ..present.decisions import decisions_table

        console.print(decisions_table(found))
    return found


class ListFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


@app.command()
@expected_errors
def experiments(
    limit: Annotated[int, typer.Option(help="Show at most this many, newest first.")] = 50,
    format: Annotated[ListFormat, typer.Option("--format", "-f", help="table, json or csv.")] = ListFormat.table,
    store: StoreOpt = None,
) -> None:
    """List experiments in the store: state, runs, labels and primary metric, one line each.

    \b
    Examples:
      kubebench experiments --limit 10
      kubebench experiments -f json
    """
    from ..settings import settings
    from ..store.engine import no_store_yet
    from ..store.store import open_store

    url = settings(store).store_url
    if no_store_yet(url):  # nothing to list, and no database made as a side effect (review 2026-12-02 #31)
        found = []
    else:
        db = open_store(url)
        found = db.experiments(limit)
    if format is ListFormat.table:
        from ..present.tables import experiments_table
        from ..present.text import cell

        if not found:
            make_console().print(cell(f"no experiments in {url}: start one with `kubebench run SPEC.yaml`"))
            return
        make_console().print(experiments_table(found, _primary_medians(db, found)))
        return
    from ..present.listing import experiments_csv, experiments_json

    if format is ListFormat.json:
        from ..store.series import notes

        sys.stdout.write(experiments_json(found, notes(db, [e.id for e in found]) if found else {}))
    else:
        sys.stdout.write(experiments_csv(found))


def _primary_medians(db, experiments) -> dict[str, str]:
    """Each experiment's primary metric: the median of its first trial, with its unit (``957 k ops/s``)."""
    import statistics

    from ..present.numbers import metric_unit, si
    from ..store.series import trial_runs

    runs = trial_runs(db, [e.id for e in experiments])
    found = {}
    for e in experiments:
        name = e.primary_metric()
        values = [m[name] for m in (runs.get(e.id) or [({}, [])])[0][1] if name in m] if name else []
        if values:
            unit = next((str(m.get("unit") or "") for m in e.declared_metrics() if m["name"] == name), "")
            found[e.id] = si(statistics.median(values), metric_unit(name, unit))
    return found


@app.command()
@expected_errors
def show(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    metric: MetricsOpt = None,
    telemetry: TelemetryOpt = False,
    store: StoreOpt = None,
) -> None:
    """Show an experiment: where it came from, its runs by state, its results, and why runs failed.

    \b
    Example:
      kubebench show pytorch-cnn-20261130-a1b2
    """
    from ..present.text import cell
    from ..settings import settings
    from ..store.store import open_store

    db = open_store(settings(store).store_url)
    record = db.experiment(experiment_id)
    console = make_console()
    counts = ", ".join(f"{n} {s}" for s, n in sorted(record.runs_by_status.items())) or "no runs"
    console.print(cell(f"{record.id} · {record.name} · backend {record.backend} · from {record.source}", style="bold"))
    print_context(console, db, record)
    console.print(f"runs: {counts}")
    _print_environment(console, db, experiment_id)
    _print_data(console, db, record)
    print_results(console, db, experiment_id, metric or (), telemetry)
    print_capacity(console, db, record)
    _print_failure_logs(console, db, experiment_id)
    _print_attempts(console, db, experiment_id)


def print_context(console, db, record) -> None:
    """The state (with the command that resumes an interrupted experiment, on a line of its own so
    that it can be pasted), the labels, the tags and the note."""
    from ..present.listing import labels_text, resume_command
    from ..present.text import cell
    from ..store.series import notes

    state = record.current_state
    console.print(cell(f"state: {state}", style="yellow" if state == "interrupted" else ""))
    if state == "interrupted":
        console.print(cell("resume it (with the --params/--set it was started with):", style="yellow"))
        console.print(cell("  " + resume_command(record.source, record.id)), soft_wrap=True)
    found = notes(db, [record.id]).get(record.id, {})
    context = [f"labels: {labels_text(record.labels)}"] if record.labels else []
    context += [f"tags: {' '.join('#' + t for t in found.get('tags', []))}"] if found.get("tags") else []
    if context:
        console.print(cell(" · ".join(context)))
    if found.get("note"):
        console.print(cell(f"note: {found['note']}"))


def print_capacity(console, db, record) -> None:
    """A capacity search's answer per server setting (nothing for other experiments)."""
    from ..present.serving import capacity_lines, spec_of
    from ..present.text import cell

    spec = spec_of(record)
    if not isinstance(spec.get("search"), dict):
        return
    for line in capacity_lines(spec, db.runs(record.id, logs=False)):
        console.print(cell(line, style="bold" if line.startswith("capacity") else ""))


#: Failed runs whose log ends ``show`` prints (the most recent first), and lines of each.
SHOWN_FAILURES, SHOWN_LOG_LINES = 3, 12


def _print_failure_logs(console, db, experiment_id: str) -> None:
    """The end of the log of the latest failed runs (the cause is usually there), and the metrics a
    run did report when a declared one was missing."""
    from ..present.failures import failure_details
    from ..store.records import FAILED_STATES

    failed = db.runs(experiment_id, include_warmup=True, logs=True, statuses=FAILED_STATES)
    for renderable in failure_details(failed, SHOWN_FAILURES, SHOWN_LOG_LINES):
        console.print(renderable)


def _print_attempts(console, db, experiment_id: str) -> None:
    """Every attempt of the runs that took more than one (retried, or redone after an interruption)."""
    from ..present.tables import add_id_column, new_table
    from ..present.text import cell

    repeated = {run_id: found for run_id, found in db.attempts(experiment_id).items() if len(found) > 1
                or found[-1].status == "interrupted"}
    if not repeated:
        return
    table = new_table("attempts of runs tried more than once")
    add_id_column(table, "run", list(repeated))
    for name in ("attempt", "status", "exit"):
        table.add_column(name)
    table.add_column("reason", overflow="fold")
    for run_id, found in repeated.items():
        for a in found:
            table.add_row(run_id, str(a.attempt), a.status, "" if a.exit_code is None else str(a.exit_code), cell(a.reason))
    console.print(table)


def _print_environment(console, db, experiment_id: str) -> None:
    from ..present.provenance import environment_lines
    from ..present.text import cell

    for line in environment_lines(db.environments(experiment_id)):
        console.print(cell(line))


def _print_data(console, db, record) -> None:
    from ..present.data import data_lines
    from ..present.text import cell

    for line in data_lines(db.data(record.id), record.data_prepare_seconds):
        console.print(cell(line))


@app.command()
@expected_errors
def results(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    format: Annotated[ResultFormat, typer.Option("--format", "-f", help="table, json, csv or parquet (needs -o).")] = ResultFormat.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    metric: MetricsOpt = None,
    telemetry: TelemetryOpt = False,
    store: StoreOpt = None,
) -> None:
    """Results of an experiment: a per-trial table, or every run as JSON, CSV or Parquet.

    Times in JSON and CSV are ISO 8601 in UTC (started_at), with the epoch seconds beside them
    (started_at_epoch). Repeats count from 0 everywhere.

    \b
    Examples:
      kubebench results pytorch-cnn-20261130-a1b2
      kubebench results pytorch-cnn-20261130-a1b2 -m step_time_p50 --telemetry
      kubebench results pytorch-cnn-20261130-a1b2 -f csv -o runs.csv
    """
    from ..present.export import to_csv, to_json
    from ..settings import settings
    from ..store.reader import open_results

    if format is ResultFormat.parquet and output is None:
        raise typer.BadParameter("parquet is a binary format: give a file with -o FILE", param_hint="--format")
    db = open_results(settings(store).store_url)
    if format is ResultFormat.table:
        print_results(make_console(), db, experiment_id, metric or (), telemetry)
        return
    runs = db.runs(experiment_id, logs=False)
    if format is ResultFormat.parquet and output is not None:  # (without -o: refused above)
        from ..present.parquet import write_parquet

        write_parquet(runs, output)
        return
    text = to_json(runs) + "\n" if format is ResultFormat.json else to_csv(runs)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
