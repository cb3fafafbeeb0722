"""Deleting an experiment (``kubebench delete``, ``DELETE /api/experiments/{id}``): its rows in the
store, and only the folders kubebench made for it.

The experiment must be in the store, and no runner may hold its lock, nor, on a shared store, its
lease (``BusyError`` otherwise): both are taken for the whole deletion, so a runner that starts meanwhile is refused instead of writing
into a folder being removed. A folder is removed only when it is the experiment's folder where
kubebench writes runs: named after the id, and, on this machine, resolved (links followed) strictly
inside the experiments root or the configured local storage; in remote storage (``s3://…``), the
parent of the recorded run folders named after the id. Any other recorded folder is left in place
and named, whatever a store row says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import ids
from .errors import BusyError
from .settings import Settings
from .storage import Storage
from .storage.storage import is_local, local_path
from .store.holding import hold_experiment
from .store.store import Store


@dataclass(frozen=True)
class Deletion:
    """What deleting an experiment removes (``folders``) and leaves in place (``kept``, with why)."""

    experiment_id: str
    runs: int
    folders: tuple[str, ...]
    kept: tuple[str, ...]


def plan_deletion(store: Store, settings: Settings, experiment_id: str) -> Deletion:
    """The folders to remove for ``experiment_id`` (IdError, NotFoundError: nothing to delete)."""
    record = store.experiment(ids.check(experiment_id))
    candidates = {str(settings.experiments_root / experiment_id): None}
    for run_folder in store.run_folders(experiment_id):
        candidates[run_folder.rstrip("/").rsplit("/", 1)[0]] = None
    folders, kept = [], []
    for folder in candidates:
        why = _refusal(folder, experiment_id, _roots(settings))
        if why is None:
            folders.append(folder)
        elif why:
            kept.append(f"{folder} ({why})")
    return Deletion(experiment_id, sum(record.runs_by_status.values()), tuple(folders), tuple(kept))


def delete(store: Store, settings: Settings, deletion: Deletion) -> int:
    """Remove the folders and the rows of a planned deletion, holding the experiment's lock.

    BusyError while a runner holds the lock; returns the number of runs deleted.
    """
    lock_folder = settings.experiments_root / deletion.experiment_id
    try:
        with hold_experiment(store, lock_folder, deletion.experiment_id, create=False):
            for folder in deletion.folders:
                Storage(folder).remove()
            return store.delete_experiment(deletion.experiment_id)
    except BusyError as e:
        raise BusyError(f"cannot delete: {e}") from None


def _roots(settings: Settings) -> list[Path]:
    roots = [settings.experiments_root.resolve()]
    if settings.storage_url and is_local(settings.storage_url):
        roots.append(local_path(settings.storage_url))
    return roots


def _refusal(folder: str, experiment_id: str, roots: list[Path]) -> str | None:
    """None when ``folder`` may be removed; else why not ("" for a local folder that is not there)."""
    if not is_local(folder):
        path = PurePosixPath(folder.split("://", 1)[1])
        if path.name != experiment_id or any(p in (".", "..") for p in path.parts):
            return "not a folder kubebench made for this experiment"
        return None
    given = Path(folder.removeprefix("file://").removeprefix("local://")).expanduser()
    if not given.exists() and not given.is_symlink():
        return ""
    real = given.resolve()
    if given.is_symlink() or real.name != experiment_id or not given.is_dir():
        return "not a folder kubebench made for this experiment"
    if not any(real.parent == root for root in roots):
        return "outside the experiments root and the configured storage"
    return None
