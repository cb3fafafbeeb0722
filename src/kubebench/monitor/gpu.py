"""GPUs through NVML (``nvidia-ml-py``): utilisation, memory, power, SM clock and temperature.

No NVML library, no driver or no GPU is not an error: :class:`Gpus` then has no devices.
"""

from __future__ import annotations

from typing import Any


class Gpus:
    """The machine's GPUs, opened once; :meth:`sample` reads each one's counters (about 1 ms per GPU)."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # ImportError, NVMLError (no driver, no library): no GPUs to sample
            return
        self._nvml = pynvml
        try:
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except pynvml.NVMLError:
            self.close()

    @property
    def count(self) -> int:
        """Number of GPUs sampled."""
        return len(self._handles)

    def sample(self) -> dict[str, float]:
        """``gpu<i>_<quantity>`` → value for every GPU; a counter a GPU does not support is left out."""
        values: dict[str, float] = {}
        for index, handle in enumerate(self._handles):
            for name, read in _READERS:
                try:
                    values[f"gpu{index}_{name}"] = float(read(self._nvml, handle))
                except self._nvml.NVMLError:
                    pass  # NOT_SUPPORTED (power on some boards), GPU_IS_LOST …: leave the gap
        return values

    def close(self) -> None:
        """Release NVML (safe to call twice)."""
        nvml, self._nvml, self._handles = self._nvml, None, []
        if nvml is not None:
            try:
                nvml.nvmlShutdown()
            except nvml.NVMLError:
                pass


_READERS = (
    ("utilization_percent", lambda nv, h: nv.nvmlDeviceGetUtilizationRates(h).gpu),
    ("memory_used_bytes", lambda nv, h: nv.nvmlDeviceGetMemoryInfo(h).used),
    ("power_watts", lambda nv, h: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),  # NVML answers milliwatts
    ("sm_clock_mhz", lambda nv, h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
    ("temperature_celsius", lambda nv, h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
)
