"""What the workloads measure and how they report it, shared by the PyTorch and TensorFlow ones
(no framework imports here).

Reported by rank 0 only: a tf_cnn_benchmarks-style header and ``total images/sec:`` line (what the
original Kubebench's post-processors parse), ``images/sec: X``, a ``KUBEBENCH_METRIC`` line, and
``$KUBEBENCH_EXP_OUTPUT_PATH/step_times.json`` with every step's seconds, warm-up included, so that
kubebench can find the steady state itself.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
from pathlib import Path

import kubebench


def percentile(values: list[float], q: float) -> float:
    """Linearly interpolated q-th percentile (0..100) of a non-empty list."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def step_metrics(measured: list[float]) -> dict[str, float]:
    """Percentiles of the measured (post-warm-up) step times, in seconds."""
    return {f"step_time_p{q}": percentile(measured, q) for q in (50, 90, 99)}


def peak_rss_bytes() -> int:
    """The largest resident set this process has had (Linux reports kilobytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def print_header(fields: dict[str, object]) -> None:
    """``Name: value`` lines, aligned like tf_cnn_benchmarks' start-up banner."""
    width = max(len(k) for k in fields) + 2
    for key, value in fields.items():
        print(f"{key + ':':<{width}}{value}", flush=True)


def report_throughput(rate: float, measured: list[float], extra: dict[str, float] | None = None) -> None:
    """Print the human lines and the metric protocol line of a finished image benchmark."""
    print(f"total images/sec: {rate:.2f}", flush=True)
    print(f"images/sec: {rate:.1f}", flush=True)
    kubebench.report(images_per_sec=rate, **step_metrics(measured), **(extra or {}))


def write_step_times(warmup_steps: int, batch_size: int, world_size: int, times: list[float],
                     name: str = "step_times.json", cpu_seconds: list[float] | None = None) -> Path | None:
    """Save every step's seconds (warm-up first) when the run has an output folder; return the file.

    ``cpu_seconds``: the process's CPU seconds in each step (``step_cpu_seconds``), when measured.
    """
    out = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH")
    if not out:
        return None
    Path(out).mkdir(parents=True, exist_ok=True)
    record = {
        "warmup_steps": warmup_steps,
        "batch_size": batch_size,
        "world_size": world_size,
        "items_per_step": batch_size * world_size,
        "step_seconds": times,
    }
    if cpu_seconds is not None:
        record["step_cpu_seconds"] = cpu_seconds
    path = Path(out) / name
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path
