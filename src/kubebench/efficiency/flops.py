"""FLOPs of a decoder-only transformer, from its shape (PaLM, Chowdhery et al. 2022, appendix B).

Per token, training (forward + backward) costs

    F = 6 · N + 12 · L · T · d

- ``N``: parameters that take part in a matrix multiplication: per layer the attention projections
  (``2·d² + 2·d·d_kv``, with ``d_kv = kv_heads · head_dim``, smaller under grouped-query attention)
  and the MLP (``3·d·f`` gated / SwiGLU, ``2·d·f`` plain), plus the output projection to the
  vocabulary (``d·V``, counted whether or not it shares its weights with the input embedding). The
  input embedding and position table are lookups, not products, and norms are element-wise: both are
  left out. A multiply-add is 2 FLOPs, forward is ``2·N`` per token, backward twice that.
- ``12·L·T·d``: attention itself, ``QKᵀ`` and ``AV``, each ``2·T·d`` per token and layer forward,
  ×3 for training. ``T`` is the sequence length; the causal mask is not discounted (as PaLM and
  ``torch.utils.flop_counter`` count it), so these are the FLOPs of the matrices as computed.

Forward only (inference): ``2·N + 4·L·T·d``. Activation checkpointing recomputes the forward pass,
which costs time but is not counted: these are *model* FLOPs, the basis of MFU (hardware FLOPs would
add the recomputation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mlp = Literal["swiglu", "gelu"]


@dataclass(frozen=True)
class TransformerShape:
    """What the FLOP count needs of a decoder-only transformer."""

    layers: int
    d_model: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq_len: int
    mlp: Mlp = "swiglu"
    tied_embeddings: bool = False

    def __post_init__(self) -> None:
        if min(self.layers, self.d_model, self.heads, self.kv_heads, self.ffn, self.vocab, self.seq_len) < 1:
            raise ValueError(f"every size of a transformer must be at least 1: {self}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model ({self.d_model}) must be a multiple of heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.mlp not in ("swiglu", "gelu"):
            raise ValueError(f"mlp must be 'swiglu' or 'gelu', got {self.mlp!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def d_kv(self) -> int:
        """Width of the key and value projections (``d_model`` without grouped-query attention)."""
        return self.kv_heads * self.head_dim


def layer_matmul_params(shape: TransformerShape) -> int:
    """Weights of one block that multiply activations: attention projections and the MLP."""
    d = shape.d_model
    attention = 2 * d * d + 2 * d * shape.d_kv
    mlp = (3 if shape.mlp == "swiglu" else 2) * d * shape.ffn
    return attention + mlp


def matmul_params(shape: TransformerShape) -> int:
    """``N`` of the formula: every block's matmul weights plus the output projection ``d·V``."""
    return shape.layers * layer_matmul_params(shape) + shape.d_model * shape.vocab


def total_params(shape: TransformerShape) -> int:
    """Every parameter of the model as :mod:`kubebench.workloads.llm_model` builds it: the matmul
    weights, the token embedding (unless tied to the output projection), the position table, and the
    norms' scales (two per block and a final one)."""
    embedding = 0 if shape.tied_embeddings else shape.vocab * shape.d_model
    positions = shape.seq_len * shape.d_model
    norms = (2 * shape.layers + 1) * shape.d_model
    return matmul_params(shape) + embedding + positions + norms


def attention_flops_per_token(shape: TransformerShape, training: bool = True) -> int:
    """``12·L·T·d`` (training) or ``4·L·T·d`` (forward only)."""
    return (12 if training else 4) * shape.layers * shape.seq_len * shape.d_model


def flops_per_token(shape: TransformerShape, training: bool = True) -> int:
    """Model FLOPs per token: ``6·N + 12·L·T·d`` for training, ``2·N + 4·L·T·d`` forward only."""
    return (6 if training else 2) * matmul_params(shape) + attention_flops_per_token(shape, training)


def achieved_flops(tokens_per_sec: float, shape: TransformerShape, training: bool = True) -> float:
    """FLOP/s of a device (or a job) that processes ``tokens_per_sec`` tokens."""
    return tokens_per_sec * flops_per_token(shape, training)


def mfu(achieved_flops_per_device: float, peak_flops_per_device: float) -> float:
    """Model FLOPs utilisation: the fraction of the device's peak that the model's FLOPs reach."""
    if not peak_flops_per_device > 0:
        raise ValueError(f"a device's peak must be positive, got {peak_flops_per_device}")
    return achieved_flops_per_device / peak_flops_per_device
