"""What the workloads' command lines share: argument types, model names, and the CPUs a replica may
use (no framework imports, so that a bad argument fails before PyTorch or TensorFlow loads).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

MODELS = ("small", "resnet18", "resnet50")
AMP_MODES = ("none", "bf16", "fp16")


def positive(text: str) -> int:
    """A whole number ≥ 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative(text: str) -> int:
    """A whole number ≥ 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or a positive integer, got {text}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def available_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 quota (a pod's CPU limit)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass  # no cgroup v2 limit visible: the affinity mask is all we know
    return cpus
