"""The telemetry sampler on real processes, and the summaries made from its samples."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from support.timing import scaled, time_factor, wait_for

from kubebench.monitor.gpu import Gpus
from kubebench.monitor.sampler import ProcessTree, Sampler
from kubebench.monitor.summary import by_series, summarize

# a parent that sleeps and a child that spins one core and holds 64 MiB
SPIN = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
        "'import time; b = bytearray(64 << 20); t = time.time()\\nwhile time.time() - t < 30: pass'])")


def test_the_sampler_sees_a_child_spinning_one_core() -> None:
    parent = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True)
    try:
        # The child exists before the tree is first read.
        (child,) = wait_for(lambda: psutil.Process(parent.pid).children(), 30, "the spinning child")
        before = sum(child.cpu_times()[:2])
        started = time.monotonic()
        sampler = Sampler([parent.pid], interval=0.2, gpu=False).start()
        time.sleep(2.0)  # the window sampled, not a wait for something to happen
        samples = sampler.stop()
        elapsed = time.monotonic() - started
        used = sum(child.cpu_times()[:2]) - before
    finally:
        os.killpg(parent.pid, signal.SIGKILL)  # the parent and its child
        parent.wait()
    series = by_series(samples)
    points = series["cpu_percent"]
    # CPU% × interval adds up to the CPU time the child used (one core at most, less on a busy machine)
    sampled = sum(v / 100 * (t - t0) for (t0, _), (t, v) in zip(points, points[1:])) + points[0][1] / 100 * 0.2
    assert used == pytest.approx(sampled, rel=0.2)
    assert max(v for _, v in points) <= 115
    assert max(v for _, v in series["memory_bytes"]) > 64 << 20
    assert {"system_cpu_percent", "system_memory_used_bytes", "system_net_recv_bytes_per_s"} <= set(series)
    # Every 0.2 s for ~2 s, plus the last one: never more; fewer only when the machine is slow.
    assert 8 / time_factor() <= len(series["system_cpu_percent"]) <= elapsed / 0.2 + 2
    assert sampler.cpu_seconds < scaled(0.2)


def test_a_tree_of_exited_processes_records_no_process_series() -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    tree = ProcessTree([process.pid])
    tree.refresh(time.monotonic())
    assert tree.read() is None


def test_no_gpu_is_not_an_error() -> None:
    gpus = Gpus()  # no NVML library / driver here: no devices; with GPUs, one sample series set per device
    sample = gpus.sample()
    assert (sample == {}) if gpus.count == 0 else len(sample) >= gpus.count
    gpus.close()
    gpus.close()


def test_summaries_of_samples() -> None:
    samples = [("cpu_percent", 1.0, 50.0), ("cpu_percent", 2.0, 150.0), ("memory_bytes", 1.0, 10.0),
               ("memory_bytes", 2.0, 30.0), ("gpu0_utilization_percent", 1.0, 80.0),
               ("gpu0_utilization_percent", 2.0, 100.0), ("gpu1_utilization_percent", 1.0, 20.0),
               ("gpu0_memory_used_bytes", 1.0, 5.0), ("gpu0_power_watts", 1.0, 300.0),
               ("system_cpu_percent", 1.0, 40.0)]
    assert summarize(samples) == {
        "cpu_percent_mean": 100.0, "cpu_percent_max": 150.0, "memory_peak_bytes": 30.0,
        "system_cpu_percent_mean": 40.0, "gpu0_utilization_mean": 90.0, "gpu0_utilization_max": 100.0,
        "gpu1_utilization_mean": 20.0, "gpu1_utilization_max": 20.0, "gpu0_memory_peak_bytes": 5.0,
        "gpu0_power_mean_watts": 300.0, "gpu_utilization_mean": 55.0,
    }


def test_a_run_too_short_to_be_seen_has_no_summaries_and_no_plot() -> None:
    from kubebench.monitor.plots import telemetry_figure

    samples = [("system_cpu_percent", 1.0, 40.0), ("system_memory_used_bytes", 1.0, 1e9)]
    assert summarize(samples) == {}
    assert telemetry_figure({"r1": by_series(samples)}, "t") is None
