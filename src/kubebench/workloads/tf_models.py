"""Keras versions of the models of ``kubebench.workloads.models`` (small CNN, ResNet-18, ResNet-50),
layer for layer, with the same parameter counts; NHWC, TensorFlow's native layout.
"""

from __future__ import annotations

import keras
from keras import layers

from .options import MODELS


def _bn() -> layers.Layer:
    # PyTorch's defaults (momentum 0.1 of the new value, eps 1e-5), so both frameworks do the same work.
    return layers.BatchNormalization(momentum=0.9, epsilon=1e-5)


def _conv_bn(x, filters: int, kernel: int, stride: int = 1, relu: bool = True):
    x = layers.Conv2D(filters, kernel, stride, padding="same", use_bias=False, kernel_initializer="he_normal")(x)
    x = _bn()(x)
    return layers.ReLU()(x) if relu else x


def _shortcut(x, filters: int, stride: int):
    if stride == 1 and x.shape[-1] == filters:
        return x
    return _conv_bn(x, filters, 1, stride, relu=False)


def _basic(x, planes: int, stride: int):
    y = _conv_bn(x, planes, 3, stride)
    y = _conv_bn(y, planes, 3, relu=False)
    return layers.ReLU()(layers.Add()([y, _shortcut(x, planes, stride)]))


def _bottleneck(x, planes: int, stride: int):
    y = _conv_bn(x, planes, 1)
    y = _conv_bn(y, planes, 3, stride)  # the stride on the 3×3, as torchvision's ResNet v1.5
    y = _conv_bn(y, planes * 4, 1, relu=False)
    return layers.ReLU()(layers.Add()([y, _shortcut(x, planes * 4, stride)]))


def build_model(name: str, image_size: int, channels: int = 3, num_classes: int = 10, width: int = 16) -> keras.Model:
    """The Keras model ``name``; its logits are float32 even under a mixed-precision policy."""
    inputs = keras.Input((image_size, image_size, channels))
    if name == "small":
        x = _conv_bn(inputs, width, 3)
        x = _conv_bn(x, 2 * width, 3, 2)
        x = _conv_bn(x, 4 * width, 3, 2)
    elif name in ("resnet18", "resnet50"):
        block, counts = (_basic, (2, 2, 2, 2)) if name == "resnet18" else (_bottleneck, (3, 4, 6, 3))
        x = _conv_bn(inputs, 64, 7, 2)
        x = layers.MaxPooling2D(3, 2, padding="same")(x)
        for i, count in enumerate(counts):
            for j in range(count):
                x = block(x, 64 * 2**i, 2 if i > 0 and j == 0 else 1)
    else:
        raise ValueError(f"unknown model {name!r}; valid: {', '.join(MODELS)}")
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(num_classes, dtype="float32")(x)
    return keras.Model(inputs, outputs, name=name)
