"""Peak FLOP/s of accelerators, per precision: the denominator of MFU.

Dense figures (without 2:4 structured sparsity, which the datasheets quote at twice these), in
TFLOP/s per device, from the vendors' datasheets named in each row's ``source``; ``fp32`` is the
CUDA-core (non-tensor) rate that PyTorch uses for float32 matmuls unless TF32 is allowed. A device is
found from the name NVML (or ``torch.cuda.get_device_name``) gives, by the first pattern that
matches. CPUs have no row: a CPU run's peak is measured (see ``kubebench.workloads.llm_train``), and
an unknown device gets no MFU, with the reason in the run's info, rather than a guessed one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class DevicePeaks:
    """One device model: a name pattern, its dense peaks (TFLOP/s by precision) and their source."""

    label: str
    pattern: str
    tflops: dict[str, float]
    source: str


@dataclass(frozen=True)
class Peak:
    """The peak a run is measured against."""

    flops: float  # FLOP/s, not TFLOP/s
    device: str
    precision: str
    source: str


_HOPPER_SXM = {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9}
_HOPPER_NVL = {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5, "fp8": 1670.5}
_AMPERE_100 = {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}

# Order matters: the first match wins (H200 NVL before H200, GH200 before H200, A100 before A10).
TABLE: tuple[DevicePeaks, ...] = (
    DevicePeaks("B200 (GB200)", r"\bGB200\b", {"fp32": 90.0, "tf32": 1250.0, "bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0},
                "NVIDIA GB200 NVL72 datasheet (per GPU, 1200 W), sparse figures halved"),
    DevicePeaks("B200", r"\bB200\b", {"fp32": 80.0, "tf32": 1100.0, "bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0},
                "NVIDIA HGX B200 datasheet (per GPU, 1000 W), sparse figures halved"),
    DevicePeaks("B100", r"\bB100\b", {"fp32": 60.0, "tf32": 875.0, "bf16": 1750.0, "fp16": 1750.0, "fp8": 3500.0},
                "NVIDIA HGX B100 datasheet (per GPU, 700 W), sparse figures halved"),
    DevicePeaks("GH200", r"\bGH200\b", _HOPPER_SXM, "NVIDIA GH200 Grace Hopper datasheet, sparse figures halved"),
    DevicePeaks("H200 NVL", r"\bH200\b.*\bNVL\b", _HOPPER_NVL, "NVIDIA H200 NVL datasheet, sparse figures halved"),
    DevicePeaks("H200 SXM", r"\bH200\b", _HOPPER_SXM, "NVIDIA H200 datasheet (SXM), sparse figures halved"),
    DevicePeaks("H100 NVL", r"\bH100\b.*\bNVL\b", _HOPPER_NVL, "NVIDIA H100 datasheet (NVL), sparse figures halved"),
    DevicePeaks("H100 PCIe", r"\bH100\b.*\bPCIe\b", {"fp32": 51.2, "tf32": 378.0, "bf16": 756.5, "fp16": 756.5, "fp8": 1513.0},
                "NVIDIA H100 datasheet (PCIe), sparse figures halved"),
    DevicePeaks("H100 SXM", r"\bH[18]00\b", _HOPPER_SXM, "NVIDIA H100 datasheet (SXM; H800 the same), sparse figures halved"),
    DevicePeaks("A100", r"\bA[18]00\b", _AMPERE_100, "NVIDIA A100 datasheet (SXM and PCIe, 40 and 80 GB), sparse figures halved"),
    DevicePeaks("L40S", r"\bL40S\b", {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0},
                "NVIDIA L40S datasheet, sparse figures halved"),
    DevicePeaks("L40", r"\bL40\b", {"fp32": 90.5, "tf32": 90.5, "bf16": 181.05, "fp16": 181.05, "fp8": 362.0},
                "NVIDIA L40 datasheet, sparse figures halved"),
    DevicePeaks("L4", r"\bL4\b", {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0, "fp8": 242.5},
                "NVIDIA L4 datasheet, sparse figures halved"),
    DevicePeaks("A10", r"\bA10\b", {"fp32": 31.2, "tf32": 62.5, "bf16": 125.0, "fp16": 125.0},
                "NVIDIA A10 datasheet, sparse figures halved"),
    DevicePeaks("V100 SXM2", r"\bV100\b.*\bSXM", {"fp32": 15.7, "fp16": 125.0}, "NVIDIA V100 datasheet (SXM2)"),
    DevicePeaks("V100 PCIe", r"\bV100\b", {"fp32": 14.0, "fp16": 112.0}, "NVIDIA V100 datasheet (PCIe)"),
    DevicePeaks("T4", r"\bT4\b", {"fp32": 8.1, "fp16": 65.0}, "NVIDIA T4 datasheet"),
    DevicePeaks("MI300X", r"\bMI3(00|25)X\b", {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9},
                "AMD Instinct MI300X data sheet (MI325X the same), dense matrix figures"),
    DevicePeaks("MI250X", r"\bMI250X?\b", {"fp32": 95.7, "bf16": 383.0, "fp16": 383.0},
                "AMD Instinct MI250X data sheet, dense matrix figures"),
)


def find_device(name: str) -> DevicePeaks | None:
    """The table's row for a device name as NVML or PyTorch gives it (``NVIDIA H100 80GB HBM3``)."""
    return next((row for row in TABLE if re.search(row.pattern, name, re.IGNORECASE)), None)


def device_peak(name: str, precision: str) -> Peak | None:
    """The dense peak of ``name`` at ``precision``; None for an unknown device or an unsupported precision."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; valid: {', '.join(PRECISIONS)}")
    row = find_device(name)
    if row is None or precision not in row.tflops:
        return None
    return Peak(row.tflops[precision] * 1e12, row.label, precision, row.source)


def why_no_peak(name: str, precision: str) -> str:
    """The reason :func:`device_peak` gave nothing, for the run's info."""
    row = find_device(name)
    if row is None:
        return f"no peak known for device {name!r} (kubebench.efficiency.peaks.TABLE): MFU not reported"
    return f"{row.label} has no {precision} peak in the table ({', '.join(row.tflops)}): MFU not reported"
