"""A run's timeline as lanes to draw: one lane for the run as a whole (its queue, and the collect and
teardown after its replicas ended) and one per replica, each a row of phases, coloured alike in the
report and the dashboard (:data:`COLOURS`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .boundary import Boundary, chosen
from .phases import CHAIN, START

#: One colour per phase, the same everywhere a timeline is drawn (Okabe–Ito, readable when colour-blind).
COLOURS = {
    "queue_seconds": "#999999", "operator_seconds": "#CC79A7", "scheduling_seconds": "#E69F00",
    "image_pull_seconds": "#56B4E9", "container_start_seconds": "#0072B2", "imports_seconds": "#F0E442",
    "rendezvous_seconds": "#D55E00", "init_seconds": "#B8860B", "train_seconds": "#009E73",
    "shutdown_seconds": "#7F7F7F", "collect_seconds": "#AAAAAA", "teardown_seconds": "#555555",
}
RUN_LANE = "run"
_JOB_MOMENTS = {START, "admitted", "collected", "deleted"}


@dataclass(frozen=True)
class Segment:
    """One phase of one lane: ``metric`` (``train_seconds`` …) from ``start`` to ``end`` (unix seconds)."""

    metric: str
    start: float
    end: float

    def as_dict(self, origin: float = 0.0) -> dict[str, object]:
        """JSON-ready, times in seconds after ``origin``."""
        return {"phase": self.metric, "start": round(self.start - origin, 6), "end": round(self.end - origin, 6)}


@dataclass(frozen=True)
class Lane:
    """The phases of the run as a whole (``name`` ``run``) or of one replica (``master-0`` …)."""

    name: str
    segments: tuple[Segment, ...]


def lanes(timeline: Iterable[Boundary]) -> list[Lane]:
    """The run's lane, then one lane per replica in the order their first moment came."""
    picked = chosen(timeline)
    metric_of = dict(CHAIN)
    job = {name: b.t for (name, replica), b in picked.items() if not replica and name in _JOB_MOMENTS}
    if START not in job:
        return []
    replicas: dict[str, dict[str, float]] = {}
    for (name, replica), b in sorted(picked.items(), key=lambda item: item[1].t):
        if replica and name in metric_of:
            replicas.setdefault(replica, {})[name] = b.t
    begin = job.get("admitted", job[START])
    found = [Lane(RUN_LANE, _run_segments(job, replicas))]
    for replica, moments in replicas.items():
        segments, before = [], begin
        for name, metric in CHAIN:
            if name in moments and name not in _JOB_MOMENTS:
                end = max(moments[name], before)
                segments.append(Segment(metric, before, end))
                before = end
        found.append(Lane(replica, tuple(segments)))
    return found


def _run_segments(job: dict[str, float], replicas: dict[str, dict[str, float]]) -> tuple[Segment, ...]:
    segments = []
    if "admitted" in job:
        segments.append(Segment("queue_seconds", job[START], max(job["admitted"], job[START])))
    ends = [t for moments in replicas.values() for t in moments.values()]
    before = max(ends) if ends else job.get("admitted", job[START])
    for name, metric in (("collected", "collect_seconds"), ("deleted", "teardown_seconds")):
        if name in job:
            end = max(job[name], before)
            segments.append(Segment(metric, before, end))
            before = end
    return tuple(segments)
