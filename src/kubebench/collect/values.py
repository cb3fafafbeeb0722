"""Values read from a run's outputs."""

from __future__ import annotations

import math


def to_number(value: object) -> float | None:
    """A finite float from a number or numeric string (the original Kubebench wrote strings)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
