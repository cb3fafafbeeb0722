"""The files of a spec's folder that go with it to a cluster: the spec and every text file beside it
(parameters, templates, scripts), as the data of one ConfigMap (``kubebench deploy manifests --spec``,
and the Kubernetes backend when it gives job pods the spec's folder as their working directory).

What leaves the machine is decided before anything is read, from names and ``lstat`` alone:

- a symbolic link is never followed out of the folder: a link to a file outside it (a cloned
  repository may hold ``creds -> ~/.aws/credentials``) is refused, naming the link; a link to a
  folder is left out, as folders are; a link that stays inside the folder ships the file it names;
- hidden files, compiled Python, SQLite stores, binary files (a NUL byte in their first 8 KiB, as
  git decides) and names a ConfigMap cannot hold are left out;
- the rest is counted as the API server stores it (each name, each size from ``stat``, a few bytes
  per entry, the metadata) and refused past ``SPEC_FILES_MAX_BYTES`` or ``SPEC_FILES_MAX_COUNT``
  files, before any file is read whole.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import SpecError

#: What the ConfigMap may take in all, counted as the API server stores it: every file's name and
#: bytes, ``ENTRY_BYTES`` per file and ``METADATA_BYTES``. The API server refuses more than 1 MiB of
#: values, and etcd an object over 1.5 MiB (names and framing included).
SPEC_FILES_MAX_BYTES = 900_000
#: Files a spec's folder may ship: a spec, its parameters, templates and scripts are a handful.
SPEC_FILES_MAX_COUNT = 1_000
#: Bytes counted for each file besides its name and content (the entry's framing in storage) …
ENTRY_BYTES = 16
#: … and for the ConfigMap's metadata (name, labels, kind).
METADATA_BYTES = 1_024
#: A ConfigMap's keys (``IsConfigMapKey``): a file named otherwise cannot be one of its files.
_KEY = re.compile(r"^[-._a-zA-Z0-9]{1,253}$")
#: Bytes looked at to tell a binary file (a NUL among them), which is not part of a spec.
_PEEK = 8_192


@dataclass(frozen=True)
class _File:
    """A file to ship: its key, the regular file read (itself, or what its link names inside the
    folder) and its size when counted."""

    name: str
    path: Path
    size: int


def spec_files_of(spec: Path) -> dict[str, str]:
    """The spec and every text file beside it, by name (the spec first). A link out of the folder,
    more than ``SPEC_FILES_MAX_COUNT`` files or ``SPEC_FILES_MAX_BYTES`` in all is a SpecError,
    raised before any file is read whole."""
    folder = spec.parent.resolve()
    found = _listed(folder, spec.name)
    texts = [f for f in found if f.name == spec.name or not _binary(f)]
    _check_size(folder, texts)
    files: dict[str, str] = {}
    for f in texts:
        text = _read(f, is_spec=f.name == spec.name)
        if text is not None:
            files[f.name] = text
    return files


def shipped_size(files: dict[str, str]) -> int:
    """The bytes ``files`` take in a ConfigMap, counted as :func:`spec_files_of` counts them."""
    return METADATA_BYTES + sum(len(k.encode()) + len(v.encode()) + ENTRY_BYTES for k, v in files.items())


def _left_out(name: str) -> bool:
    return name.startswith(".") or name.endswith((".pyc", ".db")) or not _KEY.match(name)


def _listed(folder: Path, spec_name: str) -> list[_File]:
    """The spec and the files beside it that may ship, from names and ``lstat`` (nothing read)."""
    found: dict[str, _File] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            is_spec = entry.name == spec_name
            if not is_spec and _left_out(entry.name):
                continue
            target = _regular_target(folder, Path(entry.path))
            if target is None:
                if is_spec:
                    raise SpecError(f"{entry.path}: the spec is not a file")
                continue
            found[entry.name] = _File(entry.name, *target)
            if len(found) > SPEC_FILES_MAX_COUNT:
                raise SpecError(f"{folder}: the spec's folder holds more than {SPEC_FILES_MAX_COUNT:,} files to ship "
                                "in its ConfigMap: keep only the spec, its parameters, templates and scripts there")
    if spec_name not in found:
        raise SpecError(f"{folder / spec_name}: cannot read the spec: no such file")
    return [found[spec_name]] + [found[name] for name in sorted(found) if name != spec_name]


def _regular_target(folder: Path, path: Path) -> tuple[Path, int] | None:
    """The regular file ``path`` is, or names by a link that stays in ``folder``, with its size;
    None for what is not shipped (folders, devices, a link to a folder or to a hidden file).
    A link leading out of the folder (to a file, or to nothing) is a SpecError naming it."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        target = Path(os.path.realpath(path))
        if not target.is_relative_to(folder):
            if target.is_dir():
                return None  # a folder beside the spec (data, a virtual environment) is not shipped anyway
            raise SpecError(f"{path}: a symbolic link to {target}, outside the spec's folder: kubebench never ships "
                            "a file from outside the folder to the cluster (a link in a cloned repository could send "
                            "your credentials); copy the file into the folder, or remove the link")
        if any(part.startswith(".") for part in target.relative_to(folder).parts):
            return None  # hidden files stay out, whatever name leads to them
        try:
            info = target.lstat()
        except FileNotFoundError:
            return None
        path = target
    return (path, info.st_size) if stat.S_ISREG(info.st_mode) else None


def _binary(f: _File) -> bool:
    """Whether the file's first bytes hold a NUL (a binary file: not part of a spec)."""
    try:
        with _open(f.path) as handle:
            return b"\0" in handle.read(_PEEK)
    except OSError:
        return True  # unreadable: not shipped


def _check_size(folder: Path, files: list[_File]) -> None:
    total = METADATA_BYTES + sum(len(f.name.encode()) + f.size + ENTRY_BYTES for f in files)
    if total > SPEC_FILES_MAX_BYTES:
        largest = ", ".join(f"{f.name} ({f.size:,} bytes)" for f in sorted(files, key=lambda f: -f.size)[:3])
        raise SpecError(f"{folder}: the spec's folder holds {total:,} bytes of files to ship ({len(files)} files; "
                        f"largest: {largest}), more than a ConfigMap takes ({SPEC_FILES_MAX_BYTES:,}, names "
                        "counted): keep only the spec, its parameters, templates and scripts there")


def _read(f: _File, is_spec: bool) -> str | None:
    """The file's text, at most the size counted; None for a file that is not UTF-8 text."""
    try:
        with _open(f.path) as handle:
            data = handle.read(f.size + 1)
    except OSError as e:
        if is_spec:
            raise SpecError(f"{f.path}: cannot read the spec: {e}") from e
        return None
    if len(data) > f.size:
        raise SpecError(f"{f.path}: the file grew while kubebench read it ({f.size:,} bytes counted); try again")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        if is_spec:
            raise SpecError(f"{f.path}: the spec is not UTF-8 text") from e
        return None


def _open(path: Path) -> BinaryIO:
    """``path`` opened for reading without following a link (``O_NOFOLLOW``) and without waiting on a
    FIFO put in a file's place since it was listed."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
