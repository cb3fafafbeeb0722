"""Telemetry of a Kubernetes run from Prometheus: cAdvisor's container metrics and the DCGM exporter's
GPU metrics of the run's pods, over the run's time window.

The pods are found by name, with the pattern the backend gives (:class:`~kubebench.backends.base.PodTelemetry`):
every pod of a job is named after the job by its operator (PyTorchJob ``<job>-master-0``, batch Job
``<job>-<index>-<hash>``, TrainJob ``<job>-node-0-0-…``), and cAdvisor's series carry the pod's
name and namespace but not its labels.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from ..errors import PrometheusError
from ..spec.telemetry import TelemetryConfig
from .sampler import Sample

_CONTAINERS = 'container!="", container!="POD"'  # pod-level and pause-container series double count
#: Series of the whole job: summed over its pods' containers.
POD_QUERIES = {
    "cpu_percent": "sum(rate(container_cpu_usage_seconds_total{{{sel}, " + _CONTAINERS + "}}[{window}])) * 100",
    "memory_bytes": "sum(container_memory_working_set_bytes{{{sel}, " + _CONTAINERS + "}})",
}
#: Per GPU, from the DCGM exporter (``DCGM_FI_DEV_FB_USED`` is in MiB).
GPU_QUERIES = {
    "utilization_percent": "DCGM_FI_DEV_GPU_UTIL",
    "memory_used_bytes": "DCGM_FI_DEV_FB_USED * 1048576",
    "power_watts": "DCGM_FI_DEV_POWER_USAGE",
    "sm_clock_mhz": "DCGM_FI_DEV_SM_CLOCK",
    "temperature_celsius": "DCGM_FI_DEV_GPU_TEMP",
}


@dataclass(frozen=True)
class Window:
    """Whose series and when: the pods named like ``pods`` (a regular expression) in ``namespace``,
    from ``start`` to ``end`` (unix seconds)."""

    namespace: str
    pods: str
    start: float
    end: float


def pod_selector(window: Window, pod_label: str = "pod") -> str:
    """PromQL label matchers of the run's pods."""
    pattern = window.pods.replace("\\", "\\\\").replace('"', '\\"')
    return f'namespace="{window.namespace}", {pod_label}=~"{pattern}"'


def run_queries(window: Window, config: TelemetryConfig) -> dict[str, str]:
    """Series name → PromQL query (GPU queries are per GPU: ``gpu:<quantity>``)."""
    window_text = f"{int(max(config.rate_window, 2 * config.interval))}s"
    queries = {name: q.format(sel=pod_selector(window), window=window_text) for name, q in POD_QUERIES.items()}
    gpu_sel = pod_selector(window, config.gpu_pod_label)
    for quantity, metric in GPU_QUERIES.items():
        name, _, scale = metric.partition(" * ")
        query = f"max by (Hostname, gpu) ({name}{{{gpu_sel}}})"
        queries[f"gpu:{quantity}"] = f"{query} * {scale}" if scale else query
    return queries


def query_range(url: str, query: str, window: Window, step: float, timeout: float = 30.0) -> list[dict]:
    """The ``result`` of ``/api/v1/query_range`` (a matrix: ``[{metric, values: [[t, "v"], …]}, …]``)."""
    params = urllib.parse.urlencode({"query": query, "start": f"{window.start:.3f}", "end": f"{window.end:.3f}",
                                     "step": f"{step:g}s"})
    endpoint = f"{url.rstrip('/')}/api/v1/query_range?{params}"
    try:
        with urllib.request.urlopen(endpoint, timeout=timeout) as response:
            body = json.load(response)
    except urllib.error.HTTPError as e:
        raise PrometheusError(f"Prometheus {url}: HTTP {e.code} for {query!r}: {_error_of(e)}") from e
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise PrometheusError(f"Prometheus {url}: cannot query: {getattr(e, 'reason', e)}") from e
    if body.get("status") != "success":
        raise PrometheusError(f"Prometheus {url}: {body.get('error', 'query failed')} for {query!r}")
    return body["data"]["result"]


def _error_of(e: urllib.error.HTTPError) -> str:
    try:
        return json.loads(e.read()).get("error", "")
    except (ValueError, OSError):
        return ""


def pod_telemetry(window: Window, config: TelemetryConfig) -> list[Sample]:
    """Every series of the run's pods over its window, named as the local sampler names them."""
    assert config.prometheus_url is not None
    samples: list[Sample] = []
    gpu_results: dict[str, list[dict]] = {}
    for name, query in run_queries(window, config).items():
        result = query_range(config.prometheus_url, query, window, config.interval)
        if name.startswith("gpu:"):
            gpu_results[name[4:]] = result
        else:
            samples += [(name, float(t), float(v)) for series in result for t, v in series["values"]]
    gpus = sorted({_gpu_key(s["metric"]) for result in gpu_results.values() for s in result})
    for quantity, result in gpu_results.items():
        for series in result:
            index = gpus.index(_gpu_key(series["metric"]))
            samples += [(f"gpu{index}_{quantity}", float(t), float(v)) for t, v in series["values"]]
    return samples


def _gpu_key(labels: dict[str, str]) -> tuple[str, int]:
    gpu = labels.get("gpu", "0")
    return labels.get("Hostname", ""), int(gpu) if gpu.isdigit() else 0
