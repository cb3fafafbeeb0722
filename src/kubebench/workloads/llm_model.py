"""A decoder-only transformer in plain PyTorch, built from a :class:`TransformerShape`.

Pre-norm blocks (RMSNorm), causal self-attention through ``scaled_dot_product_attention`` (flash or
memory-efficient kernels where the device has them) with optional grouped-query attention, a SwiGLU or
GELU MLP, learned positions, no biases. Its matrix products are exactly those that
:mod:`kubebench.efficiency.flops` counts (tested against ``torch.utils.flop_counter``).

The one transformer of kubebench: ``llm_train`` trains it through :meth:`Transformer.forward`, and the
reference server (:mod:`.llm_engine`) serves it through :meth:`Transformer.forward_cached`, which
runs new tokens against a KV cache (one row per sequence, ``kv_heads`` heads per layer) and gives the
same logits as the full forward over the whole sequence.
"""

from __future__ import annotations

from typing import cast

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
        q, k, v = self._project(x)
        return self.out(_attend(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, seq, d))

    def forward_cached(self, x: torch.Tensor, cache: torch.Tensor, slots: torch.Tensor, positions: torch.Tensor,
                       mask: torch.Tensor) -> torch.Tensor:
        """``x``: [B, T, D] new tokens at ``positions`` [B, T] of the sequences in cache rows ``slots``
        [B]; ``cache``: [rows, 2, kv_heads, S, head_dim] of this layer. Writes the new keys and values
        into the cache, then attends to the first ``mask.shape[-1]`` cached positions under ``mask``
        ([B or 1, 1, T, length], True where a query may attend)."""
        batch, seq, d = x.shape
        q, k, v = self._project(x)
        rows = slots[:, None].expand(batch, seq)
        cache[rows, 0, :, positions] = k.transpose(1, 2)
        cache[rows, 1, :, positions] = v.transpose(1, 2)
        length = mask.shape[-1]
        keys, values = cache[slots, 0, :, :length], cache[slots, 1, :, :length]
        return self.out(_attend(q, keys, values, attn_mask=mask).transpose(1, 2).reshape(batch, seq, d))

    def _project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries [B, heads, T, hd], keys and values [B, kv_heads, T, hd]."""
        batch, seq, d = x.shape
        q, k, v = self.qkv(x).split([d, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        q = q.view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        return q, k, v


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False,
            attn_mask: torch.Tensor | None = None) -> torch.Tensor:
    """``scaled_dot_product_attention`` of ``q`` over ``k`` and ``v``, which may have fewer (kv) heads."""
    if k.shape[1] == q.shape[1]:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    if _SDPA_GQA:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, enable_gqa=True)
    repeat = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(repeat, 1), v.repeat_interleave(repeat, 1),
                                          attn_mask=attn_mask, is_causal=is_causal)


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

    def forward_cached(self, x: torch.Tensor, cache: torch.Tensor, slots: torch.Tensor, positions: torch.Tensor,
                       mask: torch.Tensor) -> torch.Tensor:
        """The block over new tokens, attending to this layer's cache (:meth:`Attention.forward_cached`)."""
        x = x + self.attn.forward_cached(self.attn_norm(x), cache, slots, positions, mask)
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

    def kv_cache(self, rows: int, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None) -> list[torch.Tensor]:
        """An empty KV cache of ``rows`` sequences of up to ``seq_len`` tokens: one
        [rows, 2, kv_heads, seq_len, head_dim] tensor per layer, for :meth:`forward_cached`."""
        s = self.shape
        return [torch.zeros(rows, 2, s.kv_heads, s.seq_len, s.head_dim, dtype=dtype, device=device)
                for _ in range(s.layers)]

    @torch.inference_mode()
    def forward_cached(self, tokens: torch.Tensor, positions: torch.Tensor, caches: list[torch.Tensor],
                       slots: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Serving: new ``tokens`` [B, T] at ``positions`` [B, T] of the sequences in cache rows ``slots``
        [B]; their keys and values go into ``caches`` (:meth:`kv_cache`), and they attend to the cached
        ones under ``mask`` [B or 1, 1, T, length] (True where a query may attend; ``length`` covers
        every position attended). Returns the logits of each row's last new token [B, vocab]."""
        x = self.tokens(tokens) + self.positions(positions)
        for block, cache in zip(self.blocks, caches, strict=True):
            x = cast(Block, block).forward_cached(x, cache, slots, positions, mask)
        return self.head(self.norm(x[:, -1]))


def _init(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=INIT_STD)


def loss_of(model: nn.Module, batch: torch.Tensor) -> torch.Tensor:
    """Next-token cross-entropy of a (batch × seq+1) block of tokens, computed in float32."""
    inputs, targets = batch[:, :-1], batch[:, 1:]
    logits = model(inputs)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
