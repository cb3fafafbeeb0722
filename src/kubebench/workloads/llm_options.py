"""The LLM training workload's command line and model presets (no framework imports, so that a bad
argument fails at once, before PyTorch loads).

Presets are shapes of decoder-only transformers, from ``tiny`` (a CPU step in milliseconds, for tests)
to Llama-like ones for GPUs; every size can be overridden (``--preset 1b --layers 4``).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..efficiency.flops import TransformerShape
from .options import non_negative, positive, positive_float

PRESETS: dict[str, TransformerShape] = {
    # Seconds on a CPU: what the tests and CI run.
    "tiny": TransformerShape(layers=2, d_model=64, heads=4, kv_heads=4, ffn=176, vocab=512, seq_len=64,
                             tied_embeddings=True),
    # ~25M parameters: a CPU can train it, slowly.
    "small": TransformerShape(layers=6, d_model=384, heads=6, kv_heads=6, ffn=1024, vocab=8192, seq_len=256,
                              tied_embeddings=True),
    # GPT-2 small (124M): GELU MLP, tied embeddings, vocabulary padded to a multiple of 64.
    "gpt2-124m": TransformerShape(layers=12, d_model=768, heads=12, kv_heads=12, ffn=3072, vocab=50304,
                                  seq_len=1024, mlp="gelu", tied_embeddings=True),
    # TinyLlama-1.1B's shape: grouped-query attention (4 KV heads), SwiGLU, untied embeddings.
    "1b": TransformerShape(layers=22, d_model=2048, heads=32, kv_heads=4, ffn=5632, vocab=32000, seq_len=2048),
    # Llama 2 7B and Llama 3 8B shapes (FSDP over several GPUs).
    "llama2-7b": TransformerShape(layers=32, d_model=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000,
                                  seq_len=4096),
    "llama3-8b": TransformerShape(layers=32, d_model=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256,
                                  seq_len=8192),
}
PARALLEL = ("ddp", "fsdp")
AMP = ("auto", "none", "bf16", "fp16")
DIST = ("auto", "none", "torch")
_SIZES = ("layers", "d_model", "heads", "kv_heads", "ffn", "vocab", "seq_len")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; argparse exits with status 2 and one line on error."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.llm_train",
                                description="Decoder-only transformer training throughput (tokens/s, MFU).")
    add_model_arguments(p)
    p.add_argument("--batch-size", type=positive, default=8, help="sequences per step per replica")
    p.add_argument("--steps", type=positive, default=20, help="measured steps")
    p.add_argument("--warmup-steps", type=non_negative, default=5, help="steps run before measuring")
    p.add_argument("--data", default="synthetic",
                   help="'synthetic', or a token file (.npy of integers, or nanoGPT's .bin of uint16), "
                        "absolute or under $KUBEBENCH_DATA_ROOT")
    p.add_argument("--lr", type=positive_float, default=3e-4, help="AdamW learning rate")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--amp", choices=AMP, default="auto", help="autocast precision (auto: bf16 on GPUs that have it, "
                   "else fp16; none on CPUs)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (compiles during warm-up)")
    p.add_argument("--checkpointing", action="store_true", help="activation checkpointing of every block")
    p.add_argument("--parallel", choices=PARALLEL, default="ddp",
                   help="data parallel (DDP) or fully sharded (FSDP2, fully_shard) across replicas")
    p.add_argument("--dist", choices=DIST, default="auto", help="how replicas communicate (auto: from the launcher)")
    p.add_argument("--threads", type=non_negative, default=0, help="CPU threads (0: the CPUs / local replicas)")
    args = p.parse_args(argv)
    try:
        args.shape = shape_of(args)
    except ValueError as e:
        p.error(str(e))
    return args


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """``--preset`` and its overrides (``--layers``, ``--d-model`` … ``--mlp``): the model's shape."""
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    for size in _SIZES:
        p.add_argument("--" + size.replace("_", "-"), type=positive, default=None, help=f"override the preset's {size}")
    p.add_argument("--mlp", choices=("swiglu", "gelu"), default=None, help="override the preset's MLP")


def shape_of(args: argparse.Namespace) -> TransformerShape:
    """The preset with the command line's overrides (ValueError for an impossible shape)."""
    overrides = {size: getattr(args, size) for size in _SIZES if getattr(args, size) is not None}
    if args.mlp is not None:
        overrides["mlp"] = args.mlp
    base = PRESETS[args.preset]
    if "heads" in overrides and "kv_heads" not in overrides and base.kv_heads == base.heads:
        overrides["kv_heads"] = overrides["heads"]  # a preset without GQA keeps none
    return replace(base, **overrides)
