"""Energy of a run: this machine's counters for a local run (:mod:`kubebench.efficiency.counters`), the
DCGM exporter's energy counter of a Kubernetes run's pods through Prometheus.

``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (millijoules) of the run's pods: per GPU the increases between
the samples in the run's window (it misses at most one scrape interval at each end). Stored as the
same metrics as a local run's (``energy_joules``, ``gpu<i>_energy_joules`` …) with ``energy_source``, or
``energy_unavailable`` saying why there is no figure.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from ..efficiency.counters import SOURCE_KEY, UNAVAILABLE_KEY, Energy, energy_metrics

DCGM_ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # millijoules since boot, per GPU


def dcgm_energy(url: str, window: Any, selector: str, step: float) -> Energy:
    """Joules of each GPU of the run's pods over ``window`` (a :class:`~.promql.Window`) from the DCGM
    exporter's energy counter in Prometheus: per GPU the sum of its increases between samples (a
    counter that restarted, a driver reloaded, adds nothing for that step)."""
    from ..errors import KubebenchError
    from .promql import query_range

    query = f"max by (Hostname, gpu) ({DCGM_ENERGY}{{{selector}}})"
    try:
        series = query_range(url, query, window, step)
    except KubebenchError as e:
        return Energy({}, {UNAVAILABLE_KEY: f"DCGM energy counter: {e}"})
    per_gpu = {}
    for s in series:
        values = [float(v) for _, v in sorted(s["values"], key=lambda p: float(p[0]))]
        key = (s["metric"].get("Hostname", ""), int(s["metric"].get("gpu", "0") or 0))
        per_gpu[key] = sum(max(0.0, b - a) for a, b in pairwise(values)) / 1000.0
    if not per_gpu:
        return Energy({}, {UNAVAILABLE_KEY: f"no {DCGM_ENERGY} series of the run's pods in Prometheus {url} "
                                            "(no DCGM exporter, or it does not map GPUs to pods)"})
    channels = {f"gpu{i}": per_gpu[key] for i, key in enumerate(sorted(per_gpu))}
    return Energy(energy_metrics(channels), {SOURCE_KEY: f"DCGM exporter {DCGM_ENERGY} via Prometheus "
                                                          f"({len(channels)} GPU{'s' if len(channels) > 1 else ''})"})


def pods_energy(config: Any, source: Any, started: float, ended: float) -> Energy:
    """The energy of a run whose replicas are pods (``source`` is a
    :class:`~kubebench.backends.base.PodTelemetry`): DCGM through Prometheus; for any other run
    without a local meter, why there is no figure."""
    from ..backends.base import PodTelemetry

    if not config.enabled:
        return Energy({}, {UNAVAILABLE_KEY: "telemetry is disabled (telemetry.enabled: false)"})
    if not (isinstance(source, PodTelemetry) and started):
        return Energy({}, {UNAVAILABLE_KEY: "the backend gives no energy counter of this run"})
    if not config.prometheus_url:
        return Energy({}, {UNAVAILABLE_KEY: "set telemetry.prometheus_url to read the DCGM exporter's energy "
                                            "counter of the run's pods"})
    from .promql import Window, pod_selector

    window = Window(source.namespace, source.pods, started, ended)
    return dcgm_energy(config.prometheus_url, window, pod_selector(window, config.gpu_pod_label), config.interval)
