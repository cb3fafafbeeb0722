"""The ``kubebench`` command: a thin layer over the Python API.

Heavy modules are imported inside the commands so that ``kubebench --help`` answers at once.
Exit codes: 0 ok, 1 failed runs, 2 usage or spec error, 130 interrupted.
"""

from __future__ import annotations

import functools
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

app = typer.Typer(
    name="kubebench",
    help="Benchmark ML workloads: sweep parameters, run jobs (local processes or Kubeflow), collect and compare metrics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rendering it with rich costs ~0.2 s of imports
)

SpecArg = Annotated[Path, typer.Argument(help="Benchmark spec (YAML).", show_default=False)]
ParamsOpt = Annotated[Optional[Path], typer.Option("--params", help="Parameter file; its entries override the spec's.")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Override a parameter: key=value (YAML; a list sweeps).")]
IdOpt = Annotated[Optional[str], typer.Option("--id", help="Experiment id; an existing id resumes that experiment.")]
StoreOpt = Annotated[Optional[str], typer.Option("--store", envvar="KUBEBENCH_STORE", help="SQLAlchemy URL of the results store.")]


class ResultFormat(str, Enum):
    table = "table"
    json = "json"
    csv = "csv"


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


def expected_errors(command: Callable) -> Callable:
    """Print an expected error as one message (no traceback) and exit with its code."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from .errors import KubebenchError

        try:
            return command(*args, **kwargs)
        except KubebenchError as e:
            _console(stderr=True).print(f"[bold red]error:[/] {e}", markup=True, soft_wrap=True)
            raise typer.Exit(e.exit_code) from None

    return wrapper


def _load(spec: Path, params: Optional[Path], overrides: Optional[list[str]]):
    from .spec.load import load_spec

    return load_spec(spec, params_file=params, overrides=tuple(overrides or ()))


@app.command()
@expected_errors
def run(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    experiment_id: IdOpt = None,
    repeats: Annotated[Optional[int], typer.Option("--repeats", min=1, help="Runs per trial (overrides the spec).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and do nothing.")] = False,
    store: StoreOpt = None,
) -> None:
    """Plan, run and record a benchmark, then print its results per trial."""
    from .runner import plan_experiment
    from .settings import settings

    loaded = _load(spec, params, set_)
    config = settings(store)
    experiment = plan_experiment(loaded, config, experiment_id, repeats)
    console = _console()
    if dry_run:
        from .present.tables import plan_table

        console.print(plan_table(experiment.plan))
        return
    failed = _execute(experiment, config, console)
    raise typer.Exit(1 if failed else 0)


def _execute(experiment, config, console) -> int:
    from .present.progress import RichProgress
    from .runner import execute
    from .store.records import FAILED_STATES
    from .store.store import open_store

    store = open_store(config.store_url)
    exp_id = experiment.plan.experiment_id
    try:
        with RichProgress(console) as progress:
            execute(experiment, store, progress)
    except KeyboardInterrupt:
        _console(stderr=True).print(f"interrupted: the run in flight was cancelled; resume with --id {exp_id}")
        raise typer.Exit(130) from None
    runs = store.runs(exp_id, include_warmup=True)
    _print_results(console, store, exp_id)
    console.print(f"experiment [bold]{exp_id}[/] · store {config.store_url}")
    return sum(1 for r in runs if r.status in FAILED_STATES)


def _print_results(console, store, experiment_id: str) -> None:
    from .present.tables import failures_table, results_table

    runs = store.runs(experiment_id)
    console.print(results_table(runs, _primary_metric(store, experiment_id), title=f"results of {experiment_id}"))
    failures = failures_table(store.runs(experiment_id, include_warmup=True))
    if failures is not None:
        console.print(failures)


def _primary_metric(store, experiment_id: str) -> Optional[str]:
    import yaml

    try:
        data = yaml.safe_load(store.experiment(experiment_id).spec_text) or {}
        metrics = data.get("metrics") or []
        primary = next((m for m in metrics if m.get("primary")), metrics[0] if metrics else None)
        return primary.get("name") if primary else None
    except (yaml.YAMLError, AttributeError, TypeError):
        return None


@app.command()
@expected_errors
def render(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    experiment_id: IdOpt = None,
    store: StoreOpt = None,
) -> None:
    """Print each run's rendered job (YAML) without running anything."""
    from .runner import dump_yaml, make_backend, plan_experiment
    from .settings import settings

    experiment = plan_experiment(_load(spec, params, set_), settings(store), experiment_id)
    backend = make_backend(experiment.loaded)
    documents = []
    for run in experiment.plan.runs:
        job = experiment.render(run, backend)
        documents.append(f"# run {run.id}: {run.label}\n" + dump_yaml(job.manifest))
    sys.stdout.write("---\n".join(documents))


@app.command()
@expected_errors
def experiments(
    limit: Annotated[int, typer.Option(help="Show at most this many, newest first.")] = 50,
    store: StoreOpt = None,
) -> None:
    """List experiments in the store with their run counts."""
    from .present.tables import experiments_table
    from .settings import settings
    from .store.store import open_store

    _console().print(experiments_table(open_store(settings(store).store_url).experiments(limit)))


@app.command()
@expected_errors
def show(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    store: StoreOpt = None,
) -> None:
    """Show an experiment: where it came from, its runs by state and its results."""
    from .settings import settings
    from .store.store import open_store

    db = open_store(settings(store).store_url)
    record = db.experiment(experiment_id)
    console = _console()
    counts = ", ".join(f"{n} {s}" for s, n in sorted(record.runs_by_status.items())) or "no runs"
    console.print(f"[bold]{record.id}[/] · {record.name} · backend {record.backend} · from {record.source}")
    console.print(f"runs: {counts}")
    _print_results(console, db, experiment_id)


@app.command()
@expected_errors
def results(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    format: Annotated[ResultFormat, typer.Option("--format", "-f", help="table, json or csv.")] = ResultFormat.table,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to this file instead of stdout.")] = None,
    store: StoreOpt = None,
) -> None:
    """Results of an experiment: a per-trial table, or every run as JSON or CSV."""
    from .present.export import to_csv, to_json
    from .settings import settings
    from .store.store import open_store

    db = open_store(settings(store).store_url)
    if format is ResultFormat.table:
        _print_results(_console(), db, experiment_id)
        return
    runs = db.runs(experiment_id)
    text = to_json(runs) + "\n" if format is ResultFormat.json else to_csv(runs)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def main() -> None:
    """Entry point of the ``kubebench`` script."""
    app()


if __name__ == "__main__":
    main()
