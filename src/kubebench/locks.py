"""One runner per experiment at a time: an exclusive lock on a file in the experiment's folder.

The operating system releases the lock when its process ends, however it ends (SIGKILL, a crash,
the OOM killer). So a runner that holds it knows that a run still marked ``running`` in the store
was left so by a runner that is gone: it was interrupted, and its leftovers may be stopped and the
run redone. ``flock`` works on Linux and macOS, on local folders and on most network file systems
(NFSv4, CephFS); runners on several machines sharing one PostgreSQL store need the experiments
folder on one such shared file system for the lock to cover them.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .errors import BusyError, StorageError

LOCK_FILE = ".kubebench-runner.lock"


class ExperimentLock:
    """``with ExperimentLock(folder, experiment_id):`` — held while the experiment runs, and while it is
    deleted (so that a delete and a runner never overlap). BusyError when another process holds it."""

    def __init__(self, folder: Path, experiment_id: str, create: bool = True) -> None:
        self.path = folder / LOCK_FILE
        self.experiment_id = experiment_id
        #: False: a folder that does not exist is not made (nobody can hold a lock in it): nothing is held.
        self.create = create
        self._fd: int | None = None

    def __enter__(self) -> "ExperimentLock":
        if not self.create and not self.path.parent.is_dir():
            return self
        try:
            if self.create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: jobs write into this folder, and a lock file swapped for a link must not make
            # the runner truncate the link's target. Not inherited by the jobs (O_CLOEXEC).
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise StorageError(f"cannot write the experiment's folder {self.path.parent}: {e.strerror or e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise BusyError(f"experiment {self.experiment_id!r} is being run by another kubebench process"
                            + (f" (pid {holder})" if holder else "") + "; wait for it to end, or stop it") from None
        except OSError:
            pass  # a file system without locks (ENOLCK): run unguarded, as before locks existed
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None
