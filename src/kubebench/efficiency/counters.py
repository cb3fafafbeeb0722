"""Energy of a run from this machine's hardware counters, never from guesses.

Pure (no kubebench import): the runner meters a local run with it (:mod:`kubebench.monitor.recorder`)
and a workload meters its own measured steps (:mod:`kubebench.workloads.llm_efficiency`); the DCGM
counter of a Kubernetes run's pods is read by :mod:`kubebench.monitor.energy`.

Sources, each a cumulative counter read at the start and at the end of the run:

- NVIDIA GPUs: NVML's total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since
  the driver loaded; Volta and later). The difference of two reads is the energy in between, exactly,
  unlike power sampled now and then and integrated.
- CPU packages: Linux powercap RAPL zones ``/sys/class/powercap/intel-rapl:<n>`` named ``package-<n>``
  (Intel, and AMD Zen through the same driver), ``energy_uj`` in microjoules. The counter wraps at
  ``max_energy_range_uj`` (minutes at full power on big packages), so a meter with RAPL channels reads
  them every ``poll`` seconds in the background and adds up the steps. Since Linux 5.10 ``energy_uj`` is
  readable by root only (CVE-2020-8694): then the reason is recorded, not a number.

Counters are machine-wide: a GPU or package shared with other work is charged to the run. Local runs
read every GPU NVML sees and every package. Stored as run metrics ``energy_joules`` (all channels),
``gpu_energy_joules``, ``cpu_energy_joules``, ``gpu<i>_energy_joules``, ``cpu_package<i>_energy_joules``,
with ``energy_source`` in the run's info; a run without any readable counter gets
``energy_unavailable`` (why) instead.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

POWERCAP = Path("/sys/class/powercap")
SOURCE_KEY, UNAVAILABLE_KEY = "energy_source", "energy_unavailable"
#: Info key of the counters that could not be read in a run whose others were.
NOT_MEASURED_KEY = "energy_not_measured"
#: Seconds between reads of counters that wrap (RAPL); NVML's 64-bit counter never does.
POLL_S = 20.0
_ZONE = re.compile(r"^intel-rapl:(\d+)$")


@dataclass(frozen=True)
class Channel:
    """One cumulative energy counter: ``read()`` gives joules; ``wrap`` is where it restarts at 0."""

    metric: str  # gpu0, cpu_package0
    read: Callable[[], float]
    wrap: float | None = None


@dataclass(frozen=True)
class Energy:
    """What a meter found: metrics for the run and its info (the source, or why there is none)."""

    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)


def nvml_channels(nvml: Any = None, uuids: list[str] | None = None) -> tuple[list[Channel], str]:
    """One channel per GPU (those with ``uuids`` only, when given); else no channel and why.

    ``nvml``: the ``pynvml`` module, or a stand-in with the same functions (tests without a GPU).
    """
    try:
        if nvml is None:
            import pynvml

            nvml = pynvml
        nvml.nvmlInit()
    except Exception as e:  # ImportError, NVMLError_LibraryNotFound, NVMLError_DriverNotLoaded …
        return [], f"NVML unavailable ({_short(e)})"
    try:
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        if uuids is not None:
            handles = [nvml.nvmlDeviceGetHandleByUUID(u) for u in uuids]
        channels = []
        for index, handle in enumerate(handles):
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # NOT_SUPPORTED before Volta: say so
            channels.append(Channel(f"gpu{index}", _nvml_reader(nvml, handle)))
    except Exception as e:
        return [], f"NVML energy counter unreadable ({_short(e)})"
    return channels, "" if channels else "NVML sees no GPU"


def _nvml_reader(nvml: Any, handle: Any) -> Callable[[], float]:
    return lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle) / 1000.0  # millijoules


def _rapl_reader(counter: Path) -> Callable[[], float]:
    return lambda: _read_uj(counter) / 1e6  # microjoules


def rapl_channels(root: Path = POWERCAP) -> tuple[list[Channel], str]:
    """One channel per CPU package RAPL zone; else no channel and why (absent, or not readable)."""
    if not root.is_dir():
        return [], f"RAPL: {root} absent (no powercap driver, or not Linux)"
    channels, errors = [], []
    try:
        zones = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError as e:
        return [], f"RAPL: cannot list {root} ({e.strerror or e})"
    for zone in zones:
        match = _ZONE.match(zone.name)
        if not match or not _read_text(zone / "name").startswith("package"):
            continue
        counter = zone / "energy_uj"
        try:
            _read_uj(counter)
            wrap = _read_uj(zone / "max_energy_range_uj") / 1e6
        except (OSError, ValueError) as e:
            errors.append(f"{counter}: {getattr(e, 'strerror', None) or e}")
            continue
        channels.append(Channel(f"cpu_package{match.group(1)}", _rapl_reader(counter), wrap))
    if channels:
        return channels, ""
    if errors:
        return [], "RAPL not readable (" + "; ".join(errors) + "; root only since Linux 5.10)"
    return [], f"RAPL: no package zone under {root}"


def _read_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _read_uj(path: Path) -> float:
    return float(path.read_text().strip())


class Meter:
    """Energy over a window: ``start()`` … ``stop()`` → :class:`Energy`. Never raises for a counter:
    one that fails mid-run drops out of the result, with the reason in its info."""

    def __init__(self, channels: list[Channel], sources: str, unavailable: str = "", poll: float = POLL_S) -> None:
        self.channels, self.sources, self.unavailable, self.poll = channels, sources, unavailable, poll
        self._last: dict[str, float] = {}
        self._total: dict[str, float] = {}
        self._failed: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Meter:
        """First read of every counter; a background thread keeps up with counters that wrap."""
        for channel in self.channels:
            self._total[channel.metric] = 0.0
            self._advance(channel, first=True)
        if any(c.wrap for c in self.channels):
            thread = threading.Thread(target=self._loop, name="kubebench-energy", daemon=True)
            try:
                thread.start()
                self._thread = thread
            except RuntimeError:  # no thread to spare: counters are still read at the end (one wrap is caught)
                pass
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.poll):
            self.read_all()

    def read_all(self) -> None:
        """Read every counter now and add what each advanced since its last read."""
        for channel in self.channels:
            self._advance(channel)

    def _advance(self, channel: Channel, first: bool = False) -> None:
        with self._lock:
            if channel.metric in self._failed:
                return
            try:
                value = channel.read()
            except Exception as e:  # a GPU lost, a file gone: this channel's figure would be wrong
                self._failed[channel.metric] = _short(e)
                return
            if not first:
                step = value - self._last[channel.metric]
                if step < 0 and channel.wrap:
                    step += channel.wrap  # the counter restarted from 0 once since the last read
                self._total[channel.metric] += max(0.0, step)
            self._last[channel.metric] = value

    def stop(self) -> Energy:
        """Last read; the energy of every channel that could be read from start to stop."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.read_all()
        totals = {m: j for m, j in self._total.items() if m not in self._failed}
        info = {}
        if self._failed:
            info["energy_warning"] = "; ".join(f"{m}: counter failed ({why})" for m, why in self._failed.items())
        if not totals:
            reason = "; ".join(r for r in (self.unavailable, info.pop("energy_warning", "")) if r)
            return Energy({}, {UNAVAILABLE_KEY: reason or "no energy counter"})
        if self.unavailable:
            info[NOT_MEASURED_KEY] = self.unavailable
        return Energy(energy_metrics(totals), {SOURCE_KEY: self.sources, **info})


