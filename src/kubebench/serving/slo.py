"""Service-level objectives: ``ttft=2s,tpot=100ms`` for each request (goodput), and bounds on a run's
metrics (``ttft_p99: 2s``) for the capacity search.
"""

from __future__ import annotations

import math
import re

#: Latencies a per-request SLO may bound (each a property of a request record).
REQUEST_LATENCIES = ("ttft", "tpot", "e2e")
_AMOUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|us|µs|s|m)?\s*$")
_SCALE = {"s": 1.0, None: 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "m": 60.0}


def seconds(value: object) -> float:
    """Seconds in ``2``, ``"2s"``, ``"100ms"``, ``"250us"``; ValueError otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        match = _AMOUNT.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration; use e.g. 2, '2s', '100ms'")
        number = float(match.group(1)) * _SCALE[match.group(2)]
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"a latency bound must be positive, got {value!r}")
    return number


def parse_request_slo(text: str) -> dict[str, float]:
    """``"ttft=2s,tpot=100ms"`` → ``{"ttft": 2.0, "tpot": 0.1}``; an unknown name or value is a ValueError."""
    bounds: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip().lower()
        if not sep or name not in REQUEST_LATENCIES:
            raise ValueError(f"SLO term {part!r}: use name=duration with name one of {', '.join(REQUEST_LATENCIES)}")
        bounds[name] = seconds(value)
    return bounds


def meets(values: dict[str, float | None], bounds: dict[str, float]) -> bool:
    """True when every bounded value is present and within its bound."""
    for name, bound in bounds.items():
        value = values.get(name)
        if value is None or value > bound:
            return False
    return True
