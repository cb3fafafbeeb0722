"""One runner per experiment at a time, on one machine: an exclusive lock on a file in the experiment's
folder (runners that share a PostgreSQL store also hold a lease in it: :mod:`kubebench.store.holding`).

The operating system releases the lock when its process ends, however it ends (SIGKILL, a crash,
the OOM killer). So a runner that holds it knows that a run still marked ``running`` in the store
was left so by a runner that is gone: it was interrupted, and its leftovers may be stopped and the
run redone. ``flock`` works on Linux and macOS, on local folders and on most network file systems
(NFSv4, CephFS). Runners on several machines that share one PostgreSQL store do not share a folder:
there the lock is a lease row in the store, kept alive by a heartbeat (:mod:`kubebench.store.holding`).
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

    def __init__(self, folder: Path, experiment_id: str, create: bool = True, token: str = "") -> None:
        self.path = folder / LOCK_FILE
        self.experiment_id = experiment_id
        #: False: a folder that does not exist is not made (nobody can hold a lock in it): nothing is held.
        self.create = create
        #: written into the file after the pid: the owner token of this runner's store lease
        self.token = token
        #: the token the file held when this lock was taken: the lease owner of a runner that held this
        #: very lock and is gone (it would hold the lock still otherwise)
        self.previous_token = ""
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
            holder = (os.pread(fd, 128, 0).decode(errors="replace").split() or [""])[0]
            os.close(fd)
            raise BusyError(f"experiment {self.experiment_id!r} is being run by another kubebench process"
                            + (f" (pid {holder})" if holder else "") + "; wait for it to end, or stop it") from None
        except OSError:
            pass  # a file system without locks (ENOLCK): run unguarded, as before locks existed
        else:
            words = os.pread(fd, 128, 0).decode(errors="replace").split()
            self.previous_token = words[1] if len(words) > 1 else ""
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {self.token}".strip().encode() + b"\n", 0)
        self._fd = fd
        return self

    def held_elsewhere(self) -> bool:
        """Whether another process holds this lock now (a probe: the lock is taken and let go at once)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False  # no lock file: no runner ever ran it here
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            os.close(fd)  # releases the probe's lock
        return False

    def __exit__(self, *_exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None
