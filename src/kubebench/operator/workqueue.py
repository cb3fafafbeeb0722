"""A work queue with client-go's workqueue semantics: a key is queued once however often it is added,
is handed to one worker at a time (added again while in flight, it is queued again once that worker is
done), and a failed key comes back after a per-key exponential backoff that a success resets."""

from __future__ import annotations

import heapq
import threading
import time

BACKOFF_FIRST, BACKOFF_MAX = 0.05, 60.0


class WorkQueue:
    """Keys to reconcile; ``get()`` blocks until one is due or the queue is shut down (None)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: list[str] = []
        self._queued: set[str] = set()
        self._busy: set[str] = set()
        self._dirty: set[str] = set()  # added while in flight
        self._later: list[tuple[float, str]] = []
        self._failures: dict[str, int] = {}
        self._shut = False

    def add(self, key: str) -> None:
        """Queue ``key`` now (once)."""
        with self._cond:
            if key in self._busy:
                self._dirty.add(key)
            elif key not in self._queued:
                self._queued.add(key)
                self._queue.append(key)
                self._cond.notify()

    def add_after(self, key: str, seconds: float) -> None:
        """Queue ``key`` in ``seconds``."""
        with self._cond:
            heapq.heappush(self._later, (time.monotonic() + max(0.0, seconds), key))
            self._cond.notify()

    def retry(self, key: str) -> float:
        """Queue a key that failed, after its backoff (returned)."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
        delay = min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (failures - 1))
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """``key`` succeeded: its next failure starts the backoff again."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self) -> str | None:
        """The next key to work on (now in flight), or None once shut down."""
        with self._cond:
            while True:
                self._promote()
                if self._shut:
                    return None
                if self._queue:
                    key = self._queue.pop(0)
                    self._queued.discard(key)
                    self._busy.add(key)
                    return key
                wait = self._later[0][0] - time.monotonic() if self._later else None
                self._cond.wait(None if wait is None else max(0.0, wait))

    def done(self, key: str) -> None:
        """A worker is done with ``key``."""
        with self._cond:
            self._busy.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._queued.add(key)
                self._queue.append(key)
                self._cond.notify()

    def shut_down(self) -> None:
        """Wake every worker: ``get()`` answers None from now on."""
        with self._cond:
            self._shut = True
            self._cond.notify_all()

    def _promote(self) -> None:
        now = time.monotonic()
        while self._later and self._later[0][0] <= now:
            _, key = heapq.heappop(self._later)
            if key not in self._busy and key not in self._queued:
                self._queued.add(key)
                self._queue.append(key)
            elif key in self._busy:
                self._dirty.add(key)
