"""What the LLM workload measures about its device: its name, the precision it computes in, the peak
FLOP/s its MFU is measured against, and the energy its GPU used over the measured steps.

GPUs take their peak from :mod:`kubebench.efficiency.peaks` (by the device's name); a CPU has no
datasheet figure that a PyTorch run could reach, so its peak is *measured*: the best rate of square
matmuls in the run's precision on the run's threads, taken while every replica measures at once (so
replicas sharing a machine share it as they did while training).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ..efficiency.counters import Meter, nvml_channels
from ..efficiency.peaks import Peak, device_peak, why_no_peak
from .measure import cpu_name

#: Matmul size and time budget of the CPU peak measurement.
CPU_PEAK_N, CPU_PEAK_S = 512, 0.5


def device_name(device: torch.device) -> str:
    """The GPU's name (as NVML gives it) or the CPU's model."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_name()


def precision(device: torch.device, amp: str) -> str:
    """The precision of the matmuls: the autocast dtype, else fp32 (tf32 where CUDA allows it)."""
    if amp in ("bf16", "fp16"):
        return amp
    if device.type == "cuda" and torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    return "fp32"


@dataclass(frozen=True)
class PeakFound:
    """The peak (or None) and, without one, why."""

    peak: Peak | None
    reason: str = ""


def find_peak(device: torch.device, amp: str) -> PeakFound:
    """The table's peak for a GPU, or the measured one of this CPU."""
    name, prec = device_name(device), precision(device, amp)
    if device.type == "cuda":
        peak = device_peak(name, prec)
        return PeakFound(peak, "" if peak else why_no_peak(name, prec))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(prec, torch.float32)
    rate = measure_matmul_flops(dtype)
    source = f"measured: best {CPU_PEAK_N}x{CPU_PEAK_N} {prec} matmul on {torch.get_num_threads()} threads"
    return PeakFound(Peak(rate, name, prec, source))


def measure_matmul_flops(dtype: torch.dtype, n: int = CPU_PEAK_N, seconds: float = CPU_PEAK_S) -> float:
    """Best FLOP/s of ``n``×``n`` matmuls on this process's CPU threads within ``seconds``."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    torch.mm(a, b)  # first call: allocation and kernel choice
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        torch.mm(a, b)
        best = max(best, 2 * n**3 / (time.perf_counter() - start))
    return best


def gpu_meter(device: torch.device) -> Meter | None:
    """A meter of this replica's own GPU (found by UUID, so CUDA_VISIBLE_DEVICES does not matter)."""
    if device.type != "cuda":
        return None
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    uuids = [_nvml_uuid(uuid)] if uuid is not None else None
    channels, why = nvml_channels(uuids=uuids)
    if uuids is None and channels:
        channels = channels[device.index:device.index + 1]
    return Meter(channels, "NVML total-energy counter of each replica's GPU over the measured steps", why)


def _nvml_uuid(uuid: object) -> str:
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text
