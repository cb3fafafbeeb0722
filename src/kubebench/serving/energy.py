"""GPU energy over the load generator's measured window, from NVML's total-energy counter (millijoules
since the driver loaded; Volta and later), never from sampled power.

HOOK: the "efficiency" work adds ``kubebench.monitor.energy`` (the NVML energy reader of every run);
once it is merged, :func:`total_energy_joules` should call it instead of reading NVML here. Locally
the server and the load generator share the machine, so the load generator's reading is the
server's GPUs'; on Kubernetes they do not, and only the run's telemetry can give it.
"""

from __future__ import annotations


def total_energy_joules() -> float | None:
    """Joules consumed so far by every GPU NVML sees, or None without NVML, GPUs or the counter."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            return None
        total = 0
        for i in range(count):
            total += pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(i))
        return total / 1000.0
    except pynvml.NVMLError:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
