"""The in-package models: torchvision's architectures (checked by exact parameter counts) and the
precision/layout options every PyTorch workload applies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from support.timing import scaled

import kubebench
from kubebench.workloads.models import autocast, build_model, compiled, prepare

# torchvision.models.resnet18() / resnet50() with 1000 classes: the published parameter counts.
TORCHVISION_PARAMS = {"resnet18": 11_689_512, "resnet50": 25_557_032}


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_resnets_have_torchvisions_parameter_count(name: str) -> None:
    assert n_params(build_model(name, 3, 1000)) == TORCHVISION_PARAMS[name]


@pytest.mark.parametrize("name", ["small", "resnet18"])
def test_models_classify_small_and_large_images(name: str) -> None:
    model = build_model(name, channels=3, num_classes=7).eval()
    with torch.no_grad():
        for size in (32, 64):
            assert model(torch.randn(2, 3, size, size)).shape == (2, 7)


def test_small_cnn_width_sets_its_size() -> None:
    assert n_params(build_model("small", width=32)) > 3 * n_params(build_model("small", width=16))


def test_unknown_model_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="valid: small, resnet18, resnet50"):
        build_model("vgg16")


def test_channels_last_changes_layout_not_results() -> None:
    torch.manual_seed(0)
    model = build_model("resnet18", 3, 10).eval()
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        expected = model(x)
        nhwc = prepare(model, torch.device("cpu"), channels_last=True)
        got = nhwc(x.contiguous(memory_format=torch.channels_last))
    assert nhwc.stem[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert torch.allclose(got, expected, atol=1e-4)


def test_bf16_autocast_runs_convolutions_in_bf16() -> None:
    model = build_model("small", 3, 10)
    with autocast(torch.device("cpu"), "bf16")():
        assert model[0](torch.randn(1, 3, 8, 8)).dtype == torch.bfloat16
    with autocast(torch.device("cpu"), "none")():
        assert model[0](torch.randn(1, 3, 8, 8)).dtype == torch.float32


def test_compile_is_off_unless_asked() -> None:
    model = build_model("small")
    assert compiled(model, False) is model


# Compiled for real (TorchInductor generates C++ and builds it with the system compiler), in a
# process of its own so that the compiler's caches and worker threads stay out of the test run.
COMPILE_CHECK = """
import json, torch
from torch._dynamo.utils import counters
from kubebench.workloads.models import build_model, compiled
torch.manual_seed(0)
model = build_model("small", 3, 10, 4)
fast = compiled(model, True)
x = torch.randn(2, 3, 16, 16)
with torch.no_grad():
    got, expected = fast(x), model(x)
print(json.dumps({"type": type(fast).__name__, "graphs": counters["stats"]["unique_graphs"],
                  "max_diff": float((got - expected).abs().max())}))
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_compile_really_compiles_and_gives_the_eager_results() -> None:
    src = str(Path(kubebench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-c", COMPILE_CHECK], env=env, capture_output=True, text=True,
                          timeout=scaled(600))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["type"] == "OptimizedModule" and result["graphs"] >= 1
    assert result["max_diff"] < 1e-4
