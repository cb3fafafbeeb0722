"""Energy counters: RAPL from a powercap tree (a real folder laid out as Linux lays it out), NVML
through a stand-in with pynvml's functions (no GPU is lent to these tests: the stand-in is the only
way to exercise the NVML path here; bench/gpu.py checks it against a real GPU), and what a run on
this machine records."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kubebench.backends.base import PodTelemetry, ProcessTelemetry
from kubebench.efficiency.counters import (
    NOT_MEASURED_KEY,
    SOURCE_KEY,
    UNAVAILABLE_KEY,
    Meter,
    energy_metrics,
    local_meter,
    nvml_channels,
    rapl_channels,
)
from kubebench.monitor.recorder import RunTelemetry
from kubebench.spec.telemetry import TelemetryConfig
from kubebench.store.records import RunResult


def zone(root: Path, name: str, label: str, uj: int, max_uj: int = 262_143_328_850) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(label + "\n")
    (folder / "energy_uj").write_text(f"{uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return folder


def test_rapl_packages_are_read_and_a_wrapped_counter_is_added_up(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", 990_000_000, max_uj=1_000_000_000)
    zone(tmp_path, "intel-rapl:0:0", "core", 5)  # a sub-zone: inside the package's figure already
    zone(tmp_path, "intel-rapl:1", "psys", 5)  # the platform zone: not a package
    zone(tmp_path, "intel-rapl:2", "package-1", 1_000_000)
    channels, why = rapl_channels(tmp_path)
    assert [c.metric for c in channels] == ["cpu_package0", "cpu_package2"] and why == ""
    meter = Meter(channels, "RAPL", poll=3600).start()
    (package / "energy_uj").write_text("5000000\n")  # 10 J to the wrap, then 5 J
    meter.read_all()
    (package / "energy_uj").write_text("8000000\n")  # 3 J more
    (tmp_path / "intel-rapl:2" / "energy_uj").write_text("3000000\n")
    energy = meter.stop()
    assert energy.metrics["cpu_package0_energy_joules"] == pytest.approx(18.0)
    assert energy.metrics["cpu_package2_energy_joules"] == pytest.approx(2.0)
    assert energy.metrics["cpu_energy_joules"] == energy.metrics["energy_joules"] == pytest.approx(20.0)
    assert energy.info == {SOURCE_KEY: "RAPL"}


def test_unreadable_or_absent_rapl_says_why(tmp_path: Path) -> None:
    assert "absent" in rapl_channels(tmp_path / "none")[1]
    assert "no package zone" in rapl_channels(tmp_path)[1]
    folder = zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (folder / "energy_uj").unlink()
    (folder / "energy_uj").mkdir()  # unreadable (root reads through permission bits, so not chmod)
    channels, why = rapl_channels(tmp_path)
    assert channels == [] and why.startswith("RAPL not readable") and "energy_uj" in why


class FakeNvml:
    """pynvml's functions that the energy meter calls, over counters the test moves."""

    class NVMLError(Exception):
        pass

    def __init__(self, millijoules: list[int], supported: bool = True, init_error: str = "") -> None:
        self.millijoules, self.supported, self.init_error = millijoules, supported, init_error

    def nvmlInit(self) -> None:
        if self.init_error:
            raise self.NVMLError(self.init_error)

    def nvmlDeviceGetCount(self) -> int:
        return len(self.millijoules)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        return int(uuid.removeprefix("GPU-"))

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        if not self.supported:
            raise self.NVMLError("Not Supported")
        return self.millijoules[handle]


def test_nvml_counters_give_each_gpu_s_energy_over_the_window() -> None:
    nvml = FakeNvml([1_000_000, 2_000_000])
    channels, why = nvml_channels(nvml)
    meter = Meter(channels, "NVML").start()
    nvml.millijoules[0] += 150_000  # 150 J
    nvml.millijoules[1] += 450_500
    energy = meter.stop()
    assert energy.metrics == {"gpu0_energy_joules": 150.0, "gpu1_energy_joules": 450.5,
                              "gpu_energy_joules": 600.5, "energy_joules": 600.5}
    assert [c.metric for c in nvml_channels(nvml, uuids=["GPU-1"])[0]] == ["gpu0"]  # one replica's own GPU


def test_no_driver_or_an_old_gpu_says_why_and_gives_no_number(tmp_path: Path) -> None:
    meter = local_meter(FakeNvml([], init_error="Driver Not Loaded"), tmp_path / "none").start()
    energy = meter.stop()
    assert energy.metrics == {}
    assert "NVML unavailable (Driver Not Loaded)" in energy.info[UNAVAILABLE_KEY]
    assert "RAPL:" in energy.info[UNAVAILABLE_KEY]
    assert "NVML energy counter unreadable (Not Supported)" in nvml_channels(FakeNvml([5], supported=False))[1]


def test_gpus_measured_and_cpus_not_says_which_is_missing(tmp_path: Path) -> None:
    nvml = FakeNvml([0])
    meter = local_meter(nvml, tmp_path / "none").start()
    nvml.millijoules[0] = 2000
    energy = meter.stop()
    assert energy.metrics["energy_joules"] == 2.0
    assert energy.info[SOURCE_KEY] == "NVML total-energy counter (1 GPU)" and "RAPL" in energy.info[NOT_MEASURED_KEY]


def test_a_counter_failing_mid_run_drops_out_with_a_warning() -> None:
    nvml = FakeNvml([0, 0])
    meter = Meter(nvml_channels(nvml)[0], "NVML").start()
    nvml.millijoules[0] = 1000
    nvml.millijoules.pop()  # GPU 1 is lost
    energy = meter.stop()
    assert energy.metrics == energy_metrics({"gpu0": 1.0})
    assert "gpu1: counter failed" in energy.info["energy_warning"]


LOCAL = ProcessTelemetry(())  # a local job's processes (none needed: the meter reads the machine)


def test_a_local_run_records_its_energy_or_why_it_has_none() -> None:
    telemetry = RunTelemetry(TelemetryConfig(gpu=False), "exp", "run")
    telemetry.start(LOCAL)
    telemetry.stop()

    class Store:
        def add_telemetry(self, run_id, samples) -> None: ...

    result = telemetry.record(Store(), RunResult(run_id="run", status="succeeded", metrics={"x": 1.0},
                                                 finished_at=time.time()))
    # This machine may or may not have readable counters; either way the run says which.
    if "energy_joules" in result.metrics:
        assert result.metrics["energy_joules"] >= 0 and result.info[SOURCE_KEY]
    else:
        assert result.info[UNAVAILABLE_KEY]
    assert result.metrics["x"] == 1.0


def test_telemetry_off_or_no_energy_source_is_said_too() -> None:
    off = RunTelemetry(TelemetryConfig(enabled=False), "exp", "run")
    off.start(LOCAL)
    result = off.record(None, RunResult(run_id="run", status="succeeded", finished_at=time.time()))
    assert result.info[UNAVAILABLE_KEY] == "telemetry is disabled (telemetry.enabled: false)"

    kube = RunTelemetry(TelemetryConfig(), "exp", "run")
    kube.start(PodTelemetry("bench", "kb-run-.*"))
    result = kube.record(None, RunResult(run_id="run", status="succeeded", finished_at=time.time()))
    assert "set telemetry.prometheus_url" in result.info[UNAVAILABLE_KEY]
