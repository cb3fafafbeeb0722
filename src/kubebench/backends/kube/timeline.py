"""A run's moments on the cluster: what kubebench's watches saw and when (:class:`Clock`, fed by
:mod:`.watches`), and what the pods and their events say once the run is over (:func:`boundaries`).

Every moment is kept with each reading there is (see :mod:`kubebench.timeline.boundary`): a pod's
``creationTimestamp``, conditions and container ``startedAt``/``finishedAt`` are whole seconds; the
scheduler's ``Scheduled`` event has an ``eventTime`` in microseconds; the kubelet's events
(``Pulled``, ``Started``) carry whole-second timestamps, but their name ends in the nanoseconds of
the kubelet's clock when it recorded them (``<pod>.<hex ns>``, client-go's ``makeEvent``); the
``Pulled`` message says how long the pull took ("in 796ms (1.594s including waiting)", or "already
present on machine": a cache hit). The watch's own receive time (``observed``) is finer than the
second-precision fields and is what the phases use when no event is finer.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...timeline import Boundary
from . import status as st

#: Resolutions of the timestamps (seconds).
SECOND, MICRO, NANO, CLOCK = 1.0, 1e-6, 1e-9, 1e-6
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_GO_PART = re.compile(r"([0-9]*\.?[0-9]+)(h|ms|us|µs|μs|ns|m|s)")
_PULLED = re.compile(r' in (\S+) \((\S+) including waiting\)')
_PULLED_OLD = re.compile(r'^Successfully pulled image ".*" in (\S+)$')
#: Event names are ``<object>.<hex>``; a suffix of this many hex digits or more is a UnixNano.
_HEX_NS = re.compile(r"\.([0-9a-f]{15,16})$")


def go_duration(text: str) -> float | None:
    """Seconds of a Go ``time.Duration`` string (``796ms``, ``1.594s``, ``1m2.5s``, ``0s``); None if it is not one."""
    text = text.strip()
    if text in ("0", "0s"):
        return 0.0
    parts = _GO_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _GO_UNITS[u] for n, u in parts)


def pull_seconds(message: str) -> tuple[float, float] | None:
    """``(pulling, including waiting)`` seconds of a kubelet ``Pulled`` message; ``(0, 0)`` for an image
    already present on the node; None if the message says neither (an older or unknown kubelet)."""
    if "already present on machine" in message:
        return 0.0, 0.0
    found = _PULLED.search(message)
    if found:
        pull, waited = go_duration(found.group(1)), go_duration(found.group(2))
        if pull is not None and waited is not None:
            return pull, waited
    found = _PULLED_OLD.search(message.strip())
    if found and (pull := go_duration(found.group(1))) is not None:
        return pull, pull
    return None


def api_time(text: Any) -> float | None:
    """Unix seconds of an API timestamp (``metav1.Time`` or ``MicroTime``, RFC 3339); None if absent or bad."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _resolution(text: str) -> float:
    return MICRO if "." in text else SECOND


def event_time(event: dict[str, Any]) -> tuple[float, float, str] | None:
    """``(unix seconds, resolution, field)`` of when an event happened, as finely as it says: its
    ``eventTime`` (events.k8s.io recorders: the scheduler), else the nanoseconds in its name (close
    to its ``lastTimestamp``, which it must agree with to the second), else ``lastTimestamp``."""
    micro = event.get("eventTime")
    if (t := api_time(micro)) is not None:
        return t, _resolution(str(micro)), "eventTime"
    stamp = event.get("lastTimestamp") or event.get("firstTimestamp")
    coarse = api_time(stamp)
    match = _HEX_NS.search(str((event.get("metadata") or {}).get("name") or ""))
    if match:
        named = int(match.group(1), 16) / 1e9
        if coarse is None or -1.0 <= named - coarse <= 1.0 + SECOND:  # seconds are cut, never rounded up
            return named, NANO, "name"
    return (coarse, SECOND, "lastTimestamp") if coarse is not None else None


@dataclass
class Clock:
    """When kubebench saw each moment of one run: the create call, the job admitted (Kueue let it go),
    each pod's first sight and its first sight scheduled, running and ended, the delete call."""

    submitted: float | None = None
    admitted: float | None = None
    deleted: float | None = None
    suspended: bool = False
    #: pod uid → moment → when first seen.
    pods: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Each moment of the PodGroup, when first seen (``gang_ready``).
    gang: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def job(self, obj: dict[str, Any], now: float | None = None) -> None:
        """The job object as a watch shows it: admitted once seen unsuspended after being suspended."""
        held = st.suspended(obj)
        with self._lock:
            if held and self.admitted is None:
                self.suspended = True
            elif not held and self.suspended and self.admitted is None:
                self.admitted = now or time.time()

    def pod(self, pod: dict[str, Any], main: frozenset[str], now: float | None = None) -> None:
        """A pod as a watch shows it: note each moment it reached for the first time."""
        reached = ["created"] + [m for m, test in _POD_MOMENTS if test(pod, main)]
        uid = pod["metadata"].get("uid") or pod["metadata"]["name"]
        with self._lock:
            seen = self.pods.setdefault(uid, {})
            t = now or time.time()
            for moment in reached:
                seen.setdefault(moment, t)


