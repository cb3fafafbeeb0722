"""One runner per experiment at a time: the experiment's lock file (:mod:`kubebench.locks`) and, on a
store that runners on several machines share (PostgreSQL), its lease in the store (:mod:`.leases`), kept
alive by a heartbeat and taken over once it has expired. :func:`hold_experiment` takes both;
:func:`runner_alive` says whether an experiment has a runner now (the dashboard asks it before it lets a
dead runner's experiment be cancelled or deleted).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BusyError, LeaseLost, StoreError
from ..locks import ExperimentLock

if TYPE_CHECKING:
    from ..settings import Settings
    from .leases import Lease
    from .store import Store

#: Seconds a store lease lasts without a heartbeat; the holder renews it every third of that. A runner
#: that dies is taken over this long after its last heartbeat (at once by a runner of the same folder).
LEASE_SECONDS = 30.0
LEASE_ENV = "KUBEBENCH_LEASE_SECONDS"
log = logging.getLogger("kubebench.locks")


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
