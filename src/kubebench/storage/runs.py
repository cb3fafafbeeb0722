"""Runs' folders in shared storage: where a run's folder ends up, and copying it there when it ends.

Jobs of the local backend write into local folders (``$KUBEBENCH_HOME/experiments``). When the
configured storage is elsewhere (``s3://…``, another folder), each run's folder — config, output,
result, and ``run.json`` (the run's record as stored) — is copied there once the run has ended, and
the store's ``runs.path`` holds that URL.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import StorageError
from ..paths import RunPaths
from ..settings import Settings
from ..store.records import RunResult
from .storage import Storage, is_local, join, local_path

RUN_RECORD = "run.json"
RUN_RECORD_FORMAT_VERSION = 1


def shared_storage(settings: Settings, spec_storage: str | None, spec_dir: Path | None = None) -> Storage | None:
    """The storage runs are copied to; None when it is the local experiments folder itself.

    A relative folder in the spec (``storage: results``) is relative to the spec's folder.
    """
    if spec_storage and spec_dir is not None and "://" not in spec_storage and not Path(spec_storage).is_absolute():
        spec_storage = str(spec_dir / spec_storage)
    url = settings.storage_for(spec_storage)
    if is_local(url) and local_path(url) == settings.experiments_root.resolve():
        return None
    return Storage(url)


def run_location(storage: Storage | None, paths: RunPaths) -> str:
    """What the store records as the run's folder: its storage URL, or its local path."""
    if storage is None:
        return str(paths.run)
    return join(storage.url, paths.experiment_id, paths.run_id)


def write_run_record(paths: RunPaths, result: RunResult) -> None:
    """``run.json`` in the run's folder: the record of how the run ended (what the store holds)."""
    record = {"format_version": RUN_RECORD_FORMAT_VERSION, "experiment_id": paths.experiment_id,
              **result.model_dump()}
    Path(paths.run, RUN_RECORD).write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")


def upload_run(storage: Storage, paths: RunPaths, result: RunResult) -> RunResult:
    """Copy the run's folder to storage; a failed copy fails the run (its outputs are not where they belong)."""
    try:
        storage.child(paths.experiment_id, paths.run_id).replace_with(Path(paths.run))
    except StorageError as e:
        reason = f"copying the run's folder to storage failed: {e}"
        if result.reason:
            reason = f"{result.reason}; {reason}"
        return result.model_copy(update={"status": "failed", "reason": reason})
    return result