def _scheduled(pod: dict[str, Any], _main: frozenset[str]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName")) or _condition(pod, "PodScheduled") is not None


def _main_states(pod: dict[str, Any], main: frozenset[str]) -> list[dict[str, Any]]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    ours = [s for s in statuses if not main or s.get("name") in main]
    return [s.get("state") or {} for s in ours or statuses]


def _running(pod: dict[str, Any], main: frozenset[str]) -> bool:
    states = _main_states(pod, main)
    return bool(states) and all("running" in s or "terminated" in s for s in states)


def _ended(pod: dict[str, Any], main: frozenset[str]) -> bool:
    states = _main_states(pod, main)
    return bool(states) and all("terminated" in s for s in states)


_POD_MOMENTS: tuple[tuple[str, Callable[[dict[str, Any], frozenset[str]], bool]], ...] = (
    ("scheduled", _scheduled), ("started", _running), ("exited", _ended))


def _condition(pod: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def pod_boundaries(pod: dict[str, Any], replica: str, main: frozenset[str]) -> list[Boundary]:
    """The whole-second moments a pod object holds: created, scheduled (``PodScheduled``), its main
    containers started (the last ``startedAt``) and ended (the last ``finishedAt``)."""
    found = []
    if (t := api_time(pod["metadata"].get("creationTimestamp"))) is not None:
        found.append(Boundary("created", t, "server", SECOND, replica, "creationTimestamp"))
    scheduled = _condition(pod, "PodScheduled") or {}
    if (t := api_time(scheduled.get("lastTransitionTime"))) is not None:
        found.append(Boundary("scheduled", t, "server", SECOND, replica, "PodScheduled lastTransitionTime"))
    states = _main_states(pod, main)
    starts = [api_time((s.get("running") or s.get("terminated") or {}).get("startedAt")) for s in states]
    if states and all(t is not None for t in starts):
        found.append(Boundary("started", max(t for t in starts if t is not None), "server", SECOND, replica,
                              "containerStatuses startedAt"))
    ends = [api_time((s.get("terminated") or {}).get("finishedAt")) for s in states]
    if states and all(t is not None for t in ends):
        found.append(Boundary("exited", max(t for t in ends if t is not None), "server", SECOND, replica,
                              "containerStatuses finishedAt"))
    return found


def _container(event: dict[str, Any]) -> str:
    path = str((event.get("involvedObject") or {}).get("fieldPath") or "")
    match = re.fullmatch(r"spec\.(?:containers|initContainers)\{(.+)\}", path)
    return match.group(1) if match else ""


def _initial(event: dict[str, Any]) -> bool:
    return "spec.initContainers" in str((event.get("involvedObject") or {}).get("fieldPath") or "")


def event_boundaries(events: Iterable[dict[str, Any]], replica: str, main: frozenset[str]) -> list[Boundary]:
    """Moments of a pod's events: ``Scheduled``, and its main containers' ``Pulled`` (with ``pulling``,
    when the pull began, from the message's "including waiting" time) and ``Started``; a moment of
    several containers is the last of them."""
    latest: dict[str, Boundary] = {}

    def keep(boundary: Boundary) -> None:
        if boundary.name not in latest or boundary.t > latest[boundary.name].t:
            latest[boundary.name] = boundary

    for event in events:
        reason, when = event.get("reason"), event_time(event)
        if when is None or reason not in ("Scheduled", "Pulled", "Started"):
            continue
        t, resolution, where = when
        if reason == "Scheduled":
            keep(Boundary("scheduled", t, "server", resolution, replica, f"Scheduled event {where}"))
            continue
        name = _container(event)
        if _initial(event) or (main and name and name not in main):
            continue  # an init container or an injected sidecar: not what the workload waits for
        if reason == "Started":
            keep(Boundary("started", t, "server", resolution, replica, f"Started event {where}"))
            continue
        pulled = pull_seconds(str(event.get("message") or ""))
        detail = "cache hit" if pulled == (0.0, 0.0) else f"{pulled[0]:.3f}s pulling, {pulled[1]:.3f}s with waiting" \
            if pulled else "no duration in the message"
        keep(Boundary("pulled", t, "server", resolution, replica, f"Pulled event {where} ({detail})"))
        if pulled is not None:
            keep(Boundary("pulling", t - pulled[1], "server", max(resolution, 1e-3), replica,
                          f"Pulled event {where} less its time including waiting"))
    return list(latest.values())


def observed(clock: Clock, names: dict[str, str]) -> list[Boundary]:
    """What the watches saw, as boundaries (``names``: pod uid → replica)."""
    found = []
    for name, t in (("submitted", clock.submitted), ("admitted", clock.admitted), ("deleted", clock.deleted)):
        if t is not None:
            found.append(Boundary(name, t, "observed", CLOCK, "", _ORIGINS[name]))
    with clock._lock:
        pods = {uid: dict(moments) for uid, moments in clock.pods.items()}
        gang = dict(clock.gang)
    for uid, moments in pods.items():
        replica = names.get(uid)
        if replica is None:
            continue
        found += [Boundary(moment, t, "observed", CLOCK, replica, "watch") for moment, t in moments.items()]
    found += [Boundary(moment, t, "observed", CLOCK, "", "PodGroup read") for moment, t in gang.items()]
    return found


_ORIGINS = {"submitted": "create call", "admitted": "watch: the job unsuspended", "deleted": "delete call returned"}


def boundaries(clock: Clock, pods: list[dict[str, Any]], events: Callable[[str], list[dict[str, Any]]],
               name_of: Callable[[dict[str, Any]], str], main: frozenset[str]) -> list[Boundary]:
    """Every reading of the run's moments: the watches' (``clock``), each pod's fields and each pod's
    events (``events(uid)``: one list call per pod). A pod replaced by a newer one of the same replica
    (an operator re-created it) gives way to it."""
    newest: dict[str, dict[str, Any]] = {}
    for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
        newest[name_of(pod)] = pod
    names = {(p["metadata"].get("uid") or p["metadata"]["name"]): replica for replica, p in newest.items()}
    found = observed(clock, names)
    for replica, pod in newest.items():
        found += pod_boundaries(pod, replica, main)
        uid = pod["metadata"].get("uid")
        if uid:
            found += event_boundaries(events(uid), replica, main)
    return found
