"""Decode tokens/s of the reference server's engine (``llm_engine``, default ``ModelConfig``) on one
PyTorch thread: ``--prompts`` requests of 32 words submitted at once, ``--tokens`` tokens each.
"Decode" counts the tokens of decode steps over the time spent in them (prefill excluded); "overall"
is every token over the wall time.

    .venv/bin/python bench/llm_engine_decode.py [--runs 5] [--prompts 8] [--tokens 64]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import torch

from kubebench.workloads.llm_engine import Engine, ModelConfig, Sequence, build_model, encode
from kubebench.workloads.llm_model import Transformer


def run(model: Transformer, cfg: ModelConfig, prompts: int, tokens: int) -> tuple[float, float]:
    """(decode tokens/s, overall tokens/s) of one batch of requests on a fresh engine."""
    engine = Engine(model, max_batch=prompts)
    done = threading.Semaphore(0)
    engine.start()
    started = time.perf_counter()
    for i in range(prompts):
        prompt = encode(" ".join(f"w{i}x{j}" for j in range(32)), cfg.vocab)
        engine.submit(Sequence(prompt, tokens, lambda t: done.release() if t is None else None))
    for _ in range(prompts):
        done.acquire()
    wall = time.perf_counter() - started
    engine.stop()
    s = engine.stats
    return (s["tokens_total"] - prompts) / s["step_seconds_total"], s["tokens_total"] / wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--tokens", type=int, default=64)
    args = p.parse_args()
    torch.set_num_threads(1)
    cfg = ModelConfig()
    model = build_model(cfg)
    run(model, cfg, 2, 8)  # warm-up
    results = [run(model, cfg, args.prompts, args.tokens) for _ in range(args.runs)]
    print(f"decode {statistics.median(r[0] for r in results):.0f} tok/s, "
          f"overall {statistics.median(r[1] for r in results):.0f} tok/s (median of {args.runs} runs)")


if __name__ == "__main__":
    main()
