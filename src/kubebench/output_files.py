"""Files a workload wrote, read safely: never through a link, never waiting on a FIFO, never past a limit.

At the package's root, with nothing of kubebench but errors and limits, so that collect, serving and
the runner read run outputs the same way.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path
from typing import BinaryIO, TextIO

from .errors import PostprocessError
from .limits import Limit


def open_output(path: Path) -> BinaryIO:
    """A file a workload wrote, opened for reading; PostprocessError when it is no regular file.

    Opened without waiting and checked on the descriptor it returns: a FIFO a workload left as
    ``result.json`` or a log would otherwise keep the runner waiting for a writer forever, its run
    ``running`` and its experiment locked. A link is refused, not followed: a workload running as
    another user (a pod on a shared volume) could otherwise have the runner read a file of the
    runner's machine into the run's stored log tail, which the dashboard shows without a token."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PostprocessError(f"{path.parent.name}/{path.name} is a symbolic link, not a regular file") from None
        if e.errno == errno.ENXIO:  # a socket (opening one fails) or a device with nothing behind it
            raise PostprocessError(f"{path.parent.name}/{path.name} is {_kind(os.lstat(path).st_mode)}, "
                                   "not a regular file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise PostprocessError(f"{path.parent.name}/{path.name} is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_output_text(path: Path) -> TextIO:
    """:func:`open_output` as UTF-8 text, undecodable bytes replaced."""
    return io.TextIOWrapper(open_output(path), encoding="utf-8", errors="replace")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a socket" if stat.S_ISSOCK(mode) else "a device file"


def read_output(path: Path, limit: Limit) -> bytes:
    """The bytes of a file a workload wrote (opened as :func:`open_output`); PostprocessError when it
    is larger than ``limit``: a run fails rather than keep part of what it reported."""
    most = limit.value()
    with open_output(path) as f:
        raw = f.read(most + 1)
    if len(raw) > most:
        raise PostprocessError(f"{path.parent.name}/{path.name} is larger than {most:,} bytes (the limit; "
                               f"{limit.env} changes it)")
    return raw
