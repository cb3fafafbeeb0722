"""The browser of a run's files: only what is under the run's folder, whatever the path asks for.

A path is refused (400) when it is absolute, has a ``..`` component, a backslash, a NUL or another
control character, or still holds a percent-encoded byte after the one decoding the URL got (a
double-encoded ``%252e%252e``). A local file is then opened once, component by component from the
run folder's descriptor, each component without following links (``O_NOFOLLOW``); a link met on the
way is read and followed by the same walk only while it stays under the run's folder (403 when it
leads out, 400 for a loop), and the descriptor so opened is what is listed or served. Jobs write
into these folders while they are browsed, so nothing is checked by path and then opened again: a
folder swapped for a link between a check and an open cannot lead out. Remote folders (``s3://…``)
are read through fsspec (:class:`kubebench.storage.Storage`), which has no links.

Which run folder is read at all is :mod:`.run_folder`'s rule (under the dashboard's own roots,
whatever a store row says); the functions here take its :class:`~.run_folder.RunFolder`, or a plain
folder where the caller has its own rule (``kubebench outputs``).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import PathRefused
from .run_folder import RunFolder
from .storage import Storage, is_local, local_path

#: A run's folder: checked by :func:`.run_folder.run_folder`, or a plain path or URL.
Folder = RunFolder | str

_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")
#: Largest remote file served (it is read into memory); local files are streamed whatever their size.
MAX_REMOTE_BYTES = 64 * 1024 * 1024
#: Links followed in one path before it counts as a loop (Linux's own limit).
MAX_LINKS = 40
_OUTSIDE = "path refused: it resolves outside the run's folder"
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO does not hang the open
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK}  # what O_NOFOLLOW answers for a link (Linux, macOS; FreeBSD)


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    is_dir: bool
    size: int


def checked(relative: str) -> str:
    """``relative`` as a clean ``a/b/c`` path, or a 400 saying why it is refused."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in relative):
        raise PathRefused(400, "path refused: it contains a control character")
    if "\\" in relative:
        raise PathRefused(400, "path refused: backslashes are not path separators here")
    if _ENCODED.search(relative):
        raise PathRefused(400, "path refused: it is still percent-encoded after decoding")
    if relative.startswith("/") or PurePosixPath(relative).is_absolute():
        raise PathRefused(400, "path refused: give a path relative to the run's folder")
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathRefused(400, "path refused: '..' would leave the run's folder")
    return "/".join(parts)


def run_root(run_path: str) -> str:
    """The run's folder (local path or URL), or 404 when the run has none yet."""
    if not run_path:
        raise PathRefused(404, "this run has no folder yet (it has not started)")
    return run_path


def _url(run_path: Folder) -> str:
    return run_path.url if isinstance(run_path, RunFolder) else run_path


def is_local_folder(run_path: Folder) -> bool:
    """Whether the run's folder is on this machine (else in remote storage, read through fsspec)."""
    return is_local(_url(run_path))


class Opened:
    """An open file or folder of a run, with its status at open time; closes its descriptor on exit."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.stat = os.fstat(fd)

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.stat.st_mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.stat.st_mode)

    def detach(self) -> int:
        """The descriptor, now owned by the caller (it is not closed on exit)."""
        fd, self.fd = self.fd, -1
        return fd

    def __enter__(self) -> "Opened":
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def open_local(run_path: Folder, relative: str) -> Opened:
    """``relative`` (already :func:`checked`) under the local run folder, opened as described above.

    404 when the run's folder, or the path, is not there; 403 when it leads out; 400 for a loop.
    """
    if isinstance(run_path, RunFolder):
        root, root_fd = Path(run_path.url), run_path.open()
    else:
        root = local_path(run_path)
        try:
            root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise PathRefused(404, f"the run's folder {root} is gone") from None
    try:
        fd = _walk(root_fd, root, relative)
    finally:
        os.close(root_fd)
    opened = Opened(fd)
    if not _still_inside(fd, root):
        opened.__exit__()
        raise PathRefused(403, _OUTSIDE)
    return opened


def _walk(root_fd: int, root: Path, relative: str) -> int:
    """The descriptor of ``relative`` under ``root_fd``: one ``openat`` per component, no link followed
    by the kernel; links are read and walked here, never above the root."""
    todo = deque(p for p in relative.split("/") if p)
    stack = [os.dup(root_fd)]  # descriptors of the folders walked, the root first
    links = 0
    try:
        while todo:
            name = todo.popleft()
            if name in ("", "."):
                continue
            if name == "..":  # only from a link's target
                if len(stack) == 1:
                    raise PathRefused(403, _OUTSIDE)
                os.close(stack.pop())
                continue
            try:
                fd = os.open(name, _OPEN, dir_fd=stack[-1])
            except OSError as e:
                if e.errno not in _LINK_ERRNOS:
                    raise _not_there(relative, e) from None
                links += 1
                if links > MAX_LINKS:
                    raise PathRefused(400, f"path refused: {relative!r} is a loop of symbolic links") from None
                target = _link_target(name, stack[-1], root)
                if target.startswith("/"):  # an absolute link inside the run: walk on from the root
                    while len(stack) > 1:
                        os.close(stack.pop())
                    target = target[1:]
                todo.extendleft(reversed(target.split("/")))
                continue
            stack.append(fd)
            if todo and not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise PathRefused(404, f"no file or folder {relative!r} in this run")
        return stack.pop()
    finally:
        for fd in stack:
            os.close(fd)


def _link_target(name: str, dir_fd: int, root: Path) -> str:
    """A link's target: relative as it is; absolute, as ``/<path under the run's folder>`` or 403."""
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        raise PathRefused(403, _OUTSIDE) from None
    if not target.startswith("/"):
        return target
    for base in {str(root), os.path.realpath(root)}:
        if target == base or target.startswith(base.rstrip("/") + "/"):
            return "/" + target[len(base):].lstrip("/")
    raise PathRefused(403, _OUTSIDE)


def _still_inside(fd: int, root: Path) -> bool:
    """Whether the open file is still under the run's folder (a folder moved out while it was walked
    is not); where ``/proc`` is missing the walk's own rules stand alone."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return True
    real = os.path.realpath(root)
    return where == real or where.startswith(real.rstrip("/") + "/")


