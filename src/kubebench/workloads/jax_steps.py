"""The JAX side of ``jax_train`` (imported once the arguments and the environment are known good):
join the processes, lay the model over a mesh of every device, train, measure, report.

Data parallel the JAX way: one ``jit``-compiled step over global arrays whose batch is sharded over a
one-axis mesh (``data``) of all devices; XLA inserts the gradient all-reduce (``dp``) or the parameter
all-gathers and gradient reduce-scatters (``fsdp``), which run over gloo between CPU processes.
Every process builds the same initial weights from the same seed (inside the jitted initialiser, so
that each computes only its own shards) and feeds its own batch (seed + rank).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import kubebench

from ..efficiency.flops import flops_per_token, total_params
from .jax_model import Params, count_params, init_params, loss_of
from .jax_train import INIT_TIMEOUT_S
from .measure import cpu_name, peak_rss_bytes, print_header, report_replica, step_metrics, write_step_times
from .peers import Peers

#: Matmul size and time budget of the CPU peak measurement (as llm_train's).
CPU_PEAK_N, CPU_PEAK_S = 512, 0.5


@dataclass(frozen=True)
class Layout:
    """Where the arrays live: the mesh, the batch's sharding and each parameter's."""

    mesh: Mesh
    batch: NamedSharding
    params: Any  # a pytree of NamedSharding, shaped like the parameters


def join(peers: Peers) -> None:
    """Join the job's other processes (CPU collectives over gloo); a lone process joins nothing."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    if peers.world_size > 1:
        jax.distributed.initialize(peers.address, peers.world_size, peers.rank, cluster_detection_method="deactivate",
                                   initialization_timeout=INIT_TIMEOUT_S)


def layout(params_shape: Params, parallel: str) -> Layout:
    """A one-axis mesh over every device; ``fsdp`` shards each parameter's first axis that divides."""
    mesh = Mesh(np.array(jax.devices()), ("data",))
    devices = mesh.size

    def spec(leaf: jax.ShapeDtypeStruct) -> NamedSharding:
        if parallel == "fsdp":
            axis = next((i for i, n in enumerate(leaf.shape) if n % devices == 0), None)
            if axis is not None:
                return NamedSharding(mesh, P(*([None] * axis), "data"))
        return NamedSharding(mesh, P())

    return Layout(mesh, NamedSharding(mesh, P("data")), jax.tree.map(spec, params_shape))


def trainer(args: argparse.Namespace, lay: Layout) -> tuple[Any, Any]:
    """The jitted initialiser (seed → parameters and optimizer state) and the jitted step."""
    optimizer = optax.adamw(args.lr, b1=0.9, b2=0.95, weight_decay=args.weight_decay)
    shape = args.shape

    def init(key: jax.Array) -> tuple[Params, Any]:
        params = jax.lax.with_sharding_constraint(init_params(key, shape), lay.params)
        return params, optimizer.init(params)

    def step(params: Params, state: Any, batch: jax.Array) -> tuple[Params, Any, jax.Array]:
        loss, grads = jax.value_and_grad(loss_of)(params, batch, shape)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    return jax.jit(init), jax.jit(step, donate_argnums=(0, 1))


def synthetic_batch(args: argparse.Namespace, lay: Layout, rank: int) -> jax.Array:
    """This process's fixed block of random tokens (seed + rank), as its shard of the global batch."""
    local = args.batch_size * jax.local_device_count()
    tokens = np.random.default_rng(args.seed + rank).integers(0, args.shape.vocab, (local, args.shape.seq_len + 1))
    return jax.make_array_from_process_local_data(lay.batch, tokens.astype(np.int32))


def timed_steps(step: Any, carry: tuple[Params, Any], batch: jax.Array, count: int,
                losses: list[jax.Array]) -> tuple[tuple[Params, Any], list[float], list[float]]:
    """``count`` steps; each one's wall seconds (waiting for its result: JAX dispatches asynchronously)
    and this process's CPU seconds in it."""
    times, cpu = [], []
    params, state = carry
    for _ in range(count):
        start, cpu_start = time.perf_counter(), time.process_time()
        params, state, loss = step(params, state, batch)
        jax.block_until_ready((params, loss))
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
        losses.append(loss)
    return (params, state), times, cpu


