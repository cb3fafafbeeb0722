"""The latest telemetry of runs in flight, for ``/metrics`` (written by samplers, read at scrape time)."""

from __future__ import annotations

import threading


class LiveTelemetry:
    """(experiment, run, series) → latest value, for the runs being sampled now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str, str], float] = {}

    def update(self, experiment: str, run: str, values: dict[str, float]) -> None:
        """Record one sample of a run."""
        with self._lock:
            for series, value in values.items():
                self._values[(experiment, run, series)] = value

    def clear(self, run: str) -> None:
        """Forget a run that ended (its series are in the store now)."""
        with self._lock:
            for key in [k for k in self._values if k[1] == run]:
                del self._values[key]

    def snapshot(self) -> list[tuple[str, str, str, float]]:
        """``(experiment, run, series, value)`` of every run in flight."""
        with self._lock:
            return [(*key, value) for key, value in self._values.items()]


#: The runner's samplers write here; the exposition of this process reads it.
LIVE = LiveTelemetry()
