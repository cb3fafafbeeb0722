"""Whether an experiment's runner is gone, asked from outside it (the dashboard), and settling what a
gone runner left ``running``.

A runner holds its experiment's lock for as long as it runs (:mod:`kubebench.locks`: ``flock`` on
``<experiments root>/<id>/.kubebench-runner.lock``), and the system releases that lock however the
runner ends (SIGKILL, the OOM killer). So runs that the store says are ``running`` while nobody holds
the lock were left so by a runner that is gone. Where this machine cannot tell (the experiment has no
folder here: its runner may run on another machine), the runner counts as alive.

:func:`runner_gone` is the one place that answers. On a shared PostgreSQL store the lease in the store
answers (:mod:`kubebench.store.holding`): gone = no live lease and no lock held on this machine.
"""

from __future__ import annotations

import fcntl
import os
import time

from .errors import BusyError
from .locks import LOCK_FILE, ExperimentLock
from .settings import Settings
from .store.records import RunResult
from .store.store import Store


def runner_gone(store: Store, settings: Settings, experiment_id: str) -> bool:
    """True when no runner holds the experiment's lock; False while one does, or where this machine
    cannot tell (no lock file here, a file system without locks).

    The probe takes a shared lock for an instant and never writes: a runner holding its exclusive
    lock makes it fail at once. A shared store's lease answers for runners on any machine.
    """
    if store.shared:  # its lease says, wherever the runner runs
        from .store.holding import runner_alive

        return not runner_alive(store, settings, experiment_id)
    path = settings.experiments_root / experiment_id / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held (EWOULDBLOCK), or no locks on this file system (ENOLCK): not known to be gone
        return False
    finally:
        os.close(fd)
    return True


def cancel_abandoned(store: Store, settings: Settings, experiment_id: str, reason: str) -> int:
    """Record the pending and running runs of an experiment whose runner is gone as ``cancelled``,
    holding its lock meanwhile (BusyError when a runner holds it); returns how many."""
    lock = ExperimentLock(settings.experiments_root / experiment_id, experiment_id, create=False)
    try:
        with lock:
            left = [r for r in store.runs(experiment_id, include_warmup=True, logs=False)
                    if r.status in ("pending", "running")]
            now = time.time()
            store.finish_runs([RunResult(run_id=r.run_id, status="cancelled", finished_at=now, reason=reason)
                               for r in left])
            return len(left)
    except BusyError as e:
        raise BusyError(f"cannot cancel: {e}") from None
