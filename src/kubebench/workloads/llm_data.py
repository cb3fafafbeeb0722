"""Tokens for the LLM workload: synthetic, or read from a token file.

``synthetic``: one random block of tokens per replica (seeded by seed + rank), reused every step, as the
image workloads' synthetic mode does: it measures the model, not the input pipeline, and a model that
sees the same batch learns it, so the loss falls and two runs' loss trajectories can be compared.

A token file, absolute or relative to ``$KUBEBENCH_DATA_ROOT``: ``.npy`` (any integer dtype) or a raw
``.bin`` of uint16 tokens (nanoGPT's format), memory-mapped. Step ``s`` of rank ``r`` reads
``batch_size`` consecutive windows of ``seq_len + 1`` tokens at sequence index
``(s · world + r) · batch_size``, wrapping around the file, so replicas read disjoint windows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ..efficiency.flops import TransformerShape
from .data import SYNTHETIC, resolve


def open_tokens(path: Path) -> np.ndarray:
    """The file's tokens as a 1-D memory-mapped array (ValueError for a file that is not one)."""
    if not path.is_file():
        raise OSError(f"token file {path} does not exist")
    if path.suffix == ".npy":
        tokens = np.load(path, mmap_mode="r")
    elif path.suffix == ".bin":
        tokens = np.memmap(path, dtype=np.uint16, mode="r")
    else:
        raise ValueError(f"token file {path}: expected .npy (integers) or .bin (uint16 tokens, nanoGPT's format)")
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"token file {path}: expected a 1-D array of integers, got {tokens.dtype} {tokens.shape}")
    return tokens


def token_batches(data: str, shape: TransformerShape, batch_size: int, seed: int, rank: int, world: int,
                  device: torch.device) -> Callable[[int], torch.Tensor]:
    """``batch(step)`` → a (batch_size × seq_len+1) int64 tensor on ``device`` for this replica."""
    window = shape.seq_len + 1
    if data == SYNTHETIC:
        gen = torch.Generator().manual_seed(seed + rank)
        fixed = torch.randint(0, shape.vocab, (batch_size, window), generator=gen).to(device)
        return lambda _step: fixed
    path = resolve(data)
    tokens = open_tokens(path)
    starts = len(tokens) - window
    if starts < 1:
        raise ValueError(f"token file {path} holds {len(tokens)} tokens, fewer than one sequence of {window}")

    def batch(step: int) -> torch.Tensor:
        first = (step * world + rank) * batch_size
        offsets = [((first + i) * shape.seq_len) % starts for i in range(batch_size)]
        block = np.stack([np.asarray(tokens[o:o + window], dtype=np.int64) for o in offsets])
        if block.max() >= shape.vocab or block.min() < 0:
            raise ValueError(f"token file {path} holds token {int(block.max())}, outside the vocabulary "
                             f"of {shape.vocab} (set --vocab)")
        return torch.from_numpy(block).to(device, non_blocking=True)

    batch(0)  # a bad file fails here, before the model trains
    return batch
