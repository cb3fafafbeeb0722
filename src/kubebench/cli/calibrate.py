"""``kubebench calibrate SPEC``: A/A runs that measure a benchmark's own noise floor."""

from __future__ import annotations

import json
import time
from typing import Annotated, Optional

import typer

from ..analyse.noise import AA_LABELS, MAX_FLOOR
from . import ParamsOpt, SetOpt, SpecArg, StorageOpt, StoreOpt, app, expected_errors, load_args, make_console


@app.command()
@expected_errors
def calibrate(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    times: Annotated[int, typer.Option("--times", min=2, max=20, help="How many times to run the same spec (A/A).")] = 2,
    repeats: Annotated[Optional[int], typer.Option("--repeats", min=2, help="Runs per trial (overrides the spec).")] = None,
    reuse: Annotated[Optional[list[str]], typer.Option(
        "--from", help="Use these A/A experiments (of the spec's series, run from its job, of one spec text, trials, "
                       "labels and code) instead of running; repeatable.")] = None,
    max_floor: Annotated[float, typer.Option(
        "--max-floor", min=0.001, max=1.0,
        help="Store no floor above this (a relative spread): a benchmark noisier than that cannot gate changes below it.")
    ] = MAX_FLOOR,
    store: StoreOpt = None,
    storage: StorageOpt = None,
) -> None:
    """Run the spec --times times and store, per trial × metric, its run-to-run spread: thresholds use it."""
    from ..errors import SpecError
    from ..render.job import job_fingerprint
    from ..settings import settings

    loaded = load_args(spec, params, set_)
    config = settings(store, storage=storage)
    series = loaded.spec.series or loaded.spec.name
    metrics = [m.name for m in loaded.spec.metrics]
    if not metrics:
        raise SpecError(f"{spec}: declares no metrics: a noise floor is measured per metric")
    console = make_console()
    ids = list(dict.fromkeys(reuse)) if reuse else _run_times(loaded, config, times, repeats, console)
    if len(ids) < 2:
        raise SpecError("calibrate needs two or more A/A experiments (--from given fewer)")
    _store_floors(config.store_url, series, ids, metrics, console, job_fingerprint(loaded), max_floor)


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


def _store_floors(url: str, series: str, ids: list[str], metrics: list[str], console, fingerprint: str,
                  max_floor: float) -> None:
    from rich.table import Table

    from ..analyse.noise import capped, noise_floors
    from ..errors import SpecError
    from ..present.history import params_text
    from ..present.text import cell
    from ..store.series import read_series, save_noise_floors
    from ..store.store import open_store
    from . import make_console as console_of

    db = open_store(url)
    data = read_series(db, series)
    missing = [e for e in ids if e not in {x.id for x in data.experiments}]
    if missing:
        raise SpecError(f"experiments {', '.join(missing)} are not in series {series!r}")
    _check_aa(db, ids, fingerprint)
    floors, above = capped(noise_floors(data, ids, metrics), max_floor)
    if not floors:
        raise SpecError(f"the A/A experiments {', '.join(ids)} have no values to measure a noise floor from")
    save_noise_floors(db, series, floors)
    table = Table(title=cell(f"noise floor of series {series} (from {', '.join(ids)})"))
    for name in ("trial", "metric", "runs", "CV", "A/A spread (threshold)"):
        table.add_column(name, justify="left" if name in ("trial", "metric") else "right")
    for f in floors:
        table.add_row(cell(params_text(data.params[f.trial_key])), cell(f.metric), str(f.runs), f"{f.cv:.2%}",
                      f"{f.spread:.2%}" + (" (capped)" if f.spread == max_floor and any(
                          a.trial_key == f.trial_key and a.metric == f.metric for a in above) else ""))
    console.print(table)
    for f in above:
        console_of(stderr=True).print(cell(
            f"warning: {params_text(data.params[f.trial_key])} · {f.metric}: the A/A experiments land {f.spread:.1%} apart, "
            f"above the cap of {max_floor:.0%}: stored {max_floor:.0%} (a gate at {f.spread:.1%} would pass any change "
            "smaller; if the benchmark is that noisy, add repeats, or raise --max-floor)", style="yellow"), soft_wrap=True)


def _check_aa(db, ids: list[str], fingerprint: str) -> None:
    """Refuse experiments that did not run the same thing: a floor from them is not noise (review N10)."""
    from ..analyse.noise import AAExperiment, aa_differences
    from ..errors import SpecError
    from ..store.series import environments_of

    envs = environments_of(db, ids)
    given = []
    for exp_id in ids:
        record = db.experiment(exp_id)
        trials = frozenset(json.dumps(r.params, sort_keys=True, default=str) for r in db.runs(exp_id, logs=False))
        given.append(AAExperiment(exp_id, record.job_fingerprint, record.spec_text, trials, record.labels,
                                  envs.get(exp_id, {})))
    differences = aa_differences(given, fingerprint)
    if differences:
        shown = "; ".join(differences[:5]) + (f"; and {len(differences) - 5} more" if len(differences) > 5 else "")
        raise SpecError(f"calibrate --from takes A/A experiments: the same spec and code run again, differing only in "
                        f"their A/A labels ({', '.join(sorted(AA_LABELS))}); these are not: {shown}")
