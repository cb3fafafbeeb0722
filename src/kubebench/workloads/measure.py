"""What the workloads measure and how they report it, shared by the PyTorch and TensorFlow ones
(no framework imports here).

Reported by rank 0 only: a tf_cnn_benchmarks-style header and ``total images/sec:`` line (what the
original Kubebench's post-processors parse), ``images/sec: X``, a ``KUBEBENCH_METRIC`` line, and
``$KUBEBENCH_EXP_OUTPUT_PATH/step_times.json`` with every step's seconds, warm-up included, so that
kubebench can find the steady state itself.

Reported by every rank at the end: one plain log line (not a metric) with a digest of its trained
parameters and its own rate, ``rank R of N: params_sha256=<hex> own_rate=<items/s>``. Replicas that
really train together end with the same parameters, bit for bit, so their digests agree; the global
rate is the sum of the ranks' own rates.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import resource
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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


def cpu_name() -> str:
    """The CPU's model (``/proc/cpuinfo``), else what the platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


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


# The replica line (a log line, never a ``KUBEBENCH_METRIC``: it is read by tests and people, not stored).
REPLICA_LINE = re.compile(r"^rank (\d+) of (\d+): params_sha256=([0-9a-f]{64})(?: own_rate=(\S+))?$", re.MULTILINE)


def params_digest(chunks: Iterable[bytes]) -> str:
    """SHA-256 of the parameters' raw bytes, in model order (equal only for bit-identical weights)."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def report_replica(rank: int, world_size: int, digest: str, own_rate: float | None = None) -> None:
    """Print a replica's closing line: its parameter digest and, for a throughput benchmark, its own rate."""
    rate = "" if own_rate is None else f" own_rate={own_rate!r}"
    kubebench.write_line(f"rank {rank} of {world_size}: params_sha256={digest}{rate}")


def report_replicas(rank: int, world_size: int, comm: Any, digest: str, own_rate: float | None = None) -> None:
    """Every replica's closing line. Under MPI (``comm``: mpi4py's communicator) the ranks share
    mpirun's stdout, where one rank's line can land inside another's (a metric line included), so
    rank 0 prints them all, gathered over MPI; otherwise each replica prints its own."""
    mine = (rank, world_size, digest, own_rate)
    for line in (comm.gather(mine, root=0) or []) if comm is not None else [mine]:
        report_replica(*line)
