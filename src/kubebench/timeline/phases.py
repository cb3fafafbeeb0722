"""The phases of a run: the time between consecutive moments of its timeline, as run metrics.

Each phase ends at one moment of :data:`CHAIN` and begins at the one before it that the run has
(a local run has no admission, scheduling or image pull: its first phase runs from submit to its
processes' start). A moment of several replicas is reached when the last replica reaches it (the
maximum over replicas: a distributed job waits for its slowest pod), and never before the moment
before it (second-precision timestamps and clocks that disagree could put it there; such a phase is
0). So the phases follow one another without gaps and add up to the run's end-to-end time:

    end_to_end_seconds = Σ phases = last moment − submitted
    startup_seconds    = submitted → first step (else → containers started)
    overhead_fraction  = (end_to_end − train) / end_to_end

Beside them (not part of the sum): ``gang_wait_seconds``, the PodGroup's creation → placed, and
``rendezvous_wait_seconds``, the longest any rank waited at the rendezvous for its peers (on the
slowest path that wait is the slowest rank's imports; this says how much the others lost to it).
"""

from __future__ import annotations

from collections.abc import Iterable

from .boundary import Boundary, chosen

#: (moment a phase ends at, its metric), in the order a run goes through them, after ``submitted``.
CHAIN = (
    ("admitted", "queue_seconds"),  # in a queue (Kueue) until admitted
    ("created", "operator_seconds"),  # the operator creating the pods (a gang scheduler may hold them)
    ("scheduled", "scheduling_seconds"),  # created → bound to nodes (gang wait, scale-up)
    ("pulled", "image_pull_seconds"),  # bound → images pulled
    ("started", "container_start_seconds"),  # pulled → containers running (locally: spawn)
    ("imports_done", "imports_seconds"),  # the interpreter and the workload's imports
    ("rendezvous_done", "rendezvous_seconds"),  # joining the peers
    ("first_step", "init_seconds"),  # model build, data loading
    ("last_step", "train_seconds"),  # the steps: what the throughput covers
    ("exited", "shutdown_seconds"),  # last step → processes ended (reports, barrier, group teardown)
    ("collected", "collect_seconds"),  # logs copied out of the job
    ("deleted", "teardown_seconds"),  # the job deleted
)
START = "submitted"
#: What the terminal, the report and the dashboard call each phase.
PHASE_NAMES = {
    "queue_seconds": "queue", "operator_seconds": "operator", "scheduling_seconds": "scheduling",
    "image_pull_seconds": "image pull", "container_start_seconds": "container start", "imports_seconds": "imports",
    "rendezvous_seconds": "rendezvous", "init_seconds": "init", "train_seconds": "train",
    "shutdown_seconds": "shutdown", "collect_seconds": "collect", "teardown_seconds": "teardown",
    "startup_seconds": "start-up", "end_to_end_seconds": "end to end", "overhead_fraction": "overhead",
    "gang_wait_seconds": "gang wait", "rendezvous_wait_seconds": "rendezvous wait",
}
#: Every metric :func:`phases` can give, in the order of the run.
PHASE_METRICS = tuple(metric for _, metric in CHAIN) + (
    "startup_seconds", "end_to_end_seconds", "overhead_fraction", "gang_wait_seconds", "rendezvous_wait_seconds")


def _reached(picked: dict[tuple[str, str], Boundary], name: str) -> float | None:
    times = [b.t for (n, _), b in picked.items() if n == name]
    return max(times) if times else None


def edges(timeline: Iterable[Boundary]) -> list[tuple[str, float]]:
    """``(moment, when)`` of the start and of each moment of :data:`CHAIN` the run reached, in order,
    never earlier than the one before; empty without a submit."""
    picked = chosen(timeline)
    start = _reached(picked, START)
    if start is None:
        return []
    found = [(START, start)]
    for name, _ in CHAIN:
        t = _reached(picked, name)
        if t is not None:
            found.append((name, max(t, found[-1][1])))
    return found


def phases(timeline: Iterable[Boundary]) -> dict[str, float]:
    """The run's phases as metrics (see the module's docstring); empty without a submit."""
    boundaries = list(timeline)
    reached = edges(boundaries)
    if len(reached) < 2:
        return {}
    metric_of = dict(CHAIN)
    found = {metric_of[name]: t - before for (_, before), (name, t) in zip(reached, reached[1:])}
    at = dict(reached)
    found["end_to_end_seconds"] = total = reached[-1][1] - reached[0][1]
    begun = at.get("first_step", at.get("started"))
    if begun is not None:
        found["startup_seconds"] = begun - reached[0][1]
    if "train_seconds" in found and total > 0:
        found["overhead_fraction"] = (total - found["train_seconds"]) / total
    picked = chosen(boundaries)
    made, ready = _reached(picked, "gang_created"), _reached(picked, "gang_ready")
    if made is not None and ready is not None:
        found["gang_wait_seconds"] = max(0.0, ready - made)
    waits = [b.t - picked[("imports_done", r)].t for (n, r), b in picked.items()
             if n == "rendezvous_done" and ("imports_done", r) in picked]
    if waits:  # the longest any rank waited for its peers: time lost to the slowest one
        found["rendezvous_wait_seconds"] = max(0.0, max(waits))
    return {k: round(v, 6) for k, v in found.items()}


def workload_window(timeline: Iterable[Boundary]) -> tuple[float, float] | None:
    """When the workload ran: its first container (or process) started → the last one ended (else
    its first and last marks); None when the timeline does not say."""
    picked = chosen(timeline)

    def first(*names: str) -> float | None:
        times = [b.t for (n, _), b in picked.items() if n in names]
        return min(times) if times else None

    def last(*names: str) -> float | None:
        times = [b.t for (n, _), b in picked.items() if n in names]
        return max(times) if times else None

    start = first("started")
    start = start if start is not None else first("imports_done", "rendezvous_done", "first_step")
    end = last("exited")
    end = end if end is not None else last("last_step")
    if start is None or end is None or end <= start:
        return None
    return start, end
