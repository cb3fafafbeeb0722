"""``kubebench experiments``, ``show`` and ``results``."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from . import StoreOpt, make_console, app, expected_errors

if TYPE_CHECKING:
    from ..store.reader import ResultsSource


class ResultFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


def print_results(console, store: ResultsSource, experiment_id: str) -> int:
    """Print the per-trial table and the failed runs; return how many runs failed (warm-ups too)."""
    from ..present.tables import failures_table, results_table
    from ..store.records import FAILED_STATES

    trials = store.trial_results(experiment_id)
    primary = store.experiment(experiment_id).primary_metric()
    console.print(results_table(trials, primary, title=f"results of {experiment_id}"))
    failed = store.runs(experiment_id, include_warmup=True, logs=False, statuses=FAILED_STATES)
    if failed:
        console.print(failures_table(failed))
    return len(failed)


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
    """List experiments in the store with their run counts."""
    from ..settings import settings
    from ..store.store import open_store

    found = open_store(settings(store).store_url).experiments(limit)
    if format is ListFormat.table:
        from ..present.tables import experiments_table

        make_console().print(experiments_table(found))
        return
    from ..present.listing import experiments_csv, experiments_json

    sys.stdout.write(experiments_json(found) if format is ListFormat.json else experiments_csv(found))


@app.command()
@expected_errors
def show(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    store: StoreOpt = None,
) -> None:
    """Show an experiment: where it came from, its runs by state and its results."""
    from ..settings import settings
    from ..store.store import open_store

    db = open_store(settings(store).store_url)
    record = db.experiment(experiment_id)
    console = make_console()
    counts = ", ".join(f"{n} {s}" for s, n in sorted(record.runs_by_status.items())) or "no runs"
    console.print(f"[bold]{record.id}[/] · {record.name} · backend {record.backend} · from {record.source}")
    console.print(f"runs: {counts}")
    _print_environment(console, db, experiment_id)
    print_results(console, db, experiment_id)
    _print_attempts(console, db, experiment_id)


def _print_attempts(console, db, experiment_id: str) -> None:
    """Every attempt of the runs that took more than one (retried, or redone after an interruption)."""
    from rich.table import Table

    repeated = {run_id: found for run_id, found in db.attempts(experiment_id).items() if len(found) > 1
                or found[-1].status == "interrupted"}
    if not repeated:
        return
    table = Table(title="attempts of runs tried more than once")
    for name in ("run", "attempt", "status", "exit", "reason"):
        table.add_column(name)
    for run_id, found in repeated.items():
        for a in found:
            table.add_row(run_id, str(a.attempt), a.status, "" if a.exit_code is None else str(a.exit_code), a.reason)
    console.print(table)


def _print_environment(console, db, experiment_id: str) -> None:
    from ..present.provenance import environment_lines

    for line in environment_lines(db.environments(experiment_id)):
        console.print(line, markup=False)


@app.command()
@expected_errors
def results(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    format: Annotated[ResultFormat, typer.Option("--format", "-f", help="table, json, csv or parquet (needs -o).")] = ResultFormat.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    store: StoreOpt = None,
) -> None:
    """Results of an experiment: a per-trial table, or every run as JSON, CSV or Parquet."""
    from ..present.export import to_csv, to_json
    from ..settings import settings
    from ..store.reader import open_results

    if format is ResultFormat.parquet and output is None:
        raise typer.BadParameter("parquet is a binary format: give a file with -o FILE", param_hint="--format")
    db = open_results(settings(store).store_url)
    if format is ResultFormat.table:
        print_results(make_console(), db, experiment_id)
        return
    runs = db.runs(experiment_id, logs=False)
    if format is ResultFormat.parquet:
        from ..present.parquet import write_parquet

        write_parquet(runs, output)
        return
    text = to_json(runs) + "\n" if format is ResultFormat.json else to_csv(runs)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
