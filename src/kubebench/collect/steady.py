"""Steady-state metrics from per-step times that a workload writes to ``output/step_times.json``.

The file is ``{"step_seconds": [...], "items_per_step": N}`` (``items_per_step``, the items all
replicas process in one step, is optional; ``batch_size`` × ``world_size`` stands in for it).
The warm-up boundary is detected by MSER-5 (see ``kubebench.numerics.steady``), not taken from the
workload's own setting, so a slow warm-up that outlasts it is still excluded.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from .. import limits
from ..errors import PostprocessError
from ..output_files import read_output
from .values import to_number

STEP_FILE = "step_times.json"


def steady_state_metrics(output: Path) -> tuple[dict[str, float], dict[str, str]]:
    """Metrics (and info) of the steady part of the run; nothing when the file is absent."""
    path = output / STEP_FILE
    if not path.exists():
        return {}, {}
    # Here, not at the top: it brings NumPy and SciPy (~0.5 s), which a run without the file never needs.
    from ..numerics.steady import detect_steady_state

    try:
        data = json.loads(read_output(path, limits.STEP_FILE_BYTES).decode("utf-8"))
        steps = [float(s) for s in data["step_seconds"]]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
        raise PostprocessError(f"output/{STEP_FILE} must hold {{\"step_seconds\": [numbers…]}}: {e}") from e
    state = detect_steady_state(steps)
    if math.isnan(state.steady_mean) or state.steady_mean <= 0:
        return {}, {}
    metrics = {
        "steady_step_time": state.steady_mean,
        "warmup_steps_detected": float(state.warmup_steps),
    }
    if not math.isnan(state.drift):
        metrics["step_time_drift"] = state.drift
    items = _items_per_step(data)
    if items:
        metrics["steady_items_per_sec"] = items / state.steady_mean
    info = {"drifting": "yes: step time changed by %+.1f%% within the run" % (state.drift * 100)} if state.drifting else {}
    return metrics, info


def _items_per_step(data: dict) -> float | None:
    items = to_number(data.get("items_per_step"))
    if items is None:
        batch, world = to_number(data.get("batch_size")), to_number(data.get("world_size"))
        items = batch * world if batch is not None and world is not None else None
    return items if items and items > 0 else None
