"""The decoder-only transformer of :mod:`.llm_model`, in JAX: the same layers, sizes and initialisation,
as a pytree of arrays and pure functions over it.

Pre-norm blocks (RMSNorm, PyTorch's default epsilon), causal self-attention through
``jax.nn.dot_product_attention`` with optional grouped-query attention and one fused QKV projection,
a SwiGLU or GELU MLP, learned positions, no biases, optionally tied embeddings; weights drawn from
N(0, 0.02²), norm scales one. Its parameters are exactly those :func:`kubebench.efficiency.flops.total_params`
counts, and its matrix products those :func:`~kubebench.efficiency.flops.flops_per_token` counts
(``tests/workloads/test_jax_train.py`` checks both, the FLOPs against XLA's own cost analysis).
Weights are stored ``[in, out]`` (PyTorch's ``nn.Linear`` stores ``[out, in]``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax

from ..efficiency.flops import TransformerShape

Params = dict[str, Any]
INIT_STD = 0.02
#: PyTorch's ``nn.RMSNorm(eps=None)``: the machine epsilon of float32.
NORM_EPS = float(jnp.finfo(jnp.float32).eps)


def init_params(key: jax.Array, shape: TransformerShape) -> Params:
    """Fresh weights of ``shape`` (the same on every process that passes the same ``key``)."""
    d, f = shape.d_model, shape.ffn
    keys = iter(jax.random.split(key, 3 + 4 * shape.layers))

    def normal(*dims: int) -> jax.Array:
        return INIT_STD * jax.random.normal(next(keys), dims, jnp.float32)

    params: Params = {"tokens": normal(shape.vocab, d), "positions": normal(shape.seq_len, d),
                      "norm": jnp.ones((d,), jnp.float32), "blocks": []}
    for _ in range(shape.layers):
        params["blocks"].append({
            "attn_norm": jnp.ones((d,), jnp.float32), "qkv": normal(d, d + 2 * shape.d_kv), "out": normal(d, d),
            "mlp_norm": jnp.ones((d,), jnp.float32), "up": normal(d, (2 if shape.mlp == "swiglu" else 1) * f),
            "down": normal(f, d),
        })
    if not shape.tied_embeddings:
        params["head"] = normal(d, shape.vocab)
    return params


def count_params(params: Params) -> int:
    """Every parameter's elements."""
    return sum(int(leaf.size) for leaf in jax.tree.leaves(params))


def _rms_norm(x: jax.Array, scale: jax.Array) -> jax.Array:
    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + NORM_EPS) * scale


def _attention(block: Params, x: jax.Array, shape: TransformerShape) -> jax.Array:
    batch, seq, d = x.shape
    q, k, v = jnp.split(x @ block["qkv"], [d, d + shape.d_kv], axis=-1)
    q = q.reshape(batch, seq, shape.heads, shape.head_dim)
    k = k.reshape(batch, seq, shape.kv_heads, shape.head_dim)
    v = v.reshape(batch, seq, shape.kv_heads, shape.head_dim)
    return jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(batch, seq, d) @ block["out"]


def _mlp(block: Params, x: jax.Array, shape: TransformerShape) -> jax.Array:
    if shape.mlp == "swiglu":
        gate, up = jnp.split(x @ block["up"], 2, axis=-1)
        return (jax.nn.silu(gate) * up) @ block["down"]
    return jax.nn.gelu(x @ block["up"], approximate=True) @ block["down"]


def forward(params: Params, tokens: jax.Array, shape: TransformerShape) -> jax.Array:
    """Tokens (batch × seq) → logits (batch × seq × vocab)."""
    x = params["tokens"][tokens] + params["positions"][: tokens.shape[1]]
    for block in params["blocks"]:
        x = x + _attention(block, _rms_norm(x, block["attn_norm"]), shape)
        x = x + _mlp(block, _rms_norm(x, block["mlp_norm"]), shape)
    head = params["tokens"].T if shape.tied_embeddings else params["head"]
    return _rms_norm(x, params["norm"]) @ head


def loss_of(params: Params, batch: jax.Array, shape: TransformerShape) -> jax.Array:
    """Next-token cross-entropy of a (batch × seq+1) block of tokens, in float32."""
    logits = forward(params, batch[:, :-1], shape).astype(jnp.float32)
    return optax.softmax_cross_entropy_with_integer_labels(logits, batch[:, 1:]).mean()
