"""``kubebench outputs`` and ``delete``: the runs' folders in shared storage, and retention."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from . import StoreOpt, app, expected_errors, make_console


@app.command()
@expected_errors
def outputs(
    run_id: Annotated[str, typer.Argument(help="Run id (see `kubebench results ID`).", show_default=False)],
    path: Annotated[Optional[str], typer.Argument(help="A file to print, or a folder to list (e.g. output/master-0.log).")] = None,
    store: StoreOpt = None,
) -> None:
    """List a run's files in shared storage (config, output, result), or print one of them.

    A run folder on this machine is read as the dashboard reads it: no link is followed out of it.
    """
    from ..errors import NotFoundError
    from ..settings import settings
    from ..storage import Storage
    from ..storage.storage import is_local
    from ..store.store import open_store

    run = open_store(settings(store).store_url).run(run_id)
    if not run.path:
        raise NotFoundError(f"run {run_id!r} has not started yet ({run.status}): it has no files")
    if is_local(run.path):
        _local_outputs(run, path)
        return
    folder = Storage(run.path)
    if path and folder.is_file(path):
        sys.stdout.buffer.write(folder.read(path))
        sys.stdout.flush()
        return
    files = folder.files(path or "")
    if not files:
        where = f"{path!r} in " if path else ""
        raise NotFoundError(f"no files at {where}{folder.url} (list them with `kubebench outputs {run_id}`)")
    from ..present.text import safe_line

    for name, size in files:  # a workload names its files: shown escaped, one line each
        sys.stdout.write(f"{size:>12}  {safe_line(name)}\n")


def _local_outputs(run, path: str | None) -> None:
    """``outputs`` of a run folder on this machine, through the dashboard's walk (kubebench.storage.files):
    the run's and its experiment's folders are no links, and no link leads out of the run's folder."""
    from pathlib import Path

    from ..errors import KubebenchError, NotFoundError, PathRefused
    from ..storage import files
    from ..storage.run_folder import RunFolder

    given = Path(run.path.removeprefix("file://").removeprefix("local://").rstrip("/")).expanduser()
    if (given.parent.name, given.name) != (run.experiment_id, run.run_id):
        raise KubebenchError(f"the store records {str(given)!r} as the folder of run {run.run_id}: not a folder "
                             f"kubebench made for it (<storage>/{run.experiment_id}/{run.run_id}), not read")
    folder = RunFolder(str(given.parent.parent), run.experiment_id, run.run_id)
    try:
        relative = files.checked(path or "")
        with files.open_local(folder, relative) as opened:
            if opened.is_file:
                while chunk := os.read(opened.fd, 1 << 20):
                    sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
                return
        found = files.local_files(folder, relative)
    except PathRefused as e:
        if e.status != 404:
            raise KubebenchError(str(e)) from None
        found = []
    if not found:
        where = f"{path!r} in " if path else ""
        raise NotFoundError(f"no files at {where}{given} (list them with `kubebench outputs {run.run_id}`)")
    from ..present.text import safe_line

    for name, size in found:  # a workload names its files: shown escaped, one line each
        sys.stdout.write(f"{size:>12}  {safe_line(name)}\n")


@app.command()
@expected_errors
def delete(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    store: StoreOpt = None,
) -> None:
    """Delete an experiment: its rows in the store and the folders kubebench made for its runs.

    Refused while a runner runs it. Folders outside the experiments root and the configured storage
    are left in place (and named).
    """
    from ..deletion import delete as delete_experiment, plan_deletion
    from ..present.numbers import plural
    from ..settings import settings
    from ..store.store import open_store

    config = settings(store)
    db = open_store(config.store_url)
    deletion = plan_deletion(db, config, experiment_id)
    where = ", ".join(deletion.folders) or "no folders"
    if not yes:
        typer.confirm(f"Delete experiment {experiment_id} ({plural(deletion.runs, 'run')}) from the store, and {where}?",
                      abort=True)
    deleted = delete_experiment(db, config, deletion)
    console = make_console()
    console.print(f"deleted experiment {experiment_id}: {plural(deleted, 'run')}, {where}", markup=False)
    for folder in deletion.kept:
        console.print(f"left in place: {folder}", markup=False)
