"""Service-level objectives: ``ttft=2s,tpot=100ms`` for each request (goodput), and bounds on a run's
metrics (``ttft_p99: 2s``) for the capacity search.
"""

from __future__ import annotations

from ..durations import parse_duration

#: Latencies a per-request SLO may bound (each a property of a request record).
REQUEST_LATENCIES = ("ttft", "tpot", "e2e")


def parse_request_slo(text: str) -> dict[str, float]:
    """``"ttft=2s,tpot=100ms"`` → ``{"ttft": 2.0, "tpot": 0.1}``; an unknown name or value is a ValueError."""
    bounds: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in REQUEST_LATENCIES:
            raise ValueError(f"SLO term {part!r}: use name=duration with name one of {', '.join(REQUEST_LATENCIES)}")
        bounds[name] = parse_duration(value, "a latency bound")
    return bounds


def meets(values: dict[str, float | None], bounds: dict[str, float]) -> bool:
    """True when every bounded value is present and within its bound."""
    for name, bound in bounds.items():
        value = values.get(name)
        if value is None or value > bound:
            return False
    return True
