"""What a load generator asks for: prompts of a given number of tokens and how many tokens to produce,
from synthetic distributions (fixed or ranged lengths) or from a ShareGPT-style JSONL dataset.

A synthetic prompt is words from a small vocabulary, one token per word for kubebench's reference
server and about one for real tokenizers; ``token_ids`` prompts (a list of integers, which the
OpenAI completions API accepts) are exact for any server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_WORDS = ("the of and to in is was for on that with as by at from his her an are this which be or had not "
          "but it they have one all were we when there can been more if no out so said what up its about "
          "into than them only other new some could time these two may then do first any my now such like").split()


@dataclass(frozen=True)
class Lengths:
    """A token count: fixed (``low == high``) or uniform in ``[low, high]``; from ``"128"`` or ``"64:256"``."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str) -> "Lengths":
        """``"128"`` or ``"64:256"``; ValueError otherwise."""
        low, sep, high = str(text).partition(":")
        try:
            lo, hi = int(low), int(high) if sep else int(low)
        except ValueError as e:
            raise ValueError(f"{text!r} is not a token count: use N or LOW:HIGH") from e
        if lo < 1 or hi < lo:
            raise ValueError(f"{text!r}: need 1 <= LOW <= HIGH")
        return cls(lo, hi)

    def draw(self, rng: np.random.Generator, count: int) -> list[int]:
        """``count`` lengths."""
        if self.low == self.high:
            return [self.low] * count
        return [int(v) for v in rng.integers(self.low, self.high + 1, size=count)]


@dataclass(frozen=True)
class Prompt:
    """One request's input (text or token ids), its length in tokens, and the tokens it must produce."""

    text: str | list[int]
    input_tokens: int
    output_tokens: int


def synthetic(count: int, inputs: Lengths, outputs: Lengths, seed: int, token_ids: bool = False) -> list[Prompt]:
    """``count`` prompts of random words (or token ids) of the drawn lengths."""
    rng = np.random.default_rng(seed)
    ins, outs = inputs.draw(rng, count), outputs.draw(rng, count)
    prompts = []
    for n_in, n_out in zip(ins, outs):
        picks = rng.integers(0, len(_WORDS), size=n_in)
        text: str | list[int] = [int(p) + 100 for p in picks] if token_ids else " ".join(_WORDS[p] for p in picks)
        prompts.append(Prompt(text, n_in, n_out))
    return prompts


def from_dataset(path: Path, count: int, seed: int, outputs: Lengths | None = None) -> list[Prompt]:
    """``count`` prompts from a JSONL file of ShareGPT conversations (``{"conversations": [{"from":
    "human", "value": …}, {"from": "gpt", "value": …}]}``) or of ``{"prompt": …, "output_tokens": N}``;
    sampled with replacement when the file has fewer. Lengths are counted in words."""
    rows = list(_dataset_rows(path))
    if not rows:
        raise ValueError(f"{path}: no usable prompts (need ShareGPT conversations or prompt/output_tokens rows)")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(rows)) if count <= len(rows) else rng.integers(0, len(rows), size=count)
    fixed = outputs.draw(rng, count) if outputs else None
    prompts = []
    for i, index in enumerate(order[:count]):
        text, n_out = rows[int(index)]
        prompts.append(Prompt(text, max(1, len(text.split())), fixed[i] if fixed else n_out))
    return prompts


def _dataset_rows(path: Path) -> Iterator[tuple[str, int]]:
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}:{number}: not JSON: {e}") from e
            found = _row(row)
            if found:
                yield found


def _row(row: dict) -> tuple[str, int] | None:
    if "conversations" in row:
        turns = row["conversations"]
        if len(turns) >= 2 and str(turns[0].get("value", "")).strip():
            return str(turns[0]["value"]), max(1, len(str(turns[1].get("value", "")).split()))
        return None
    if "prompt" in row:
        return str(row["prompt"]), int(row.get("output_tokens") or row.get("output_len") or 128)
    return None
