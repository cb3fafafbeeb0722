"""LLM training throughput in JAX: the decoder-only transformer of ``llm_train`` (:mod:`.jax_model`),
trained with AdamW (optax) on synthetic tokens, data parallel over processes.

Run as ``python -m kubebench.workloads.jax_train [--preset tiny|small|…] [--parallel dp|fsdp] …``.
With several processes (a JAXJob, a TrainJob on Trainer's ``jax-distributed`` runtime, or the local
backend emulating either; see :mod:`.peers`) it joins them through ``jax.distributed`` and trains one
model over a mesh of every process's devices (CPU collectives over gloo): the global batch is sharded
over the processes, the parameters replicated (``dp``) or sharded over the mesh as well (``fsdp``: XLA
gathers them for each step and reduce-scatters the gradients).

Rank 0 prints ``tokens/sec: <global rate>`` and a ``KUBEBENCH_METRIC`` line, as ``llm_train`` does:
``tokens_per_sec``, ``tokens_per_sec_per_device``, ``step_time_p50/p90/p99``, ``model_flops_per_token``
(6·N + 12·L·T·d, :mod:`kubebench.efficiency.flops`), ``tflops_per_device``, ``mfu`` against
``peak_tflops_per_device`` (a GPU's from the peaks table; a CPU's measured: the best square matmul in
JAX on the run's threads, every rank at once), ``peak_memory_bytes``, ``params``,
``loss_first``/``loss_final``. It writes every step's time to ``output/step_times.json`` (kubebench
finds the steady window there: ``steady_items_per_sec``, ``steady_mfu``), the configuration and losses
to ``output/jax_train.json`` and the device, precision and peak's source to ``result/result.json``.
Every rank ends with ``rank R of N: params_sha256=… own_rate=…``.

The arguments and the environment are checked before JAX is imported, so that a mistake fails at once.
"""

from __future__ import annotations

import argparse
import os
import sys

from .llm_options import add_model_arguments, shape_of
from .options import available_cpus, non_negative, positive, positive_float
from .peers import Peers, PeersError, jax_peers

PARALLEL = ("dp", "fsdp")
#: Seconds the processes wait for each other to join (then the run fails instead of hanging).
INIT_TIMEOUT_S = 600


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Parse and validate the command line; argparse exits with status 2 and one line on error."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.jax_train",
                                description="Decoder-only transformer training throughput in JAX (tokens/s, MFU).")
    add_model_arguments(p)
    p.add_argument("--batch-size", type=positive, default=8, help="sequences per step per device")
    p.add_argument("--steps", type=positive, default=20, help="measured steps")
    p.add_argument("--warmup-steps", type=non_negative, default=5, help="steps run before measuring (the first compiles)")
    p.add_argument("--lr", type=positive_float, default=3e-4, help="AdamW learning rate")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--parallel", choices=PARALLEL, default="dp",
                   help="parameters replicated on every device (dp) or sharded over them (fsdp)")
    p.add_argument("--threads", type=non_negative, default=0, help="CPU threads (0: the CPUs / local processes)")
    args = p.parse_args(argv)
    try:
        args.shape = shape_of(args)
    except ValueError as e:
        p.error(str(e))
    return args


def limit_threads(threads: int) -> None:
    """Keep XLA's CPU client to ``threads`` threads for its operations (set before JAX starts)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "intra_op_parallelism_threads" not in flags:
        extra = f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} intra_op_parallelism_threads={threads}"
        os.environ["XLA_FLAGS"] = f"{flags} {extra}".strip()


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments, find the peers, size the threads, then train (imports JAX)."""
    args = parse_args(argv)
    try:
        peers: Peers = jax_peers()
    except PeersError as e:
        sys.exit(f"jax_train: {e}")
    args.threads = args.threads or max(1, available_cpus() // peers.local_world)
    limit_threads(args.threads)
    from .jax_steps import run

    run(args, peers)


if __name__ == "__main__":
    main()
