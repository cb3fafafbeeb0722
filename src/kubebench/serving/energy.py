"""GPU energy over the load generator's measured window, from NVML's total-energy counter (joules
since the driver loaded; Volta and later), never from sampled power: the same counters the runner
meters every local run with (:func:`kubebench.efficiency.counters.nvml_channels`).

Locally the server and the load generator share the machine, so the load generator's reading is the
server's GPUs'; on Kubernetes they do not, and only the run's telemetry can give it.
"""

from __future__ import annotations

from ..efficiency.counters import nvml_channels


def total_energy_joules() -> float | None:
    """Joules consumed so far by every GPU NVML sees, or None without NVML, GPUs or the counter."""
    channels, _ = nvml_channels()
    if not channels:
        return None
    try:
        return sum(channel.read() for channel in channels)
    except Exception:  # noqa: BLE001  a GPU lost or the driver gone mid-run: no figure rather than a wrong one
        return None
