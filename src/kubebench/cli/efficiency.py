"""``kubebench efficiency``: throughput, MFU, energy and cost per trial, and the spec's references."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console


@app.command()
@expected_errors
def efficiency(
    experiment_id: Annotated[str, typer.Argument(help="Experiment to show.", show_default=False)],
    fail_on: Annotated[Optional[str], typer.Option(
        "--fail-on", help="'reference' or 'reference:95%': exit 1 when a trial's median is below that "
                          "fraction of its published reference (default: each reference's min_ratio).")] = None,
    store: StoreOpt = None,
) -> None:
    """Per trial: throughput, MFU, energy, joules and USD per item, cost; then % of each reference with CI."""
    from ..analyse.reference import (
        check_references,
        parse_reference_rule,
        references_of,
    )
    from ..present.efficiency import efficiency_table, reference_table
    from ..settings import settings
    from ..store.store import open_store

    limit = parse_reference_rule(fail_on) if fail_on else None
    db = open_store(settings(store).store_url)
    record = db.experiment(experiment_id)
    runs = db.runs(experiment_id)
    console = make_console()
    console.print(efficiency_table(runs, f"efficiency of {experiment_id}"))
    checks = check_references(runs, references_of(record.spec_text), lambda m: record.metric_goal(m)[1])
    if checks:
        console.print(reference_table(checks, limit))
    if fail_on and not checks:
        make_console(stderr=True).print("--fail-on reference: the experiment's spec has no reference that applies")
        raise typer.Exit(1)
    if fail_on and not all(c.passed(limit) for c in checks):
        make_console(stderr=True).print(f"below the reference ({fail_on}): failing")
        raise typer.Exit(1)
