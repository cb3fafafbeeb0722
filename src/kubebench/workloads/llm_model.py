"""A decoder-only transformer in plain PyTorch, built from a :class:`TransformerShape`.

Pre-norm blocks (RMSNorm), causal self-attention through ``scaled_dot_product_attention`` (flash or
memory-efficient kernels where the device has them) with optional grouped-query attention, a SwiGLU or
GELU MLP, learned positions, no biases. Its matrix products are exactly those that
:mod:`kubebench.efficiency.flops` counts (tested against ``torch.utils.flop_counter``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from ..efficiency.flops import TransformerShape

INIT_STD = 0.02
# enable_gqa appeared in PyTorch 2.5; before, K and V are repeated to the query heads.
_SDPA_GQA = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


class Attention(nn.Module):
    """Causal multi-head (or grouped-query) self-attention with one fused QKV projection."""

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = shape.heads, shape.kv_heads, shape.head_dim
        self.qkv = nn.Linear(shape.d_model, shape.d_model + 2 * shape.d_kv, bias=False)
        self.out = nn.Linear(shape.d_model, shape.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, d = x.shape
        q, k, v = self.qkv(x).split([d, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        q = q.view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.kv_heads == self.heads:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif _SDPA_GQA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            repeat = self.heads // self.kv_heads
            y = F.scaled_dot_product_attention(q, k.repeat_interleave(repeat, 1), v.repeat_interleave(repeat, 1),
                                               is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, seq, d))


class Mlp(nn.Module):
    """SwiGLU (``w2(silu(w1 x) * w3 x)``, w1 and w3 fused) or a plain GELU MLP."""

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.gated = shape.mlp == "swiglu"
        self.up = nn.Linear(shape.d_model, (2 if self.gated else 1) * shape.ffn, bias=False)
        self.down = nn.Linear(shape.ffn, shape.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:
            gate, up = self.up(x).chunk(2, dim=-1)
            return self.down(F.silu(gate) * up)
        return self.down(F.gelu(self.up(x), approximate="tanh"))


class Block(nn.Module):
    """One pre-norm transformer block."""

    def __init__(self, shape: TransformerShape) -> None:
        super().__init__()
        self.attn_norm = nn.RMSNorm(shape.d_model)
        self.attn = Attention(shape)
        self.mlp_norm = nn.RMSNorm(shape.d_model)
        self.mlp = Mlp(shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class Transformer(nn.Module):
    """Tokens (batch × seq) → logits (batch × seq × vocab)."""

    def __init__(self, shape: TransformerShape, checkpointing: bool = False) -> None:
        super().__init__()
        self.shape, self.checkpointing = shape, checkpointing
        self.tokens = nn.Embedding(shape.vocab, shape.d_model)
        self.positions = nn.Embedding(shape.seq_len, shape.d_model)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.norm = nn.RMSNorm(shape.d_model)
        self.head = nn.Linear(shape.d_model, shape.vocab, bias=False)
        if shape.tied_embeddings:
            self.head.weight = self.tokens.weight
        self.apply(_init)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tokens(tokens) + self.positions(positions)
        for block in self.blocks:
            # Recomputing each block's activations in backward trades ~1/3 more compute for memory.
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointing and self.training else block(x)
        return self.head(self.norm(x))


def _init(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)


def loss_of(model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of a (batch × seq+1) block of tokens, computed in float32."""
    inputs, targets = batch[:, :-1], batch[:, 1:]
    logits = model(inputs)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
