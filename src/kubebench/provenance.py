"""Provenance of a run: the machine, the software and the workload's commit it ran with.

A flat JSON object (nested only for ``packages`` and ``gpus``), stored with every run and compared
between experiments. The machine part is captured once per runner process (it does not change while
kubebench runs), the workload's commit once per folder, and the backend adds where the job ran
(on Kubernetes: image and node). Every probe is best effort: a missing tool or driver leaves its
fields out instead of failing the run.
"""

from __future__ import annotations

import os
import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

PROVENANCE_FORMAT_VERSION = 1
#: Packages whose versions are recorded when installed in kubebench's environment.
KEY_PACKAGES = ("kubebench", "torch", "tensorflow", "jax", "numpy")
#: Fields that say nothing about the environment a number was measured in.
NOT_COMPARED = frozenset({"format_version"})


@cache
def machine() -> dict[str, Any]:
    """Host, OS, CPU, memory, GPUs (NVML), Python and key package versions of this process."""
    data: dict[str, Any] = {
        "format_version": PROVENANCE_FORMAT_VERSION,
        "host": platform.node(),
        "os": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_threads": os.cpu_count(),
        "python": platform.python_version(),
        "packages": _packages(),
    }
    data.update(_cpu_and_memory())
    data.update(_gpus())
    return {k: v for k, v in data.items() if v not in (None, "", {}, [])}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_and_memory() -> dict[str, Any]:
    try:
        import psutil
    except ImportError:
        return {}
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cpu_cores": psutil.cpu_count(logical=False), "cpus_usable": usable,
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}


def _packages() -> dict[str, str]:
    versions = {}
    for name in KEY_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _gpus() -> dict[str, Any]:
    """GPU models, driver and CUDA version through NVML (nvidia-ml-py), when a driver is present."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError):
        return {}
    try:
        return _nvml_fields(pynvml)
    except pynvml.NVMLError:
        return {}
    finally:
        pynvml.nvmlShutdown()


def _nvml_fields(pynvml: ModuleType) -> dict[str, Any]:
    gpus = []
    for index in range(pynvml.nvmlDeviceGetCount()):
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle).total
        gpus.append({"model": _text(pynvml.nvmlDeviceGetName(handle)), "memory_gb": round(memory / 2**30, 1)})
    cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
    return {"gpus": gpus, "gpu_driver": _text(pynvml.nvmlSystemGetDriverVersion()),
            "cuda": f"{cuda // 1000}.{cuda % 1000 // 10}"}


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


@cache
def workload(folder: Path) -> dict[str, Any]:
    """The git commit of the repository ``folder`` is in (and whether it had changes), if any."""
    commit = _git(folder, "rev-parse", "HEAD")
    if not commit:
        return {}
    changes = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": bool(changes)}


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def job_images(manifest: dict[str, Any]) -> list[str]:
    """The container images a job manifest names, in order, once each."""
    found: dict[str, None] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("containers", "initContainers") and isinstance(value, list):
                    found.update((c["image"], None) for c in value if isinstance(c, dict) and c.get("image"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(manifest)
    return list(found)


def provenance_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two provenance records, one line per field (``torch: 2.3.0 ≠ 2.4.1``).

    Empty when they agree on every field; a record that is empty (a run from before provenance was
    recorded) gives one line saying so, since nothing can be compared.
    """
    if not a or not b:
        return [] if a == b else ["provenance: not recorded for one side (runs of an older kubebench)"]
    flat_a, flat_b = flatten(a), flatten(b)
    lines = []
    for key in sorted(flat_a.keys() | flat_b.keys(), key=_field_order):
        if key in NOT_COMPARED:
            continue
        left, right = flat_a.get(key), flat_b.get(key)
        if left != right:
            lines.append(f"{key}: {_show(left)} ≠ {_show(right)}")
    return lines


_ORDER = ("host", "kubernetes", "operators", "node", "instance_type", "os", "cpu", "memory", "gpu", "cuda", "python", "packages", "image", "backend", "git")


def _field_order(key: str) -> tuple[int, str]:
    rank = next((i for i, prefix in enumerate(_ORDER) if key.startswith(prefix)), len(_ORDER))
    return rank, key


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested objects as one level of dotted keys (``packages.torch``)."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def _show(value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return ", ".join(_show(v) for v in value) or "(none)"
    if isinstance(value, dict):
        return " ".join(f"{v}" for v in value.values())
    return str(value)
