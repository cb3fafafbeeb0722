"""One moment of a run (a :class:`Boundary`), where its time came from, and which of several
readings of the same moment is kept.

A moment can be read in several ways: the API server's or a cluster component's own timestamp
(``server``: a condition's ``lastTransitionTime`` and every ``metav1.Time`` are whole seconds, an
event's ``eventTime`` is microseconds, the name of an event the kubelet recorded ends in its
nanoseconds), the moment kubebench saw it (``observed``: a watch event received, a call returned,
a process seen ended; microseconds of kubebench's clock, late by however long the news took), or
the workload's own mark (``workload``: ``KUBEBENCH_MARK`` lines, the process's clock). Of several
readings of one moment, :func:`best` keeps a fine timestamp of the moment itself (≤ 1 ms) first,
then kubebench's observation, then a coarse timestamp: so a whole-second condition time is used
only when nothing finer says when it happened.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Source = Literal["server", "observed", "workload"]
SOURCES: tuple[str, ...] = ("server", "observed", "workload")
#: The moments of a run, in the order it reaches them (any other name may be on a timeline too):
#: submitted (the create call), admitted (a queue released it: Kueue), created (the operator made its
#: pod), scheduled (bound to a node), pulled (its images are there), started (its containers run; a
#: local process spawned), the workload's marks (imports done, peers joined, first step started, last
#: step ended), exited (its containers or processes ended), collected (logs copied out), deleted.
BOUNDARIES = ("submitted", "admitted", "created", "scheduled", "pulled", "started", "imports_done",
              "rendezvous_done", "first_step", "last_step", "exited", "collected", "deleted")
#: At most this fine (seconds) a timestamp of the moment itself is preferred to an observation.
FINE = 1e-3


@dataclass(frozen=True)
class Boundary:
    """One reading of a moment: ``name`` (see :data:`BOUNDARIES`) at ``t`` (unix seconds), of one
    ``replica`` (``worker-1``; empty for the run as a whole), from ``source`` with ``precision``
    (the resolution of its timestamp, in seconds), and ``origin``: what it was read from."""

    name: str
    t: float
    source: Source
    precision: float
    replica: str = ""
    origin: str = ""

    def as_dict(self) -> dict[str, object]:
        """The boundary as JSON-ready data (``timeline.json``, the store, the web API)."""
        return {"name": self.name, "t": self.t, "source": self.source, "precision": self.precision,
                "replica": self.replica, "origin": self.origin}

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Boundary:
        """A boundary from :meth:`as_dict`'s data."""
        source = str(data.get("source", "observed"))
        return cls(str(data["name"]), float(data["t"]), source if source in SOURCES else "observed",  # type: ignore[arg-type]
                   float(data.get("precision", 0.0)), str(data.get("replica") or ""), str(data.get("origin") or ""))


def _rank(boundary: Boundary) -> tuple[int, float]:
    if boundary.source != "observed" and boundary.precision <= FINE:
        return 0, boundary.precision
    return (1, boundary.precision) if boundary.source == "observed" else (2, boundary.precision)


def best(readings: Iterable[Boundary]) -> Boundary:
    """The reading of one moment to use (see the module's docstring); ValueError if there is none."""
    return min(readings, key=_rank)


def chosen(timeline: Iterable[Boundary]) -> dict[tuple[str, str], Boundary]:
    """The reading used for each moment of each replica: ``(name, replica) → boundary``."""
    readings: dict[tuple[str, str], list[Boundary]] = {}
    for boundary in timeline:
        readings.setdefault((boundary.name, boundary.replica), []).append(boundary)
    return {key: best(found) for key, found in readings.items()}
