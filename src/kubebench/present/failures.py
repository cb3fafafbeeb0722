"""Why runs failed, for ``kubebench show``: the end of a failed run's log (where the cause usually is,
``ModuleNotFoundError: No module named 'tensorflow'``) and, when a declared metric was missing, the
metrics the run did report."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import RenderableType

from ..store.records import RunRecord
from .numbers import plural
from .text import cell, safe_line

_MISSING = "missing from the run's outputs"


def failure_details(failed: Sequence[RunRecord], runs: int = 3, lines: int = 12) -> list[RenderableType]:
    """For up to ``runs`` failed runs with different reasons (latest first): a heading, what it
    reported when a metric was missing, and the last ``lines`` lines of its log."""
    chosen: dict[str, RunRecord] = {}
    for run in sorted(failed, key=lambda r: r.finished_at or 0.0, reverse=True):
        chosen.setdefault(run.reason, run)
        if len(chosen) == runs:
            break
    shown: list[RenderableType] = []
    for run in chosen.values():
        repeat = f"warm-up {run.repeat}" if run.warmup else f"repeat {run.repeat}"
        shown.append(cell(f"\n{run.status} run {run.run_id} ({repeat}): {run.reason or 'no reason recorded'}",
                          style="bold"))
        if _MISSING in run.reason:
            found = ", ".join(sorted(run.metrics)) or "none"
            shown.append(cell(f"  metrics it reported: {found}"))
        tail = [line for line in run.log_tail.splitlines() if line.strip()][-lines:]
        if tail:
            shown.append(cell(f"  last {plural(len(tail), 'line')} of its log:", style="dim"))
            shown.extend(cell("  │ " + safe_line(line)) for line in tail)
        elif run.path:
            shown.append(cell(f"  no log recorded; see `kubebench outputs {run.run_id}`", style="dim"))
    if len(failed) > len(chosen):
        shown.append(cell(f"({plural(len(failed) - len(chosen), 'more failed run')}: `kubebench results "
                          f"{failed[0].experiment_id} -f json` lists every reason)", style="dim"))
    return shown
