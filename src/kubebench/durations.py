"""One grammar of durations for everything users write: timeouts, deadlines, intervals, latency bounds.

A duration is a positive number of seconds (``90``, ``2.5``, ``"1e-3"``), or amounts with units from the
largest to the smallest, each unit at most once: ``h``, ``m``, ``s``, ``ms``, ``us`` (or ``µs``), as in
``"1h30m"``, ``"90s"``, ``"100ms"``, ``"1m30.5s"`` or ``"250us"``. The spec's timeouts, the SLOs of
serving and the CLI's options all read it here, so ``timeout: 100ms`` means what ``ttft=100ms`` does.
"""

from __future__ import annotations

import math
import re

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BARE = re.compile(rf"\s*({_NUMBER})\s*")
_PART = re.compile(rf"\s*({_NUMBER})\s*(ms|us|µs|h|m|s)")
#: Seconds per unit, and each unit's rank (a duration names them from the largest down).
_UNITS = {"h": (3600.0, 0), "m": (60.0, 1), "s": (1.0, 2), "ms": (1e-3, 3), "us": (1e-6, 4), "µs": (1e-6, 4)}
_GRAMMAR = "use seconds or amounts with units h, m, s, ms, us, e.g. 90, '90s', '1h30m', '100ms'"


def parse_duration(value: object, what: str = "duration") -> float:
    """Seconds in ``value`` (a number, or text of the grammar above); ValueError naming the grammar."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration; {_GRAMMAR}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        seconds = _parse_text(str(value))
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be positive and finite (seconds), got {value!r}")
    return seconds


def _parse_text(text: str) -> float:
    bare = _BARE.fullmatch(text)
    if bare:
        return float(bare.group(1))
    total, rank, pos = 0.0, -1, 0
    while pos < len(text.rstrip()):
        part = _PART.match(text, pos)
        if not part:
            break
        scale, unit_rank = _UNITS[part.group(2)]
        if unit_rank <= rank:
            raise ValueError(f"{text!r} is not a duration: name units from the largest down, each once; {_GRAMMAR}")
        total, rank, pos = total + float(part.group(1)) * scale, unit_rank, part.end()
    if rank < 0 or text[pos:].strip():
        raise ValueError(f"{text!r} is not a duration; {_GRAMMAR}")
    return total
