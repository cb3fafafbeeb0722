"""Options of ``telemetry:`` in a spec: what each run records (read by kubebench.monitor)."""

from __future__ import annotations

from pydantic import Field, field_validator

from ..durations import parse_duration
from .base import Model


class TelemetryConfig(Model):
    """``telemetry: {enabled: true, interval: 1s, prometheus_url: …}``: what each run records.

    Local runs are sampled by a thread of the runner; Kubernetes runs' series come from the
    Prometheus server at ``prometheus_url`` (cAdvisor and DCGM exporter metrics) once the run ends.
    """

    enabled: bool = True
    #: Seconds between two samples (local) or the step of the range query (Kubernetes).
    interval: float = 1.0
    #: Sample the GPUs through NVML (local); absent GPUs or NVML are not an error.
    gpu: bool = True
    #: Kubernetes: the Prometheus server that scrapes cAdvisor (kubelet) and the DCGM exporter.
    prometheus_url: str | None = Field(None, pattern=r"^https?://")
    #: Kubernetes: the window of ``rate()`` over cAdvisor's CPU counter (at least 4 scrape intervals).
    rate_window: float = 60.0
    #: Kubernetes: the label of the DCGM exporter's series that names the pod using a GPU
    #: (``exported_pod`` where Prometheus scrapes the exporter without ``honor_labels``).
    gpu_pod_label: str = Field("pod", pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")

    @field_validator("interval", "rate_window", mode="before")
    @classmethod
    def _duration(cls, value: object) -> float:
        return parse_duration(value)
