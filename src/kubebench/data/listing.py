"""What a data root holds (``kubebench data ls``): each dataset with its key, size and state, and the
experiments of a store that read it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from .cache import DataCache, complete, entries

if TYPE_CHECKING:
    from ..store.store import Store


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of a data root. ``ready``: marked, for ``key``; else a folder with no (valid) marker."""

    name: str
    ready: bool
    key: str = ""
    checksum: str = ""
    source: str = ""
    origin: str = ""
    files: int = 0
    bytes: int = 0
    prepared_at: float | None = None
    prepare_seconds: float | None = None
    experiments: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready."""
        return asdict(self)


def list_datasets(cache: DataCache, store: Store | None = None) -> list[DatasetEntry]:
    """Every dataset of the data root, by name; with a store, the experiments that read each key."""
    found = []
    for name, marker, stats in entries(cache):
        if marker is None:
            found.append(DatasetEntry(name, False, files=stats.files if stats else 0, bytes=stats.bytes if stats else 0))
            continue
        found.append(DatasetEntry(name, complete(marker, stats), marker.key, marker.checksum, marker.source, marker.origin,
                                  stats.files if stats else 0, stats.bytes if stats else 0, marker.prepared_at,
                                  marker.prepare_seconds))
    if store is not None and found:
        users = store.experiments_using({e.key for e in found if e.key})
        found = [DatasetEntry(**{**e.to_dict(), "experiments": users.get(e.key, [])}) for e in found]
    return found


def partial_downloads(cache: DataCache) -> tuple[int, int]:
    """Downloads begun and not finished (kept to be resumed): how many, and their bytes."""
    folder = cache.meta / "partial"
    files = [p for p in folder.iterdir() if p.is_file()] if folder.is_dir() else []
    return len(files), sum(p.stat().st_size for p in files)