def energy_metrics(per_channel: dict[str, float]) -> dict[str, float]:
    """Run metrics from joules per channel: each ``<channel>_energy_joules``, the GPU and CPU sums, the total."""
    metrics = {f"{m}_energy_joules": j for m, j in per_channel.items()}
    gpus = [j for m, j in per_channel.items() if m.startswith("gpu")]
    cpus = [j for m, j in per_channel.items() if m.startswith("cpu")]
    if gpus:
        metrics["gpu_energy_joules"] = sum(gpus)
    if cpus:
        metrics["cpu_energy_joules"] = sum(cpus)
    metrics["energy_joules"] = sum(per_channel.values())
    return metrics


def local_meter(nvml: Any = None, powercap: Path = POWERCAP, poll: float = POLL_S) -> Meter:
    """A meter of this machine's counters: every GPU NVML sees and every CPU package RAPL shows."""
    gpus, gpu_why = nvml_channels(nvml)
    cpus, cpu_why = rapl_channels(powercap)
    sources = []
    if gpus:
        sources.append(f"NVML total-energy counter ({len(gpus)} GPU{'s' if len(gpus) > 1 else ''})")
    if cpus:
        sources.append(f"RAPL powercap ({len(cpus)} CPU package{'s' if len(cpus) > 1 else ''})")
    why = "; ".join(w for w in (gpu_why, cpu_why) if w)
    return Meter(gpus + cpus, " + ".join(sources), why, poll)


def _short(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return text.splitlines()[0][:200]
