"""A Kubernetes run's GPU energy from the DCGM exporter's energy counter, scraped by a real Prometheus."""

from __future__ import annotations

import time

import pytest

from kubebench.backends.base import PodTelemetry
from kubebench.efficiency.counters import SOURCE_KEY, UNAVAILABLE_KEY
from kubebench.monitor.energy import DCGM_ENERGY, pods_energy
from kubebench.monitor.recorder import RunTelemetry
from kubebench.spec.telemetry import TelemetryConfig
from kubebench.store.records import RunResult
from kubebench.testing.prometheus import PrometheusServer

pytestmark = pytest.mark.slow
RUN = "r00112233445566aa"
#: Watts of each GPU: the run's two, and another run's on the same node.
GPUS = {("0", f"kb-{RUN}-master-0"): 100.0, ("1", f"kb-{RUN}-worker-0"): 300.0, ("2", "kb-other-master-0"): 5000.0}


class Dcgm:
    """The DCGM exporter's energy counter (millijoules since boot) of GPUs drawing constant power."""

    def __init__(self) -> None:
        self.start = time.time()

    def describe(self) -> list:
        return []

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        # dcgm-exporter declares it a counter but names it without prometheus_client's "_total" suffix.
        elapsed = time.time() - self.start
        family = GaugeMetricFamily(DCGM_ENERGY, "", labels=["gpu", "UUID", "Hostname", "namespace", "pod"])
        for (gpu, pod), watts in GPUS.items():
            family.add_metric([gpu, f"GPU-{gpu}", "node1", "bench", pod], 7e9 + watts * elapsed * 1000)
        yield family


@pytest.fixture(scope="module")
def dcgm(prometheus: PrometheusServer, exporter_port: int):
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()
    registry.register(Dcgm())
    server, _ = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    prometheus.wait_for(f'count_over_time({DCGM_ENERGY}{{gpu="1"}}[1m]) > 5')
    yield
    server.shutdown()
    server.server_close()


def pods(run: str = RUN) -> PodTelemetry:
    """A run's pods as the Kubernetes backend names them."""
    return PodTelemetry("bench", f"kb-{run}-.*")


def test_each_gpu_of_the_run_s_pods_gets_its_energy(dcgm, prometheus: PrometheusServer) -> None:
    now = time.time()
    config = TelemetryConfig(prometheus_url=prometheus.url, interval=1.0)
    energy = pods_energy(config, pods(), now - 5, now - 1)
    m = energy.metrics
    # The same scrapes bound both GPUs' windows, so their energies are in the ratio of their power;
    # the window is 4 s give or take a scrape at each end.
    assert m["gpu1_energy_joules"] == pytest.approx(3 * m["gpu0_energy_joules"], rel=1e-6)
    assert 100 * 2 <= m["gpu0_energy_joules"] <= 100 * 6
    assert m["energy_joules"] == m["gpu_energy_joules"] == m["gpu0_energy_joules"] + m["gpu1_energy_joules"]
    assert "gpu2_energy_joules" not in m  # another run's GPU
    assert energy.info == {SOURCE_KEY: f"DCGM exporter {DCGM_ENERGY} via Prometheus (2 GPUs)"}


def test_a_kubernetes_run_records_dcgm_energy(dcgm, prometheus: PrometheusServer) -> None:
    telemetry = RunTelemetry(TelemetryConfig(prometheus_url=prometheus.url, interval=1.0), "exp", RUN)
    telemetry.start(pods())
    telemetry.started -= 4
    telemetry.stop()

    class Store:
        def add_telemetry(self, run_id, samples) -> None: ...

    result = telemetry.record(Store(), RunResult(run_id=RUN, status="succeeded", finished_at=time.time()))
    assert result.metrics["gpu_energy_joules"] > 0 and result.info[SOURCE_KEY].startswith("DCGM exporter")


def test_pods_without_dcgm_series_say_so(dcgm, prometheus: PrometheusServer) -> None:
    now = time.time()
    energy = pods_energy(TelemetryConfig(prometheus_url=prometheus.url), pods("rnotarun"), now - 5, now)
    assert energy.metrics == {} and "no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION series" in energy.info[UNAVAILABLE_KEY]
