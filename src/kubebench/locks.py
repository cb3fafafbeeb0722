"""One runner per experiment at a time: an exclusive lock on a file in the experiment's folder and,
on a store that runners on several machines share (PostgreSQL), a lease in the store itself.

The operating system releases the lock when its process ends, however it ends (SIGKILL, a crash,
the OOM killer). So a runner that holds it knows that a run still marked ``running`` in the store
was left so by a runner that is gone: it was interrupted, and its leftovers may be stopped and the
run redone. ``flock`` works on Linux and macOS, on local folders and on most network file systems
(NFSv4, CephFS). Runners on several machines that share one PostgreSQL store do not share a folder:
there the lock is a lease row in the store (:mod:`kubebench.store.leases`), kept alive by a heartbeat
(:class:`StoreLease`) and taken over once it has expired. :func:`hold_experiment` takes both;
:func:`runner_alive` says whether an experiment has a runner now (the dashboard asks it before it lets
a dead runner's experiment be cancelled or deleted).
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import BusyError, LeaseLost, StorageError, StoreError

if TYPE_CHECKING:
    from .settings import Settings
    from .store.leases import Lease
    from .store.store import Store

LOCK_FILE = ".kubebench-runner.lock"
#: Seconds a store lease lasts without a heartbeat; the holder renews it every third of that. A runner
#: that dies is taken over this long after its last heartbeat (at once by a runner of the same folder).
LEASE_SECONDS = 30.0
LEASE_ENV = "KUBEBENCH_LEASE_SECONDS"
log = logging.getLogger(__name__)


def lease_seconds() -> float:
    """How long a lease lasts: ``$KUBEBENCH_LEASE_SECONDS``, else :data:`LEASE_SECONDS`."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    if not raw:
        return LEASE_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0.5 <= value <= 86_400:
        raise StoreError(f"{LEASE_ENV}={raw!r}: expected seconds between 0.5 and 86400")
    return value


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


class StoreLease:
    """``with StoreLease(store, experiment_id, owner):`` — the experiment's lease in a shared store,
    renewed by a heartbeat thread (nothing at all on a store that only this machine uses: SQLite).

    BusyError when a live runner holds it; a lease that expired, or whose owner is ``dead_owner``, is
    taken over (logged). When a heartbeat finds the lease taken over (this runner's heartbeats stopped
    reaching the store for longer than the lease lasts), ``on_lost`` is called (the runner cancels its
    runs in flight), the store refuses every further write (LeaseLost), and leaving the block raises
    LeaseLost.
    """

    def __init__(self, store: Store, experiment_id: str, owner: str, dead_owner: str = "",
                 on_lost: Callable[[], None] | None = None, ttl: float | None = None) -> None:
        self.store, self.experiment_id, self.owner = store, experiment_id, owner
        self.dead_owner = dead_owner or None
        self.on_lost = on_lost
        self.ttl = ttl if ttl is not None else lease_seconds()
        self.lost = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StoreLease:
        if not self.store.shared:
            return self
        taken, other = self.store.acquire_lease(self.experiment_id, self.owner, socket.gethostname(), os.getpid(),
                                                self.ttl, self.dead_owner)
        if not taken:
            assert other is not None
            raise BusyError(f"experiment {self.experiment_id!r} is being run by another kubebench runner "
                            f"({other.describe()}); wait for it to end, or stop it (a runner that died is "
                            f"taken over {self.ttl:g} s after its last heartbeat)")
        if other is not None:
            log.warning("experiment %s: took over the lease of a runner that is gone (%s)", self.experiment_id,
                        other.describe())
        self._thread = threading.Thread(target=self._beat, name="kubebench-lease", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                if self.store.renew_lease(self.experiment_id, self.owner, self.ttl):
                    continue
            except StoreError as e:  # the store is unreachable now: the next beat tries again
                log.warning("experiment %s: could not renew the lease: %s", self.experiment_id, e)
                continue
            holder = self._holder()
            self.lost = (f"experiment {self.experiment_id!r} was taken over by another runner ({holder}): this "
                         "runner's heartbeats did not reach the store in time; it stopped its runs")
            log.error("%s", self.lost)
            if self.on_lost is not None:
                self.on_lost()
            return

    def _holder(self) -> str:
        try:
            lease = self.store.lease(self.experiment_id)
        except StoreError:
            return "unknown"
        return lease.describe() if lease is not None else "its lease was removed"

    def __exit__(self, exc_type: object, exc: object, _tb: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        try:
            self.store.release_lease(self.experiment_id, self.owner)
        except StoreError as e:  # the lease expires by itself
            log.warning("experiment %s: could not release the lease: %s", self.experiment_id, e)
        if self.lost and not isinstance(exc, LeaseLost):
            raise LeaseLost(self.lost)


@contextmanager
def hold_experiment(store: Store, folder: Path, experiment_id: str, on_lost: Callable[[], None] | None = None,
                    create: bool = True) -> Iterator[None]:
    """The experiment's lock file in ``folder`` and, on a shared store, its lease (BusyError when another
    runner has either). A lease whose owner held this very lock file, which is free now, is taken over
    at once: that runner is gone."""
    owner = uuid.uuid4().hex
    with ExperimentLock(folder, experiment_id, create=create, token=owner) as lock:
        with StoreLease(store, experiment_id, owner, lock.previous_token, on_lost):
            yield


def experiment_runner(store: Store, settings: Settings, experiment_id: str) -> Lease | str | None:
    """Who runs the experiment now: the live lease of a shared store, ``"this machine"`` when a process
    here holds its lock file, None when no runner runs it (it may still be marked ``running``: its
    runner died)."""
    if store.shared:
        lease = store.lease(experiment_id)
        if lease is not None and lease.alive:
            return lease
    if ExperimentLock(settings.experiments_root / experiment_id, experiment_id, create=False).held_elsewhere():
        return "this machine"
    return None


def runner_alive(store: Store, settings: Settings, experiment_id: str) -> bool:
    """Whether a runner is running the experiment now, on this machine (its lock file is held) or, on a
    shared store, anywhere (its lease has a recent heartbeat). False for an experiment left ``running``
    by a runner that died: it may be cancelled, resumed or deleted."""
    return experiment_runner(store, settings, experiment_id) is not None
