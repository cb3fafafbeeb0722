"""The FLOP formula and the peak table (pure; the count against PyTorch's is in tests/workloads)."""

from __future__ import annotations

import pytest

from kubebench.efficiency.flops import (
    TransformerShape,
    attention_flops_per_token,
    flops_per_token,
    matmul_params,
    mfu,
    total_params,
)
from kubebench.efficiency.peaks import (
    PRECISIONS,
    TABLE,
    device_peak,
    find_device,
    why_no_peak,
)
from kubebench.workloads.llm_options import PRESETS


def test_formula_is_six_n_plus_the_attention_term() -> None:
    s = TransformerShape(layers=2, d_model=64, heads=4, kv_heads=4, ffn=176, vocab=512, seq_len=64)
    n = 2 * (4 * 64 * 64 + 3 * 64 * 176) + 64 * 512
    assert matmul_params(s) == n
    assert attention_flops_per_token(s) == 12 * 2 * 64 * 64
    assert flops_per_token(s) == 6 * n + 12 * 2 * 64 * 64
    assert flops_per_token(s, training=False) == 2 * n + 4 * 2 * 64 * 64


def test_grouped_query_attention_shrinks_the_key_and_value_projections() -> None:
    full = TransformerShape(layers=1, d_model=64, heads=8, kv_heads=8, ffn=128, vocab=10, seq_len=4)
    gqa = TransformerShape(layers=1, d_model=64, heads=8, kv_heads=2, ffn=128, vocab=10, seq_len=4)
    assert matmul_params(full) - matmul_params(gqa) == 2 * 64 * (64 - 16)


def test_published_sizes_of_the_llama_like_presets() -> None:
    # TinyLlama 1.1B, Llama 2 7B (6.74B), Llama 3 8B (8.03B): the presets are their shapes (learned
    # positions add seq_len × d_model, which rotary embeddings do not have).
    assert total_params(PRESETS["1b"]) - 2048 * 2048 == pytest.approx(1.100e9, rel=0.01)
    assert total_params(PRESETS["llama2-7b"]) - 4096 * 4096 == pytest.approx(6.738e9, rel=0.01)
    assert total_params(PRESETS["llama3-8b"]) - 8192 * 4096 == pytest.approx(8.030e9, rel=0.01)
    assert total_params(PRESETS["gpt2-124m"]) == pytest.approx(124.4e6, rel=0.01)


@pytest.mark.parametrize("bad", [dict(d_model=65), dict(kv_heads=3), dict(layers=0), dict(mlp="relu")])
def test_impossible_shapes_are_refused(bad: dict) -> None:
    values = dict(layers=2, d_model=64, heads=4, kv_heads=4, ffn=8, vocab=8, seq_len=8) | bad
    with pytest.raises(ValueError):
        TransformerShape(**values)


def test_mfu_is_the_fraction_of_the_peak() -> None:
    assert mfu(400e12, 989.4e12) == pytest.approx(0.4043, abs=1e-4)
    with pytest.raises(ValueError):
        mfu(1.0, 0.0)


@pytest.mark.parametrize("name, label", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200 SXM"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA B200", "B200"), ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A100 80GB PCIe", "A100"),
    ("NVIDIA A100-PCIE-40GB", "A100"), ("NVIDIA L40S", "L40S"), ("NVIDIA L40", "L40"), ("NVIDIA L4", "L4"),
    ("NVIDIA A10", "A10"), ("Tesla V100-SXM2-16GB", "V100 SXM2"), ("Tesla T4", "T4"),
    ("AMD Instinct MI300X", "MI300X"),
])
def test_devices_are_found_by_the_names_nvml_gives(name: str, label: str) -> None:
    row = find_device(name)
    assert row is not None and row.label == label


def test_dense_peaks_are_half_the_sparse_datasheet_figures() -> None:
    h100 = device_peak("NVIDIA H100 80GB HBM3", "bf16")
    assert h100 is not None and h100.flops == pytest.approx(1978.9e12 / 2, rel=1e-3) and "datasheet" in h100.source
    assert device_peak("NVIDIA H200", "fp8").flops == pytest.approx(3957.8e12 / 2, rel=1e-3)
    assert device_peak("NVIDIA A100-SXM4-80GB", "bf16").flops == 312e12
    assert device_peak("NVIDIA B200", "bf16").flops == 2250e12


def test_unknown_device_or_precision_has_no_peak_and_says_why() -> None:
    assert device_peak("NVIDIA A10G", "bf16") is None
    assert "no peak known for device 'NVIDIA A10G'" in why_no_peak("NVIDIA A10G", "bf16")
    assert device_peak("NVIDIA A100-SXM4-80GB", "fp8") is None  # Ampere has no FP8
    assert "A100 has no fp8 peak" in why_no_peak("NVIDIA A100-SXM4-80GB", "fp8")
    with pytest.raises(ValueError):
        device_peak("NVIDIA H100", "int4")


def test_every_row_is_consistent() -> None:
    for row in TABLE:
        assert set(row.tflops) <= set(PRECISIONS) and row.source
        if "bf16" in row.tflops and "fp8" in row.tflops:
            assert row.tflops["fp8"] == pytest.approx(2 * row.tflops["bf16"], rel=0.02)
