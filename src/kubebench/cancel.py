"""Stopping an experiment from outside the runner: a signal (``kubebench run``) or another thread
asks, and every backend of the experiment cancels its jobs in flight."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backends.base import Lifecycle


class Cancel:
    """A request to stop: :meth:`request` cancels the runs in flight (they are recorded ``cancelled``
    and no other run starts); :meth:`abort` kills what is left at once, before the process exits.

    Both may be called from a signal handler, which interrupts the main thread anywhere: they take
    no lock that the runner holds, and only set events or send signals.
    """

    def __init__(self) -> None:
        self._requested = threading.Event()
        #: The signal that asked (``signal.SIGTERM`` …), None when asked otherwise.
        self.signal: int | None = None
        self._backends: list[Lifecycle] = []

    @property
    def requested(self) -> bool:
        """Whether a stop was asked for."""
        return self._requested.is_set()

    def request(self, signum: int | None = None) -> None:
        """Ask every backend attached to cancel its jobs; later runs do not start."""
        if not self._requested.is_set():
            self.signal = signum
            self._requested.set()
        for backend in list(self._backends):
            backend.interrupt()

    def attach(self, backend: Lifecycle) -> None:
        """Follow ``backend`` (interrupted at once if a stop was already asked for)."""
        self._backends.append(backend)
        if self.requested:
            backend.interrupt()

    def detach(self, backend: Lifecycle) -> None:
        """Stop following ``backend`` (closed)."""
        if backend in self._backends:
            self._backends.remove(backend)

    def abort(self) -> None:
        """Kill every job in flight without waiting (best effort; see ``Backend.abort``)."""
        for backend in list(self._backends):
            try:
                backend.abort()
            except Exception:  # noqa: BLE001  the process exits next: nothing may stop that
                pass


#: Signals that stop ``kubebench run``: the runs in flight are cancelled, then it exits 128 + signal.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_signals(cancel: Cancel, experiment_id: str) -> Iterator[None]:
    """While in the block: SIGINT (Ctrl-C) or SIGTERM cancels the runs in flight (each stops its jobs
    and is recorded ``cancelled``) and no other run starts; a second one stops at once: every process
    group of the local backend is killed and the process exits with 128 + signal, leaving the runs in
    flight ``running``, for a resume to redo. Only ``kubebench run`` installs these handlers.

    The handler runs in the main thread, wherever the runner is, possibly holding a lock that
    cancelling needs (an Event's): so it only writes a byte to a pipe, and a thread of ours reading
    the pipe asks ``cancel``. The forced stop takes no lock (see ``Cancel.abort``).
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; whoever runs us elsewhere stops us through `cancel`
        return
    received: list[int] = []
    read_end, write_end = os.pipe()

    def relay() -> None:
        while os.read(read_end, 1):
            cancel.request(received[0])

    def handler(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if received:
            cancel.abort()
            os.write(2, f"\n{name} again: stopped at once; resume with --id {experiment_id}\n".encode())
            os._exit(128 + signum)
        received.append(signum)
        os.write(2, f"\n{name}: cancelling the runs in flight ({name} again stops at once)\n".encode())
        os.write(write_end, b"!")

    relay_thread = threading.Thread(target=relay, name="kubebench-signals", daemon=True)
    relay_thread.start()
    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old if old is not None else signal.SIG_DFL)
        os.close(write_end)  # the relay reads the end of the pipe and returns
        relay_thread.join(timeout=5)
        os.close(read_end)