def gather_floats(values: list[float]) -> np.ndarray:
    """Every process's ``values`` ([processes, len]), exactly: float64 travels as its uint32 halves
    (JAX computes in 32 bits unless x64 is on)."""
    halves = np.asarray(values, np.float64).view(np.uint32)
    if jax.process_count() == 1:
        return halves.view(np.float64)[None, :]
    gathered = np.asarray(multihost_utils.process_allgather(halves))
    return np.ascontiguousarray(gathered).view(np.float64)


def params_sha256(params: Params) -> str:
    """SHA-256 of the full parameters' float32 bytes in tree order (shards gathered: a collective)."""
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(params):
        full = leaf.addressable_data(0) if leaf.is_fully_replicated else multihost_utils.process_allgather(leaf, tiled=True)
        digest.update(np.ascontiguousarray(np.asarray(full, np.float32)).tobytes())
    return digest.hexdigest()


def measure_matmul_flops(n: int = CPU_PEAK_N, seconds: float = CPU_PEAK_S) -> float:
    """Best FLOP/s of ``n``×``n`` float32 matmuls on this process's device within ``seconds``."""
    a = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    device = jax.local_devices()[0]
    a = jax.device_put(a, device)
    mm = jax.jit(lambda x: x @ x)
    mm(a).block_until_ready()  # compiles
    best, deadline = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        mm(a).block_until_ready()
        best = max(best, 2 * n**3 / (time.perf_counter() - start))
    return best


def find_peak(threads: int) -> tuple[float | None, str]:
    """(peak FLOP/s of a device or None, its source or why there is none); CPUs are measured with every
    process at once, so that processes sharing a machine share it as they did while training."""
    device = jax.local_devices()[0]
    if device.platform != "cpu":
        return None, (f"JAX on {device.device_kind}: the precision of its float32 matmuls is XLA's choice "
                      "there, so no datasheet peak is assumed")
    if jax.process_count() > 1:
        multihost_utils.sync_global_devices("kubebench-peak")
    rate = measure_matmul_flops()
    return rate, f"measured: best {CPU_PEAK_N}x{CPU_PEAK_N} fp32 matmul in JAX on {threads} threads"


def peak_memory() -> int:
    """Peak bytes of this process: the device allocator's peak on an accelerator, peak RSS on CPU."""
    device = jax.local_devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    return int(stats.get("peak_bytes_in_use", 0)) if stats else peak_rss_bytes()


def describe(args: argparse.Namespace, params: int) -> None:
    """The start-up banner (``threads=`` is what ``kubebench scaling`` reads)."""
    s, world = args.shape, jax.device_count()
    print(f"jax_train: preset={args.preset} params={params} batch_size={args.batch_size} per device, "
          f"world_size={world}, processes={jax.process_count()}, device={jax.local_devices()[0].platform}, "
          f"threads={args.threads}, jax={jax.__version__}", flush=True)
    print_header({
        "Model": f"{s.layers} layers, d_model {s.d_model}, {s.heads} heads ({s.kv_heads} KV), ffn {s.ffn} {s.mlp}, "
                 f"vocab {s.vocab}",
        "Sequence length": s.seq_len,
        "Dataset": "synthetic",
        "Batch size": f"{args.batch_size * world} sequences global, {args.batch_size} per device",
        "Num batches": args.steps,
        "Precision": "fp32",
        "Parallel": args.parallel if world > 1 else "none (one device)",
    })


def run(args: argparse.Namespace, peers: Peers) -> None:
    """Join, build, train, measure, and report (rank 0) the run's numbers; leave the group.

    Marks ``imports_done`` (JAX imported), ``rendezvous_done`` once every process is known to be in
    the group (after a first collective: gloo makes its communicator only then), and ``first_step`` /
    ``last_step`` around the steps, as the PyTorch workloads do (``kubebench.mark``)."""
    kubebench.mark("imports_done")
    join(peers)
    try:
        if jax.process_count() > 1:
            multihost_utils.sync_global_devices("kubebench-rendezvous")
        kubebench.mark("rendezvous_done")
        _train(args, peers)
    finally:
        if jax.process_count() > 1:
            jax.distributed.shutdown()


