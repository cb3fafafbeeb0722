"""The browser of a run's files: only what is under the run's folder, whatever the path asks for.

A path is refused (400) when it is absolute, has a ``..`` component, a backslash, a NUL or another
control character, or still holds a percent-encoded byte after the one decoding the URL got (a
double-encoded ``%252e%252e``). Local paths are then resolved, symlinks included, and the real path
must lie inside the real path of the run's folder (403 otherwise). Remote folders (``s3://…``) are
read through fsspec (:class:`kubebench.storage.Storage`), which has no symlinks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from fastapi import HTTPException

from ..storage.storage import Storage, is_local, local_path

_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")
#: Largest remote file served (it is read into memory); local files are streamed whatever their size.
MAX_REMOTE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    is_dir: bool
    size: int


def checked(relative: str) -> str:
    """``relative`` as a clean ``a/b/c`` path, or a 400 saying why it is refused."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in relative):
        raise HTTPException(400, "path refused: it contains a control character")
    if "\\" in relative:
        raise HTTPException(400, "path refused: backslashes are not path separators here")
    if _ENCODED.search(relative):
        raise HTTPException(400, "path refused: it is still percent-encoded after decoding")
    if relative.startswith("/") or PurePosixPath(relative).is_absolute():
        raise HTTPException(400, "path refused: give a path relative to the run's folder")
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise HTTPException(400, "path refused: '..' would leave the run's folder")
    return "/".join(parts)


def run_root(run_path: str) -> str:
    """The run's folder (local path or URL), or 404 when the run has none yet."""
    if not run_path:
        raise HTTPException(404, "this run has no folder yet (it has not started)")
    return run_path


def local_target(run_path: str, relative: str) -> Path:
    """The real local path of ``relative`` under the run's folder; 403 when it resolves outside."""
    root = local_path(run_path)
    if not root.is_dir():
        raise HTTPException(404, f"the run's folder {root} is gone")
    target = (root / relative).resolve()
    if target != root and not target.is_relative_to(root):
        raise HTTPException(403, "path refused: it resolves outside the run's folder")
    return target


def list_folder(run_path: str, relative: str) -> list[Entry]:
    """Folders first, then files, of the folder ``relative`` of the run."""
    relative = checked(relative)
    run_root(run_path)
    entries = _list_local(run_path, relative) if is_local(run_path) else _list_remote(run_path, relative)
    return sorted(entries, key=lambda e: (not e.is_dir, e.name))


def _list_local(run_path: str, relative: str) -> list[Entry]:
    folder = local_target(run_path, relative)
    if not folder.is_dir():
        raise HTTPException(404, f"no folder {relative!r} in this run")
    root = local_path(run_path)
    entries = []
    for child in folder.iterdir():
        real = child.resolve()
        if not real.is_relative_to(root) or not real.exists():
            continue  # a link leading out of the run (or nowhere) is not shown
        prefix = f"{relative}/" if relative else ""
        entries.append(Entry(child.name, prefix + child.name, real.is_dir(), 0 if real.is_dir() else real.stat().st_size))
    return entries


def _list_remote(run_path: str, relative: str) -> list[Entry]:
    files = Storage(run_path).files(relative)
    prefix = f"{relative}/" if relative else ""
    if not files and relative:
        raise HTTPException(404, f"no folder {relative!r} in this run")
    entries: dict[str, Entry] = {}
    for name, size in files:
        rest = name[len(prefix):] if name.startswith(prefix) else name
        head, _, tail = rest.partition("/")
        if head and head not in entries:
            entries[head] = Entry(head, prefix + head, bool(tail), 0 if tail else size)
    return list(entries.values())


def read_remote(run_path: str, relative: str) -> bytes:
    """The bytes of a remote run file (404 when it is not a file, 413 when too large to serve)."""
    storage = Storage(run_path)
    if not relative or not storage.is_file(relative):
        raise HTTPException(404, f"no file {relative!r} in this run")
    size = dict(storage.files(relative)).get(relative, 0)
    if size > MAX_REMOTE_BYTES:
        raise HTTPException(413, f"{relative} is larger than {MAX_REMOTE_BYTES // 2**20} MiB: download it from the storage")
    return storage.read(relative)
