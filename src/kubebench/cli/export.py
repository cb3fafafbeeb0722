"""``kubebench export mlflow``: an experiment's results in other systems."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console

export_app = typer.Typer(help="Send an experiment's results to another system (MLflow).", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("mlflow")
@expected_errors
def mlflow(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    tracking_uri: Annotated[str, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI",
                                              help="MLflow tracking server or store (http://…, sqlite:///mlflow.db).")],
    experiment_name: Annotated[Optional[str], typer.Option("--experiment-name", help="MLflow experiment (default: the experiment id).")] = None,
    store: StoreOpt = None,
) -> None:
    """Log trials (parent runs) and runs (nested) with params, metrics and tags to MLflow."""
    from ..present.mlflow_export import export_mlflow
    from ..present.numbers import plural
    from ..settings import settings
    from ..store.store import open_store

    done = export_mlflow(open_store(settings(store).store_url), experiment_id, tracking_uri, experiment_name)
    make_console().print(f"MLflow experiment {done.mlflow_experiment_id} at {tracking_uri}: {plural(done.exported, 'run')} "
                         f"exported in {plural(done.trials, 'trial')} ({done.already} already there)", markup=False)