def _train(args: argparse.Namespace, peers: Peers) -> None:
    rank = jax.process_index()
    shapes = jax.eval_shape(lambda: init_params(jax.random.key(0), args.shape))
    lay = layout(shapes, args.parallel)
    init, step = trainer(args, lay)
    carry = init(jax.random.key(args.seed))  # the same weights on every process
    params = count_params(carry[0])
    assert params == total_params(args.shape), (params, total_params(args.shape))
    if rank == 0:
        describe(args, params)
    batch = synthetic_batch(args, lay, rank)
    losses: list[jax.Array] = []
    kubebench.mark("first_step")
    carry, warm, warm_cpu = timed_steps(step, carry, batch, args.warmup_steps, losses)
    carry, times, cpu = timed_steps(step, carry, batch, args.steps, losses)
    kubebench.mark("last_step")
    tokens_per_step = args.batch_size * args.shape.seq_len  # per device
    if rank == 0:  # at once: the file's time marks the end of the measured steps
        write_step_times(args.warmup_steps, tokens_per_step, jax.device_count(), warm + times,
                         cpu_seconds=warm_cpu + cpu)
    _report(args, carry[0], times, [float(v) for v in losses], tokens_per_step)


def _report(args: argparse.Namespace, params: Params, measured: list[float], losses: list[float],
            tokens_per_step: int) -> None:
    """Gather the processes' figures; rank 0 prints and writes them; every rank prints its digest."""
    rank, devices = jax.process_index(), jax.device_count()
    own_rate = tokens_per_step * jax.local_device_count() * len(measured) / sum(measured)
    peak, source = find_peak(args.threads)
    figures = gather_floats([own_rate, float(peak_memory()), peak or 0.0])
    rate, peak_mem = float(figures[:, 0].sum()), float(figures[:, 1].max())
    digest = params_sha256(params)
    if rank == 0:
        fpt = flops_per_token(args.shape)
        per_device = rate / devices
        metrics = {"tokens_per_sec": rate, "tokens_per_sec_per_device": per_device, **step_metrics(measured),
                   "model_flops_per_token": float(fpt), "tflops_per_device": per_device * fpt / 1e12,
                   "peak_memory_bytes": peak_mem, "params": float(total_params(args.shape)),
                   "loss_first": losses[0], "loss_final": losses[-1]}
        if peak:
            mean_peak = float(figures[:, 2].mean())
            metrics |= {"peak_tflops_per_device": mean_peak / 1e12, "mfu": per_device * fpt / mean_peak}
        print(f"tokens/sec: {rate:.1f}", flush=True)
        kubebench.report(**metrics)
        _write_outputs(args, losses, source if peak else None, source)
    report_replica(rank, jax.process_count(), digest, own_rate)


def _write_outputs(args: argparse.Namespace, losses: list[float], peak_source: str | None, why: str) -> None:
    """``output/jax_train.json`` (configuration and losses) and ``result/result.json`` (the run's info)."""
    out, result = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH"), os.environ.get("KUBEBENCH_EXP_RESULT_PATH")
    device = jax.local_devices()[0]
    parallel = args.parallel if jax.device_count() > 1 else "none"
    if out:
        record = {"preset": args.preset, "shape": vars(args.shape), "batch_size": args.batch_size,
                  "world_size": jax.device_count(), "processes": jax.process_count(), "parallel": parallel,
                  "warmup_steps": args.warmup_steps, "jax": jax.__version__, "loss": losses}
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "jax_train.json").write_text(json.dumps(record, indent=1) + "\n")
    if result:
        info = {"device": cpu_name() if device.platform == "cpu" else device.device_kind,
                "precision": "fp32", "parallel": parallel, "preset": args.preset, "framework": f"jax {jax.__version__}"}
        info |= {"peak_source": peak_source} if peak_source else {"mfu_unavailable": why}
        Path(result).mkdir(parents=True, exist_ok=True)
        (Path(result) / "result.json").write_text(json.dumps(info, indent=1) + "\n")
