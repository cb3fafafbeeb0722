"""The datasets kept in a data root, each in ``<root>/<name>/``, and what says they are ready.

``<root>/.kubebench/<name>.json`` (a :class:`Marker`) says that the folder holds the data of one
key, complete: it is written last, by an atomic rename, once the data is all there, and removed
first, before a folder is emptied for other data. So a folder without its marker, or whose marker
names another key, is never read as ready, however its preparation ended (a crash, a full disk,
SIGKILL). ``<name>.lock`` is locked (``flock``) by whoever checks or prepares the dataset: two
experiments needing it at once prepare it once, and the operating system releases the lock of a
process that dies, so a killed holder's lock is taken over by the next one.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import ids
from ..errors import BusyError, StorageError

log = logging.getLogger("kubebench")
#: The folder of markers, locks and partial downloads, in the data root.
META = ".kubebench"
#: Seconds between two tries of a lock another process holds.
LOCK_POLL_S = 0.2


class Marker(BaseModel):
    """What a ready dataset holds and how it was made (a stored format: versioned)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["kubebench-dataset"] = "kubebench-dataset"
    version: Literal[1] = 1
    name: str
    key: str
    #: The fetched file's SHA-256, or ``tree-sha256:…`` of every file a prepare step wrote.
    checksum: str
    source: Literal["url", "prepare"]
    #: The URL, or the command line.
    origin: str
    files: int
    bytes: int
    prepared_at: float
    prepare_seconds: float
    #: The experiment that prepared it.
    experiment_id: str = ""


@dataclass(frozen=True)
class TreeStats:
    """Files under a folder and their total size."""

    files: int
    bytes: int


def tree_stats(folder: Path) -> TreeStats:
    """Count the regular files under ``folder`` and add up their sizes (``os.scandir``: one stat each)."""
    files = size = 0
    stack = [str(folder)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    files += 1
                    size += entry.stat(follow_symlinks=False).st_size
    return TreeStats(files, size)


def tree_digest(folder: Path) -> str:
    """``tree-sha256:<hex>``: the SHA-256 of every file's relative path and contents, in path order."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        digest.update(b"\0")
    return "tree-sha256:" + digest.hexdigest()


def complete(marker: Marker, found: TreeStats | None) -> bool:
    """Whether a folder holds what its marker counted: as many files, as many bytes."""
    return found is not None and (found.files, found.bytes) == (marker.files, marker.bytes)


class DataCache:
    """The datasets of one data root (a local folder: on Kubernetes, where kubebench sees the claim)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.meta = self.root / META

    def folder(self, name: str) -> Path:
        """The dataset's folder (``KUBEBENCH_DATA_PATH`` as kubebench sees it)."""
        return self.root / ids.check(name, "dataset name")

    def partial(self, key: str) -> Path:
        """Where the download of ``key`` accumulates until it is verified (kept for resuming)."""
        return self.meta / "partial" / key

    def marker(self, name: str) -> Marker | None:
        """The dataset's marker; None when it has none (or an unreadable one: not ready either)."""
        path = self.meta / f"{name}.json"
        try:
            return Marker.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, ValueError) as e:
            log.warning("dataset %s: ignoring its unreadable marker %s: %s", name, path, e)
            return None

    def ready(self, name: str, key: str) -> Marker | None:
        """The marker when the folder holds the data of ``key``, complete: the marker names the key,
        and the files it counted are there with their sizes (one ``stat`` each, no reading)."""
        marker = self.marker(name)
        if marker is None or marker.key != key:
            return None
        folder = self.folder(name)
        try:
            found = tree_stats(folder)
        except OSError:
            return None
        if not complete(marker, found):
            log.warning("dataset %s: %s holds %d files (%d bytes), its marker %d (%d bytes): preparing it again",
                        name, folder, found.files, found.bytes, marker.files, marker.bytes)
            return None
        return marker

    def invalidate(self, name: str) -> None:
        """Unmark the dataset, then empty its folder (in that order: see the module's docstring)."""
        folder = self.folder(name)
        with _storage_errors(f"dataset {name}: cannot clear {folder}"):
            (self.meta / f"{name}.json").unlink(missing_ok=True)
            if folder.is_symlink() or folder.is_file():
                folder.unlink()
            elif folder.exists():
                shutil.rmtree(folder)

    def mark(self, marker: Marker) -> None:
        """Mark the dataset ready: its marker written to a temporary file, then renamed into place."""
        path = self.meta / f"{marker.name}.json"
        tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
        with _storage_errors(f"dataset {marker.name}: cannot mark it ready in {self.meta}"):
            self.meta.mkdir(parents=True, exist_ok=True)
            tmp.write_text(marker.model_dump_json(indent=2), encoding="utf-8")
            os.replace(tmp, path)

    def names(self) -> list[str]:
        """Datasets with a marker, and folders without one (not ready), sorted."""
        marked = {p.stem for p in self.meta.glob("*.json")} if self.meta.is_dir() else set()
        folders = {p.name for p in self.root.iterdir() if p.is_dir() and ids.is_valid(p.name)} \
            if self.root.is_dir() else set()
        return sorted(marked | folders)

    def lock(self, name: str, holder: str = "", wait: bool = True,
             waiting: Callable[[str], None] | None = None) -> "DataLock":
        """The dataset's lock (``with cache.lock(name): …``)."""
        return DataLock(self.meta / f"{ids.check(name, 'dataset name')}.lock", name, holder, wait, waiting)

    def remove(self, name: str) -> bool:
        """Delete the dataset (marker, then folder); BusyError while another process holds its lock."""
        with self.lock(name, wait=False):
            marker, existed = self.marker(name), self.folder(name).exists()
            self.invalidate(name)
            if marker is not None:
                self.partial(marker.key).unlink(missing_ok=True)
            return existed or marker is not None


class DataLock:
    """An exclusive ``flock`` on a dataset's lock file, waited for (polling, so Ctrl-C works) or not."""

    def __init__(self, path: Path, name: str, holder: str, wait: bool,
                 waiting: Callable[[str], None] | None) -> None:
        self.path, self.name, self.holder, self.wait = path, name, holder, wait
        self.waiting = waiting or (lambda text: log.warning("%s", text))
        self._fd: int | None = None

    def __enter__(self) -> "DataLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise StorageError(f"dataset {self.name}: cannot write its lock {self.path}: {e.strerror or e}") from e
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                other = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another kubebench process"
                if not self.wait:
                    os.close(fd)
                    raise BusyError(f"dataset {self.name!r} is being prepared by {other}; wait for it to end") from None
                if not told:
                    self.waiting(f"dataset {self.name}: waiting for {other}, which is preparing it")
                    told = True
                time.sleep(LOCK_POLL_S)
            except OSError:
                break  # a file system without locks (ENOLCK): unguarded, as runs are then
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{self.holder or 'kubebench'} (pid {os.getpid()})\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """OSError → StorageError with ``what`` and the system's reason (a full disk, a read-only folder)."""
    try:
        yield
    except OSError as e:
        raise StorageError(f"{what}: {e.strerror or e}") from e


def entries(cache: DataCache) -> Iterator[tuple[str, Marker | None, TreeStats | None]]:
    """Every dataset of the root: name, marker (None: not ready), what its folder holds (None: no folder)."""
    for name in cache.names():
        folder = cache.root / name
        try:
            stats = tree_stats(folder) if folder.is_dir() else None
        except OSError:
            stats = None
        yield name, cache.marker(name), stats
