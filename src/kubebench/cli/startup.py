"""``kubebench startup``: where each trial's time goes, phase by phase."""

from __future__ import annotations

import json
import sys
from enum import Enum
from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console


class StartupFormat(str, Enum):
    table = "table"
    json = "json"


@app.command()
@expected_errors
def startup(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    trial: Annotated[Optional[list[str]], typer.Option(
        "--trial", metavar="KEY=VALUE", help="Only the trials with this parameter value (repeatable).")] = None,
    format: Annotated[StartupFormat, typer.Option("--format", "-f", help="table or json.")] = StartupFormat.table,
    fail_on: Annotated[Optional[list[str]], typer.Option(
        "--fail-on", metavar="PHASE:[STAT]<LIMIT",
        help="Exit 1 when a trial's phase is past a limit: startup_seconds:p95<5s, overhead_fraction:<10%, "
             "image_pull_seconds:max<30s (STAT: median (default), mean, max, p50…p99). Repeatable.")] = None,
    store: StoreOpt = None,
) -> None:
    """Where each trial's time went: queue, scheduling, image pull, container start, imports,
    rendezvous, init, train, teardown — each phase's median over the repeats, with its 95% interval.

    \b
    Examples:
      kubebench startup pytorch-cnn-20261130-a1b2
      kubebench startup ID --trial workers=4 --fail-on "startup_seconds:p95<30s"
    """
    from ..analyse.startup import failing, parse_phase_gate, startup as phases_of
    from ..errors import SpecError
    from ..present.startup import gate_lines, startup_tables
    from ..present.tables import params_split
    from ..settings import settings
    from ..store.reader import open_results

    gates = [parse_phase_gate(text) for text in fail_on or ()]
    runs = open_results(settings(store).store_url).runs(experiment_id, logs=False)
    every = phases_of(runs)
    trials = [t for t in every if _matches(t.params, trial or [])]
    if every and not trials:
        raise SpecError(f"no trial of {experiment_id} has {' and '.join(trial or [])}")
    if format is StartupFormat.json:
        data = [{"trial_id": t.trial_id, "params": t.params, "phases": {
            p.metric: {"median": p.median, "ci": [_number(p.low), _number(p.high)], "n": p.n} for p in t.phases}}
            for t in trials]
        sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")
    else:
        make_console().print(startup_tables(trials, experiment_id))
    failed = failing(trials, gates)
    if failed:
        _, swept = params_split([t.params for t in trials])
        for line in gate_lines(failed, swept):
            make_console(stderr=True).print(line, markup=False, soft_wrap=True)
        raise typer.Exit(1)


def _matches(params: dict[str, object], wanted: list[str]) -> bool:
    for text in wanted:
        key, sep, value = text.partition("=")
        if not sep:
            raise typer.BadParameter(f"{text!r}: expected KEY=VALUE", param_hint="--trial")
        if str(params.get(key)) != value:
            return False
    return True


def _number(value: float) -> float | None:
    return None if value != value else value  # nan is not JSON
