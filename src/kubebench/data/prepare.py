"""The data step of an experiment: every dataset its trials read, made ready before the first run.

For each dataset, in the spec's order: its cache key (resolving a checksums file, hashing a step's
inputs), then, under the dataset's lock, the cache checked — ready for that key: reused; else the
folder is unmarked and emptied, the file fetched (or the step run as a job of the backend), and the
folder marked ready. Then the datasets and the time the step took are recorded with the experiment,
apart from its runs' times. Any failure is one DataError (or StorageError) naming the dataset: the
experiment stops before its runs, and nothing half-made is marked ready. A file is downloaded and
verified before the folder it replaces is emptied: a fetch that fails leaves the old data in place.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..backends.base import Backend
from ..errors import StorageError, StoreError
from ..store.data_records import DataRecord, changed_message
from .cache import DataCache, Marker, tree_digest, tree_stats
from .fetch import download, expected_sha256, unpack
from .keys import fetch_key, step_key
from .plan import DataItem, Fetch, plan_data
from .progress import Meter, announce, meter
from .steps import reclaim, run_step, step_paths

if TYPE_CHECKING:
    from ..experiment import Experiment
    from ..store.store import Store

log = logging.getLogger("kubebench")


@dataclass(frozen=True)
class Keyed:
    """A dataset with its cache key (and, for a fetched file, the checksum it must have)."""

    item: DataItem
    key: str
    sha256: str | None = None


def data_root(experiment: Experiment) -> Path:
    """Where the experiment's runs find their data, as kubebench sees it (``KUBEBENCH_DATA_ROOT``)."""
    return Path(experiment.local_paths(experiment.plan.runs[0]).data_root)


def prepare_data(experiment: Experiment, backend: Backend, store: Store) -> list[DataRecord]:
    """Make every dataset of the experiment ready and record them (see the module's docstring)."""
    items = plan_data(experiment.loaded.spec.data, experiment.plan.trials)
    if not items:
        return []
    started = time.monotonic()
    keyed = [key_of(item, experiment.loaded.base_dir) for item in items]
    _check_unchanged(store, experiment.plan.experiment_id, keyed)
    cache = DataCache(data_root(experiment))
    found = [ready(k, cache, experiment, backend, meter()) for k in keyed]
    store.record_data(experiment.plan.experiment_id, found, time.monotonic() - started)
    return found


def key_of(item: DataItem, base_dir: Path) -> Keyed:
    """The dataset's cache key (see kubebench.data.keys)."""
    source = item.source
    if isinstance(source, Fetch):
        sha256 = expected_sha256(source, base_dir)
        return Keyed(item, fetch_key(source, sha256), sha256)
    return Keyed(item, step_key(source, base_dir))


def _check_unchanged(store: Store, experiment_id: str, keyed: list[Keyed]) -> None:
    """A resumed experiment reads the data its first runs read: refused before anything is prepared."""
    known = {r.name: r.key for r in store.data(experiment_id)}
    for k in keyed:
        if known.get(k.item.name, k.key) != k.key:
            raise StoreError(changed_message(experiment_id, k.item.name))


def ready(keyed: Keyed, cache: DataCache, experiment: Experiment, backend: Backend, progress: Meter) -> DataRecord:
    """The dataset ready in the cache, reused or prepared under its lock; its record for the store."""
    item, started = keyed.item, time.monotonic()
    exp_id = experiment.plan.experiment_id
    with cache.lock(item.name, holder=f"experiment {exp_id}"):
        marker = cache.ready(item.name, keyed.key)
        prepared = marker is None
        if marker is None:
            announce(f"dataset {item.name}: preparing ({item.source.origin})")
            marker = _prepare(keyed, cache, experiment, backend, progress)
            cache.mark(marker)
            announce(f"dataset {item.name}: ready in {marker.prepare_seconds:.1f} s ({marker.files:,} files, "
                     f"{marker.bytes:,} bytes)")
        else:
            announce(f"dataset {item.name}: cached (key {keyed.key}, {marker.files:,} files)")
    return DataRecord(experiment_id=exp_id, name=item.name, key=keyed.key, checksum=marker.checksum,
                      source=marker.source, origin=marker.origin, trials=list(item.trials), files=marker.files,
                      bytes=marker.bytes, seconds=time.monotonic() - started, prepared=prepared,
                      recorded_at=time.time())


def _prepare(keyed: Keyed, cache: DataCache, experiment: Experiment, backend: Backend, progress: Meter) -> Marker:
    """Fetch or make the dataset into its emptied folder; on any failure the folder is removed again.
    A file is downloaded and verified before the folder is touched: a URL that fails keeps what was there."""
    item, source = keyed.item, keyed.item.source
    folder = cache.folder(item.name)
    started = time.monotonic()
    if isinstance(source, Fetch):
        assert keyed.sha256 is not None
        download(source, experiment.loaded.base_dir, cache.partial(keyed.key), keyed.sha256, progress)
    state = cache.meta / f"{item.name}.step.json"
    reclaim(backend, state, item.name)  # what a preparer killed mid-step left running goes first
    cache.invalidate(item.name)
    try:
        try:
            if isinstance(source, Fetch):
                folder.mkdir(parents=True)
                unpack(source, cache.partial(keyed.key), folder)
                checksum = f"sha256:{keyed.sha256}"
            else:
                run_step(experiment, backend, source, step_paths(experiment, cache.root, source, keyed.key), state)
                checksum = tree_digest(folder)
            stats = tree_stats(folder)
        except OSError as e:
            raise StorageError(f"dataset {item.name}: cannot write or read {folder}: {e.strerror or e}") from e
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # not marked: never read as ready; its space given back
        raise
    return Marker(name=item.name, key=keyed.key, checksum=checksum, source="url" if isinstance(source, Fetch) else "prepare",
                  origin=source.origin, files=stats.files, bytes=stats.bytes, prepared_at=time.time(),
                  prepare_seconds=time.monotonic() - started, experiment_id=experiment.plan.experiment_id)
