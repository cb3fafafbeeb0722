"""A background thread that samples a run's process tree, the machine and its GPUs at a fixed interval.

Series (one value per sample):

- ``cpu_percent``, ``memory_bytes``: CPU (100 = one core) and resident memory of the run's processes
  (the replicas and all their descendants);
- ``system_cpu_percent`` (0–100, all cores), ``system_memory_used_bytes``,
  ``system_disk_read_bytes_per_s``, ``system_disk_write_bytes_per_s``,
  ``system_net_recv_bytes_per_s``, ``system_net_sent_bytes_per_s``;
- ``gpu<i>_utilization_percent``, ``gpu<i>_memory_used_bytes``, ``gpu<i>_power_watts``,
  ``gpu<i>_sm_clock_mhz``, ``gpu<i>_temperature_celsius`` (NVML, when there are GPUs).

Finding a tree's descendants means reading every process of the machine (psutil's ``children``), so
the tree is re-read only as often as keeps that under 0.2% of wall time; in between, the processes
already found are read one by one (a fraction of a millisecond each).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .gpu import Gpus

#: (series, unix time, value)
Sample = tuple[str, float, float]
#: Share of wall time that re-reading the process tree may cost.
TREE_BUDGET = 0.002


class ProcessTree:
    """The processes under some root pids; CPU as deltas of their CPU times between two reads."""

    def __init__(self, roots: Sequence[int]) -> None:
        import psutil

        self._psutil = psutil
        self.roots = list(roots)
        self._procs: dict[int, tuple[Any, float]] = {}  # pid → (Process, CPU seconds at the last read)
        self._next_refresh = 0.0

    def refresh(self, now: float) -> None:
        """Find new descendants (costly: reads all processes), at most as often as the budget allows."""
        if now < self._next_refresh:
            return
        started = time.perf_counter()
        found: dict[int, Any] = {}
        for pid in self.roots:
            try:
                root = self._procs[pid][0] if pid in self._procs else self._psutil.Process(pid)
                found[pid] = root
                found.update((c.pid, c) for c in root.children(recursive=True))
            except self._psutil.Error:
                continue  # the replica has exited
        for pid, proc in found.items():
            if pid not in self._procs:
                self._procs[pid] = (proc, _cpu_seconds(proc, self._psutil))
        self._next_refresh = now + (time.perf_counter() - started) / TREE_BUDGET

    def read(self) -> tuple[float, float] | None:
        """CPU seconds used since the last read, and resident memory now, of the live processes;
        None once none is left (exited, or a zombie without memory, not yet reaped).
        """
        cpu = memory = 0.0
        for pid, (proc, last) in list(self._procs.items()):
            try:
                with proc.oneshot():
                    seconds = _cpu_seconds(proc, self._psutil)
                    memory += proc.memory_info().rss
            except self._psutil.Error:
                del self._procs[pid]  # exited (its last interval's CPU is lost)
                continue
            cpu += max(0.0, seconds - last)
            self._procs[pid] = (proc, seconds)
        return (cpu, memory) if memory > 0 else None


def _cpu_seconds(proc: Any, psutil: Any) -> float:
    try:
        times = proc.cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system


class SystemCounters:
    """Machine-wide CPU, memory, disk and network, as rates between two reads."""

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._last = self._counters()

    def _counters(self) -> dict[str, float]:
        ps = self._psutil
        cpu = ps.cpu_times()
        busy = sum(cpu) - cpu.idle - getattr(cpu, "iowait", 0.0)
        counters = {"cpu_total": sum(cpu), "cpu_busy": busy}
        disk, net = ps.disk_io_counters(), ps.net_io_counters()
        if disk is not None:
            counters |= {"disk_read": disk.read_bytes, "disk_write": disk.write_bytes}
        if net is not None:
            counters |= {"net_recv": net.bytes_recv, "net_sent": net.bytes_sent}
        return counters

    def read(self, seconds: float) -> dict[str, float]:
        """System series since the last read (``seconds`` of wall time ago)."""
        now, last = self._counters(), self._last
        self._last = now
        total = now["cpu_total"] - last["cpu_total"]
        values = {
            "system_cpu_percent": 100.0 * (now["cpu_busy"] - last["cpu_busy"]) / total if total > 0 else 0.0,
            "system_memory_used_bytes": float(self._psutil.virtual_memory().used),
        }
        for key, series in _RATES.items():
            if key in now and key in last and seconds > 0:
                values[series] = max(0.0, now[key] - last[key]) / seconds
        return values


_RATES = {
    "disk_read": "system_disk_read_bytes_per_s",
    "disk_write": "system_disk_write_bytes_per_s",
    "net_recv": "system_net_recv_bytes_per_s",
    "net_sent": "system_net_sent_bytes_per_s",
}


class Sampler:
    """Samples ``pids``' trees, the machine and (optionally) its GPUs every ``interval`` seconds.

    ``on_sample`` gets each sample's values as they come (the live ``/metrics`` gauges).
    """

    def __init__(self, pids: Sequence[int], interval: float = 1.0, gpu: bool = True,
                 on_sample: Callable[[dict[str, float]], None] | None = None) -> None:
        self.interval = interval
        self.samples: list[Sample] = []
        #: CPU seconds the sampling thread used once set up (for the overhead benchmark).
        self.cpu_seconds = 0.0
        self._pids, self._gpu, self._on_sample = list(pids), gpu, on_sample
        #: Why sampling did not start ("" when it did).
        self.error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kubebench-telemetry", daemon=True)
        self._last = time.monotonic()

    def start(self) -> "Sampler":
        """Start sampling in the background (at once: the setup, ~0.1 s, happens in the thread, so that
        the runner goes on to wait for the job, where an interrupt cancels it).
        """
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        """Take a last sample, stop the thread and return every sample (safe to call twice)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.samples

    def _setup(self) -> None:
        self._tree = ProcessTree(self._pids)
        self._system = SystemCounters()
        self._gpus = Gpus() if self._gpu else None
        self._last = time.monotonic()
        self._tree.refresh(self._last)

    def _loop(self) -> None:
        try:
            self._setup()
        except Exception as e:  # psutil refused /proc …: no telemetry, and the run goes on
            self.error = f"telemetry sampler did not start: {e}"
            return
        started = time.thread_time()
        try:
            while not self._stop.wait(self.interval):
                self.sample()
            self.sample()  # the end of the run, however short it was
        finally:
            self.cpu_seconds = time.thread_time() - started
            if self._gpus is not None:
                self._gpus.close()

    def sample(self) -> dict[str, float]:
        """Read every series once and append them to :attr:`samples`."""
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        if elapsed <= 0:
            return {}
        self._tree.refresh(now)
        values: dict[str, float] = {}
        tree = self._tree.read()
        if tree is not None:
            values |= {"cpu_percent": 100.0 * tree[0] / elapsed, "memory_bytes": tree[1]}
        values |= self._system.read(elapsed)
        if self._gpus is not None:
            values |= self._gpus.sample()
        stamp = time.time()
        self.samples.extend((series, stamp, value) for series, value in values.items())
        if self._on_sample is not None:
            self._on_sample(values)
        return values
