"""Models of the PyTorch workloads, built in-package so that nothing is downloaded: a small CNN, and
ResNet-18 / ResNet-50 with exactly torchvision's architecture (same layers, same parameter counts),
so that images/sec compares with published figures. Also the precision and layout options
(AMP, channels-last, ``torch.compile``) that every workload applies the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
from torch import nn

from .options import MODELS


def build_model(name: str, channels: int = 3, num_classes: int = 10, width: int = 16) -> nn.Module:
    """The model ``name`` (one of ``MODELS``); ``width`` is the small CNN's first block's channels."""
    if name == "small":
        return small_cnn(channels, width, num_classes)
    if name == "resnet18":
        return ResNet(BasicBlock, (2, 2, 2, 2), channels, num_classes)
    if name == "resnet50":
        return ResNet(Bottleneck, (3, 4, 6, 3), channels, num_classes)
    raise ValueError(f"unknown model {name!r}; valid: {', '.join(MODELS)}")


def small_cnn(channels: int, width: int, num_classes: int) -> nn.Module:
    """Three conv+BN+ReLU blocks (the last two halve the resolution), global pool, linear head."""

    def block(cin: int, cout: int, stride: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    return nn.Sequential(
        *block(channels, width, 1),
        *block(width, 2 * width, 2),
        *block(2 * width, 4 * width, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(4 * width, num_classes),
    )


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout)]


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with a residual connection (ResNet-18/34)."""

    expansion = 1

    def __init__(self, cin: int, planes: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(cin, planes, 3, stride), nn.ReLU(inplace=True), *_conv_bn(planes, planes, 3))
        self.shortcut = _shortcut(cin, planes * self.expansion, stride)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    """1×1 reduce, 3×3 (carrying the stride, as torchvision's "ResNet v1.5"), 1×1 expand (ResNet-50)."""

    expansion = 4

    def __init__(self, cin: int, planes: int, stride: int) -> None:
        super().__init__()
        out = planes * self.expansion
        self.body = nn.Sequential(
            *_conv_bn(cin, planes, 1), nn.ReLU(inplace=True),
            *_conv_bn(planes, planes, 3, stride), nn.ReLU(inplace=True),
            *_conv_bn(planes, out, 1),
        )
        self.shortcut = _shortcut(cin, out, stride)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


def _shortcut(cin: int, cout: int, stride: int) -> nn.Module:
    if stride == 1 and cin == cout:
        return nn.Identity()
    return nn.Sequential(*_conv_bn(cin, cout, 1, stride))


class ResNet(nn.Module):
    """ResNet for ImageNet-shaped input: 7×7/2 stem, max-pool, four stages, global pool, linear head."""

    def __init__(self, block: type[BasicBlock] | type[Bottleneck], layers: tuple[int, ...], channels: int, num_classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn(channels, 64, 7, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
        stages, cin = [], 64
        for i, count in enumerate(layers):
            planes = 64 * 2**i
            for j in range(count):
                stages.append(block(cin, planes, 2 if i > 0 and j == 0 else 1))
                cin = planes * block.expansion
        self.stages = nn.Sequential(*stages)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(self.stem(x)))


def prepare(model: nn.Module, device: torch.device, channels_last: bool) -> nn.Module:
    """Move ``model`` to ``device`` in the chosen memory layout (NHWC is faster on tensor cores and oneDNN)."""
    # Module.to takes memory_format (torch's documentation and code) but its stub's overloads omit it.
    return model.to(device, memory_format=torch.channels_last if channels_last else torch.contiguous_format)  # type: ignore[call-overload]


def compiled(model: nn.Module, compile: bool) -> nn.Module:
    """``torch.compile(model)`` when asked. Compilation happens on the first call, that is in the
    caller's warm-up, never in measured steps; wrap DDP first, then compile (PyTorch's advice).
    """
    return torch.compile(model) if compile else model  # type: ignore[return-value]


def autocast(device: torch.device, amp: str) -> Callable[[], contextlib.AbstractContextManager]:
    """A factory of the autocast context for ``amp`` (``none``: a no-op context)."""
    if amp == "none":
        return contextlib.nullcontext
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)
