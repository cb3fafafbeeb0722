"""``kubebench run`` and ``kubebench render``."""

from __future__ import annotations

import signal
import sys
from typing import Annotated, Optional

import typer

from . import IdOpt, ParamsOpt, SetOpt, SpecArg, StorageOpt, StoreOpt, make_console, load_args, app, expected_errors

BackendOpt = Annotated[Optional[str], typer.Option(
    "--backend", help="Where jobs run: local or kubernetes (overrides the spec's backend kind).")]


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
    backend: BackendOpt = None,
    parallelism: Annotated[Optional[int], typer.Option(
        "--parallelism", min=1, help="Runs in flight at once (overrides the spec).")] = None,
    storage: StorageOpt = None,
    metrics_port: Annotated[Optional[int], typer.Option(
        "--metrics-port", min=1, max=65535, help="Serve Prometheus /metrics on 127.0.0.1:PORT while it runs.")] = None,
    label: Annotated[Optional[list[str]], typer.Option(
        "--label", help="Label the experiment: key=value (e.g. version=1.4.2, commit=abc123); repeatable.")] = None,
) -> None:
    """Plan, run and record a benchmark, then print its results per trial."""
    from ..runner import plan_experiment
    from ..settings import settings
    from ..store.series import parse_labels

    labels = parse_labels(label or ())
    loaded = with_overrides(load_args(spec, params, set_), backend, parallelism)
    config = settings(store, storage=storage)
    experiment = plan_experiment(loaded, config, experiment_id, repeats, labels)
    console = make_console()
    if dry_run:
        from ..present.tables import plan_table

        console.print(plan_table(experiment.plan))
        return
    failed = _execute(experiment, config, console, metrics_port)
    raise typer.Exit(1 if failed else 0)


def _execute(experiment, config, console, metrics_port: Optional[int] = None) -> int:
    from ..cancel import Cancel, stop_signals
    from ..present.progress import RichProgress
    from ..runner import execute
    from ..store.store import open_store

    store = open_store(config.store_url)
    exp_id = experiment.plan.experiment_id
    server = None
    if metrics_port:
        from ..monitor.exposition import serve_metrics

        server = serve_metrics(store, metrics_port)
    cancel = Cancel()
    try:
        with stop_signals(cancel, exp_id), RichProgress(console) as progress:
            execute(experiment, store, progress, cancel=cancel)
    except KeyboardInterrupt:
        signum = cancel.signal or signal.SIGINT
        make_console(stderr=True).print(f"interrupted ({signal.Signals(signum).name}): the runs in flight were "
                                        f"cancelled; resume with --id {exp_id}", soft_wrap=True)
        raise typer.Exit(128 + signum) from None
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    from .results import print_results

    failed = print_results(console, store, exp_id)
    console.print(f"experiment [bold]{exp_id}[/] · store {config.store_url}")
    return failed


@app.command()
@expected_errors
def render(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    experiment_id: IdOpt = None,
    store: StoreOpt = None,
    backend: BackendOpt = None,
) -> None:
    """Print each run's rendered job (YAML) without running anything."""
    from ..runner import dump_yaml, make_backend, plan_experiment
    from ..settings import settings

    experiment = plan_experiment(with_overrides(load_args(spec, params, set_), backend), settings(store), experiment_id)
    backend = make_backend(experiment.loaded)
    documents = []
    for run in experiment.plan.runs:
        job = experiment.render(run, backend)
        documents.append(f"# run {run.id}: {run.label}\n" + dump_yaml(job.manifest))
    sys.stdout.write("---\n".join(documents))


def with_overrides(loaded, backend: Optional[str] = None, parallelism: Optional[int] = None):
    """The loaded spec with ``--backend`` (that backend with its default options, unless the spec
    already configures it) and ``--parallelism`` applied."""
    update: dict = {}
    if backend is not None and loaded.spec.backend.kind != backend:
        from .. import registry

        update["backend"] = registry.load("backends", backend).Config()
    if parallelism is not None:
        update["parallelism"] = parallelism
    return loaded.model_copy(update={"spec": loaded.spec.model_copy(update=update)}) if update else loaded