def _not_there(relative: str, error: OSError) -> PathRefused:
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return PathRefused(404, f"no file or folder {relative!r} in this run")
    return PathRefused(403, f"path refused: {relative!r} cannot be read ({error.strerror})")


def list_folder(run_path: Folder, relative: str) -> list[Entry]:
    """Folders first, then files, of the folder ``relative`` of the run."""
    relative = checked(relative)
    run_root(_url(run_path))
    local = is_local_folder(run_path)
    entries = _list_local(run_path, relative) if local else _list_remote(_url(run_path), relative)
    return sorted(entries, key=lambda e: (not e.is_dir, e.name))


def _list_local(run_path: Folder, relative: str) -> list[Entry]:
    prefix = f"{relative}/" if relative else ""
    with open_local(run_path, relative) as folder:
        if not folder.is_dir:
            raise PathRefused(404, f"no folder {relative!r} in this run")
        found = (_entry(run_path, folder.fd, prefix, name) for name in os.listdir(folder.fd))
        return [entry for entry in found if entry is not None]


def _entry(run_path: Folder, folder_fd: int, prefix: str, name: str) -> Entry | None:
    """A folder or a regular file as listed; a link as what it leads to, when the browser would open
    it (a link out of the run, or to nothing, is not shown); anything else (a FIFO…) is not shown."""
    try:
        status = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except OSError:
        return None  # removed meanwhile
    if stat.S_ISLNK(status.st_mode):
        try:
            with open_local(run_path, prefix + name) as target:
                status = target.stat
        except PathRefused:
            return None
    if stat.S_ISDIR(status.st_mode):
        return Entry(name, prefix + name, True, 0)
    if stat.S_ISREG(status.st_mode):
        return Entry(name, prefix + name, False, status.st_size)
    return None


def local_files(run_path: Folder, relative: str) -> list[tuple[str, int]]:
    """Every regular file at or below ``relative`` of a local run folder: (path in the run, size), sorted.

    Folders are descended into only when they are folders, never through a link; a link is listed as
    the file it leads to when that file is in the run (as the browser lists it), else left out."""
    relative = checked(relative)
    found: list[tuple[str, int]] = []
    todo = [relative]
    while todo:
        here = todo.pop()
        with open_local(run_path, here) as opened:
            if opened.is_file:
                found.append((here, opened.stat.st_size))
                continue
            if not opened.is_dir:
                continue
            prefix = f"{here}/" if here else ""
            for name in os.listdir(opened.fd):
                status = _lstat(name, opened.fd)
                if status is None:
                    continue
                if stat.S_ISDIR(status.st_mode):
                    todo.append(prefix + name)
                elif stat.S_ISREG(status.st_mode) or stat.S_ISLNK(status.st_mode):
                    entry = _entry(run_path, opened.fd, prefix, name)
                    if entry is not None and not entry.is_dir:
                        found.append((entry.path, entry.size))
    return sorted(found)


def _lstat(name: str, folder_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except OSError:
        return None  # removed meanwhile


def _list_remote(run_path: str, relative: str) -> list[Entry]:
    prefix = f"{relative}/" if relative else ""
    # only what is below the folder: fsspec lists a file named ``relative`` as itself, and it is no folder
    files = [(name[len(prefix):], size) for name, size in Storage(run_path).files(relative) if name.startswith(prefix)]
    if not files and relative:
        raise PathRefused(404, f"no folder {relative!r} in this run")
    entries: dict[str, Entry] = {}
    for rest, size in files:
        head, _, tail = rest.partition("/")
        if head and head not in entries:
            entries[head] = Entry(head, prefix + head, bool(tail), 0 if tail else size)
    return list(entries.values())


def read_remote(run_path: Folder, relative: str) -> bytes:
    """The bytes of a remote run file (404 when it is not a file, 413 when too large to serve)."""
    storage = Storage(_url(run_path))
    if not relative or not storage.is_file(relative):
        raise PathRefused(404, f"no file {relative!r} in this run")
    size = dict(storage.files(relative)).get(relative, 0)
    if size > MAX_REMOTE_BYTES:
        raise PathRefused(413, f"{relative} is larger than {MAX_REMOTE_BYTES // 2**20} MiB: download it from the storage")
    return storage.read(relative)
