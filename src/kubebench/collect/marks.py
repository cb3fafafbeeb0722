"""The workload's own moments: ``KUBEBENCH_MARK <name> t=<unix seconds>`` lines of every replica's
log (printed by :func:`kubebench.mark`), as boundaries of the run's timeline (source ``workload``)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path

from .. import MARK_LINE_PREFIX, METRIC_NAME
from ..errors import PostprocessError
from ..timeline import Boundary
from .metrics import bounded_lines, replica_logs

_MARK = re.compile(rf"{MARK_LINE_PREFIX}\s+({METRIC_NAME})\s+t=([0-9]+(?:\.[0-9]+)?)")
#: The marks' resolution: ``mark`` prints microseconds.
PRECISION = 1e-6


def parse_marks(lines: Iterable[str]) -> dict[str, float]:
    """``name → unix seconds`` of the mark lines; the last mark of a name wins."""
    found: dict[str, float] = {}
    for line in lines:
        if MARK_LINE_PREFIX not in line:
            continue
        match = _MARK.search(line)
        if match:
            t = float(match.group(2))
            if math.isfinite(t):
                found[match.group(1)] = t
    return found


def workload_marks(output: Path) -> list[Boundary]:
    """The marks of every replica's log in ``output`` (``<type>-<index>.log``), one boundary each;
    a log that cannot be read gives none (the run's outcome does not depend on its marks)."""
    found = []
    try:
        logs = replica_logs(output)
    except OSError:
        return []
    for log in logs:
        try:
            marks = parse_marks(bounded_lines(log))
        except (OSError, PostprocessError):
            continue
        found += [Boundary(name, t, "workload", PRECISION, log.stem, "KUBEBENCH_MARK") for name, t in marks.items()]
    return found
