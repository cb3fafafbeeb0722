"""The continuous-batching engine of the reference server (``llm_server``): a KV cache per slot, new
requests prefilled as they come, and one decode step for every running request at a time.

The model is kubebench's one transformer, :class:`.llm_model.Transformer` (the one ``llm_train``
trains), sized by a small :class:`ModelConfig` and run through its KV-cache forward. The weights are
random (seeded): the tokens mean nothing, but the arithmetic, the memory traffic and the batching
behaviour are those of a real model of this size, which is what a serving benchmark measures. The
tokenizer maps each whitespace-separated word to one token (a stable hash).
"""

from __future__ import annotations

import queue
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ..efficiency.flops import TransformerShape
from .llm_model import Transformer

EOS = 0


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the served model; the defaults decode at hundreds of tokens/s on one CPU core."""

    vocab: int = 4096
    dim: int = 128
    layers: int = 2
    heads: int = 4
    max_seq: int = 1024

    def shape(self) -> TransformerShape:
        """The transformer: multi-head attention, a GELU MLP of 4 × dim, tied embeddings."""
        return TransformerShape(layers=self.layers, d_model=self.dim, heads=self.heads, kv_heads=self.heads,
                                ffn=4 * self.dim, vocab=self.vocab, seq_len=self.max_seq, mlp="gelu",
                                tied_embeddings=True)


def build_model(cfg: ModelConfig, seed: int = 0) -> Transformer:
    """The model of ``cfg`` with random weights drawn from ``seed`` (the global RNG is left as it was),
    in eval mode."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Transformer(cfg.shape()).eval()


def encode(text: str | list[int], vocab: int) -> list[int]:
    """Token ids of a prompt: one per word (a stable hash), or the given ids (kept inside the vocabulary)."""
    if isinstance(text, list):
        return [1 + int(t) % (vocab - 1) for t in text] or [1]
    return [1 + zlib.crc32(w.encode()) % (vocab - 1) for w in text.split()] or [1]


def decode(token: int) -> str:
    """The text of one token."""
    return f" w{token}"


@dataclass
class Sequence:
    """One request in the engine: its prompt, what it must produce, and where its tokens go."""

    prompt: list[int]
    max_tokens: int
    emit: Callable[[int | None], object]  # what it returns is ignored
    ignore_eos: bool = True
    #: Set (from any thread) when its client has left: the engine drops it before its next step.
    cancelled: bool = False
    slot: int = -1
    length: int = 0
    produced: int = 0
    last: int = 0
    arrived: float = field(default_factory=time.perf_counter)


class Engine:
    """Continuous batching on a thread: admit waiting requests into free slots (prefill), then one
    decode step for all running ones; ``emit(token)`` per token and ``emit(None)`` at the end."""

    def __init__(self, model: Transformer, max_batch: int) -> None:
        self.model, self.max_batch = model, max_batch
        self.caches = model.kv_cache(max_batch)
        self.waiting: queue.Queue[Sequence] = queue.Queue()
        self.running: list[Sequence] = []
        self.free = list(range(max_batch))
        self.stats = {"requests_total": 0, "requests_cancelled_total": 0, "tokens_total": 0, "steps_total": 0,
                      "step_seconds_total": 0.0}
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True, name="llm-engine")

    def start(self) -> None:
        """Start the engine's thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop the engine's thread."""
        self._stop = True
        self.waiting.put(None)  # type: ignore[arg-type]
        self._thread.join(10)

    def submit(self, seq: Sequence) -> None:
        """Queue a request (thread-safe)."""
        self.stats["requests_total"] += 1
        self.waiting.put(seq)

    def cancel(self, seq: Sequence) -> None:
        """Stop decoding ``seq`` (thread-safe): its client has left. Waiting, it is never prefilled;
        running, it leaves its slot before the next decode step; finished, nothing happens."""
        seq.cancelled = True

    def _drop_cancelled(self) -> None:
        for seq in [s for s in self.running if s.cancelled]:
            self.running.remove(seq)
            self.free.append(seq.slot)
            self.stats["requests_cancelled_total"] += 1

    def _loop(self) -> None:
        while not self._stop:
            self._drop_cancelled()
            self._admit(block=not self.running)
            self._drop_cancelled()
            if self.running:
                started = time.perf_counter()
                self._decode()
                self.stats["steps_total"] += 1
                self.stats["step_seconds_total"] += time.perf_counter() - started

    def _admit(self, block: bool) -> None:
        while self.free:
            try:
                seq = self.waiting.get(block=block, timeout=None)
            except queue.Empty:
                return
            if seq is None:
                return
            block = False
            if seq.cancelled:
                self.stats["requests_cancelled_total"] += 1
                continue
            seq.slot = self.free.pop()
            self._prefill(seq)

    def _prefill(self, seq: Sequence) -> None:
        n = len(seq.prompt)
        tokens = torch.tensor([seq.prompt])
        positions = torch.arange(n)[None]
        mask = torch.ones(n, n, dtype=torch.bool).tril()[None, None]
        logits = self.model.forward_cached(tokens, positions, self.caches, torch.tensor([seq.slot]), mask)
        seq.length = n
        self._advance([seq], logits)

    def _decode(self) -> None:
        batch = list(self.running)
        tokens = torch.tensor([[s.last] for s in batch])
        positions = torch.tensor([[s.length] for s in batch])
        longest = max(s.length for s in batch) + 1
        mask = (torch.arange(longest)[None] <= positions)[:, None, None, :]
        logits = self.model.forward_cached(tokens, positions, self.caches, torch.tensor([s.slot for s in batch]),
                                           mask)
        for s in batch:
            s.length += 1
        self._advance(batch, logits)

    def _advance(self, batch: list[Sequence], logits: torch.Tensor) -> None:
        """Greedy next token of each sequence (never end-of-sequence when it is ignored); finish the
        sequences that have produced what was asked."""
        best = logits.argmax(-1).tolist()
        second = (1 + logits[:, 1:].argmax(-1)).tolist()
        for seq, token, other in zip(batch, best, second):
            if token == EOS and seq.ignore_eos:
                token = other
            seq.last, seq.produced = token, seq.produced + 1
            self.stats["tokens_total"] += 1
            seq.emit(token)
            if seq.produced >= seq.max_tokens or token == EOS or seq.length + 1 >= self.model.shape.seq_len:
                seq.emit(None)
                self.free.append(seq.slot)
                if seq in self.running:
                    self.running.remove(seq)
            elif seq not in self.running:
                self.running.append(seq)
