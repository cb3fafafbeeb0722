"""Summaries of a run's telemetry, stored as metrics of the run so that runs compare on them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .sampler import Sample

_GPU = re.compile(r"^gpu(\d+)_(utilization_percent|memory_used_bytes|power_watts)$")


def by_series(samples: Iterable[Sample]) -> dict[str, list[tuple[float, float]]]:
    """``series → [(t, value), …]`` in time order."""
    found: dict[str, list[tuple[float, float]]] = {}
    for series, t, value in samples:
        found.setdefault(series, []).append((t, value))
    for points in found.values():
        points.sort()
    return found


def summarize(samples: Iterable[Sample]) -> dict[str, float]:
    """The run's telemetry metrics: ``cpu_percent_mean``/``_max``, ``memory_peak_bytes``,
    ``system_cpu_percent_mean``, per GPU ``gpu<i>_utilization_mean``/``_max``,
    ``gpu<i>_memory_peak_bytes``, ``gpu<i>_power_mean_watts``, and ``gpu_utilization_mean`` over all GPUs.
    """
    series = {name: [v for _, v in points] for name, points in by_series(samples).items()}
    metrics: dict[str, float] = {}
    if series.get("cpu_percent"):
        metrics |= {"cpu_percent_mean": _mean(series["cpu_percent"]), "cpu_percent_max": max(series["cpu_percent"])}
    if series.get("memory_bytes"):
        metrics["memory_peak_bytes"] = max(series["memory_bytes"])
    if series.get("system_cpu_percent") and series.get("cpu_percent"):  # not for runs too short to be seen
        metrics["system_cpu_percent_mean"] = _mean(series["system_cpu_percent"])
    utilization = []
    for name, values in sorted(series.items()):
        match = _GPU.match(name)
        if not match or not values:
            continue
        gpu, quantity = f"gpu{match.group(1)}", match.group(2)
        if quantity == "utilization_percent":
            metrics |= {f"{gpu}_utilization_mean": _mean(values), f"{gpu}_utilization_max": max(values)}
            utilization.append(_mean(values))
        elif quantity == "memory_used_bytes":
            metrics[f"{gpu}_memory_peak_bytes"] = max(values)
        else:
            metrics[f"{gpu}_power_mean_watts"] = _mean(values)
    if utilization:
        metrics["gpu_utilization_mean"] = _mean(utilization)
    return metrics


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
