"""``kubebench calibrate SPEC``: A/A runs that measure a benchmark's own noise floor."""

from __future__ import annotations

import time
from typing import Annotated, Optional

import typer

from . import ParamsOpt, SetOpt, SpecArg, StorageOpt, StoreOpt, app, expected_errors, load_args, make_console


@app.command()
@expected_errors
def calibrate(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    times: Annotated[int, typer.Option("--times", min=2, max=20, help="How many times to run the same spec (A/A).")] = 2,
    repeats: Annotated[Optional[int], typer.Option("--repeats", min=2, help="Runs per trial (overrides the spec).")] = None,
    reuse: Annotated[Optional[list[str]], typer.Option("--from", help="Use these experiments (of the spec's series) instead of running; repeatable.")] = None,
    store: StoreOpt = None,
    storage: StorageOpt = None,
) -> None:
    """Run the spec --times times and store, per trial × metric, its run-to-run spread: thresholds use it."""
    from ..errors import SpecError
    from ..settings import settings

    loaded = load_args(spec, params, set_)
    config = settings(store, storage=storage)
    series = loaded.spec.series or loaded.spec.name
    metrics = [m.name for m in loaded.spec.metrics]
    if not metrics:
        raise SpecError(f"{spec}: declares no metrics: a noise floor is measured per metric")
    console = make_console()
    ids = list(reuse) if reuse else _run_times(loaded, config, times, repeats, console)
    if len(ids) < 2:
        raise SpecError("calibrate needs two or more A/A experiments (--from given fewer)")
    _store_floors(config.store_url, series, ids, metrics, console)


def _run_times(loaded, config, times: int, repeats: Optional[int], console) -> list[str]:
    from ..runner import plan_experiment
    from .run import _execute

    tag = time.strftime("aa-%Y%m%d-%H%M%S")
    ids = []
    for i in range(times):
        experiment = plan_experiment(loaded, config, None, repeats, {"calibration": tag, "aa": str(i + 1)})
        console.print(f"A/A run {i + 1} of {times}: {experiment.plan.experiment_id}")
        _execute(experiment, config, console)
        ids.append(experiment.plan.experiment_id)
    return ids


def _store_floors(url: str, series: str, ids: list[str], metrics: list[str], console) -> None:
    from rich.table import Table

    from ..analyse.noise import noise_floors
    from ..errors import SpecError
    from ..present.history import params_text
    from ..store.series import read_series, save_noise_floors
    from ..store.store import open_store

    db = open_store(url)
    data = read_series(db, series)
    missing = [e for e in ids if e not in {x.id for x in data.experiments}]
    if missing:
        raise SpecError(f"experiments {', '.join(missing)} are not in series {series!r}")
    floors = noise_floors(data, ids, metrics)
    if not floors:
        raise SpecError(f"the A/A experiments {', '.join(ids)} have no values to measure a noise floor from")
    save_noise_floors(db, series, floors)
    table = Table(title=f"noise floor of series {series} (from {', '.join(ids)})")
    for name in ("trial", "metric", "runs", "CV", "A/A spread (threshold)"):
        table.add_column(name, justify="left" if name in ("trial", "metric") else "right")
    for f in floors:
        table.add_row(params_text(data.params[f.trial_key]), f.metric, str(f.runs), f"{f.cv:.2%}", f"{f.spread:.2%}")
    console.print(table)
