"""A Kubernetes run's telemetry from Prometheus: cAdvisor and DCGM exporter series, made for the test,
scraped by a real Prometheus and queried over the run's window.
"""

from __future__ import annotations

import time

import pytest
from support.timing import scaled

from kubebench.backends.base import PodTelemetry
from kubebench.errors import PrometheusError
from kubebench.monitor.promql import Window, pod_telemetry, run_queries
from kubebench.monitor.recorder import WARNING_KEY, RunTelemetry
from kubebench.spec.telemetry import TelemetryConfig
from kubebench.store.records import RunResult
from kubebench.testing.prometheus import PrometheusServer

pytestmark = pytest.mark.slow
RUN = "r0123456789abcdef"
PODS = {f"kb-{RUN}-master-0": (0.5, 100 << 20), f"kb-{RUN}-worker-0": (0.25, 50 << 20),
        "kb-otherrun-master-0": (4.0, 1 << 30)}  # another run's pod: left out


class Exporters:
    """cAdvisor's and the DCGM exporter's series as a kubelet and a GPU node would expose them."""

    def __init__(self) -> None:
        self.start = time.time()

    def describe(self) -> list:
        return []

    def collect(self):
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        # Stamped with the time they were read, as cAdvisor stamps its samples: Prometheus then keeps that
        # time, not its scrape's, and the rate of cores × elapsed is the cores exactly, however late a
        # busy machine runs this collector after the scrape began (±5% missed by 0.2 s of lag, CI 2026-12-01).
        now = time.time()
        elapsed = now - self.start
        cpu = CounterMetricFamily("container_cpu_usage_seconds", "", labels=["namespace", "pod", "container"])
        memory = GaugeMetricFamily("container_memory_working_set_bytes", "", labels=["namespace", "pod", "container"])
        for pod, (cores, rss) in PODS.items():
            cpu.add_metric(["bench", pod, "main"], cores * elapsed, timestamp=now)
            cpu.add_metric(["bench", pod, ""], cores * elapsed, timestamp=now)  # the pod's cgroup: would count twice
            memory.add_metric(["bench", pod, "main"], rss, timestamp=now)
            memory.add_metric(["bench", pod, "POD"], 1 << 20, timestamp=now)  # the pause container
        yield cpu
        yield memory
        labels = ["gpu", "UUID", "Hostname", "namespace", "pod", "container"]
        for name, values in {"DCGM_FI_DEV_GPU_UTIL": (80, 40), "DCGM_FI_DEV_FB_USED": (1024, 512),
                             "DCGM_FI_DEV_POWER_USAGE": (300.5, 150.0), "DCGM_FI_DEV_SM_CLOCK": (1980, 1980),
                             "DCGM_FI_DEV_GPU_TEMP": (60, 55)}.items():
            family = GaugeMetricFamily(name, "", labels=labels)
            family.add_metric(["0", "GPU-a", "node1", "bench", f"kb-{RUN}-master-0", "main"], values[0])
            family.add_metric(["1", "GPU-b", "node1", "bench", f"kb-{RUN}-worker-0", "main"], values[1])
            family.add_metric(["2", "GPU-c", "node1", "bench", "kb-otherrun-master-0", "main"], 99)
            yield family


@pytest.fixture(scope="module")
def exporters(prometheus: PrometheusServer, exporter_port: int):
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    registry.register(Exporters())
    server, _ = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    # The tests look at rates over 3 s windows from 7 s ago: a window reaching before the series began
    # reads low (Prometheus extrapolates only half a scrape past the first sample), 64% for 75%.
    prometheus.wait_for(f'count_over_time(container_memory_working_set_bytes{{pod="kb-{RUN}-master-0"}}[1m]) > 10',
                        scaled(30))
    yield
    server.shutdown()
    server.server_close()


def KubeHandle() -> PodTelemetry:  # noqa: N802  what the Kubernetes backend gives: the job's pods
    return PodTelemetry("bench", f"kb-{RUN}.*")


def config(prometheus: PrometheusServer) -> TelemetryConfig:
    return TelemetryConfig(prometheus_url=prometheus.url, interval=1.0, rate_window="3s")


def test_the_run_s_pods_series_come_from_prometheus(exporters, prometheus: PrometheusServer) -> None:
    now = time.time()
    samples = pod_telemetry(Window("bench", f"kb-{RUN}.*", now - 4, now - 1), config(prometheus))
    series: dict[str, list[float]] = {}
    for name, _, value in samples:
        series.setdefault(name, []).append(value)
    assert len(series["cpu_percent"]) >= 3
    assert all(v == pytest.approx(75, rel=0.05) for v in series["cpu_percent"]), series["cpu_percent"]  # 0.5 + 0.25 cores
    assert set(series["memory_bytes"]) == {150 << 20}
    assert set(series["gpu0_utilization_percent"]) == {80} and set(series["gpu1_utilization_percent"]) == {40}
    assert set(series["gpu0_memory_used_bytes"]) == {1024 << 20}
    assert set(series["gpu0_power_watts"]) == {300.5}
    assert {"gpu0_sm_clock_mhz", "gpu0_temperature_celsius"} <= set(series) and "gpu2_utilization_percent" not in series


def test_a_kubernetes_run_records_its_telemetry(exporters, prometheus: PrometheusServer) -> None:
    recorded: dict = {}

    class Store:  # the part of the store the recorder writes to
        def add_telemetry(self, run_id, samples):
            recorded[run_id] = list(samples)

    telemetry = RunTelemetry(config(prometheus), "exp", RUN)
    telemetry.start(KubeHandle())
    telemetry.started -= 4  # the run began 4 s ago
    telemetry.stop()
    result = telemetry.record(Store(), RunResult(run_id=RUN, status="succeeded", metrics={"ips": 5.0},
                                                 finished_at=time.time()))
    assert recorded[RUN] and WARNING_KEY not in result.info
    assert result.metrics["ips"] == 5.0
    assert result.metrics["cpu_percent_mean"] == pytest.approx(75, rel=0.05)
    assert result.metrics["gpu_utilization_mean"] == 60
    assert result.metrics["memory_peak_bytes"] == 150 << 20


def test_an_unreachable_prometheus_is_a_warning() -> None:
    from kubebench.testing.postgres import free_port

    telemetry = RunTelemetry(TelemetryConfig(prometheus_url=f"http://127.0.0.1:{free_port()}"), "exp", RUN)
    telemetry.start(KubeHandle())
    result = telemetry.record(None, RunResult(run_id=RUN, status="succeeded", finished_at=time.time()))
    assert "cannot query" in result.info[WARNING_KEY]


def test_a_refused_query_says_why(prometheus: PrometheusServer) -> None:
    from kubebench.monitor.promql import query_range

    with pytest.raises(PrometheusError, match="HTTP 400 .*parse error"):
        query_range(prometheus.url, "sum(", Window("bench", f"kb-{RUN}.*", 0, 1), 1.0)


def test_the_queries_select_the_run_s_pods_by_name() -> None:
    queries = run_queries(Window("bench", f"kb-{RUN}.*", 0, 1), TelemetryConfig(gpu_pod_label="exported_pod"))
    assert queries["cpu_percent"] == (
        f'sum(rate(container_cpu_usage_seconds_total{{namespace="bench", pod=~"kb-{RUN}.*", '
        'container!="", container!="POD"}[60s])) * 100')
    assert queries["gpu:memory_used_bytes"] == (
        f'max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED{{namespace="bench", exported_pod=~"kb-{RUN}.*"}}) * 1048576')
