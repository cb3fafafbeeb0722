"""LLM training throughput: a decoder-only transformer trained with AdamW on synthetic tokens or a token file.

Run as ``python -m kubebench.workloads.llm_train [--preset tiny|small|gpt2-124m|1b|…] [--parallel ddp|fsdp] …``.
With ``WORLD_SIZE`` > 1 (a PyTorchJob, a TrainJob, torchrun) it joins a ``torch.distributed`` group
(gloo on CPU, NCCL on GPU) and trains data parallel (DDP) or fully sharded (FSDP2's ``fully_shard``
on every block and on the whole model).

Rank 0 prints ``tokens/sec: <global rate>`` and a ``KUBEBENCH_METRIC`` line: ``tokens_per_sec``,
``tokens_per_sec_per_device``, ``step_time_p50/p90/p99``, ``model_flops_per_token`` (6·N + 12·L·T·d, see
:mod:`kubebench.efficiency.flops`), ``tflops_per_device``, ``mfu`` (a fraction of the device's peak,
``peak_tflops_per_device``), ``peak_memory_bytes``, ``params``, ``loss_first``/``loss_final``, and on GPUs with NVML
``energy_joules_measured`` and ``joules_per_token`` (over the measured steps). It writes every step's
time to ``output/step_times.json`` (items: tokens; kubebench's collector finds the steady window there:
``steady_items_per_sec``, and ``steady_mfu`` from it), every step's loss (mean over replicas) to
``output/llm_train.json``, and the device, precision and peak's source to ``result/result.json`` (the
run's info). Every rank ends with ``rank R of N: params_sha256=… own_rate=…``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

import kubebench

from ..efficiency.counters import Energy
from ..efficiency.flops import flops_per_token, total_params
from .distributed import Group, setup
from .llm_data import token_batches
from .llm_efficiency import PeakFound, device_name, find_peak, gpu_meter, precision
from .llm_model import Transformer, loss_of
from .llm_options import parse_args
from .measure import peak_rss_bytes, print_header, step_metrics, write_step_times
from .models import autocast, compiled


def resolve_amp(amp: str, device: torch.device) -> str:
    """``auto``: bf16 on GPUs that support it, fp16 on older ones, none (fp32) on CPUs."""
    if amp != "auto":
        return amp
    if device.type != "cuda":
        return "none"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def parallelize(model: Transformer, args: argparse.Namespace, group: Group) -> nn.Module:
    """DDP, or FSDP2 (each block sharded, then the root); one replica trains the plain model."""
    if group.mode != "torch":
        return model
    if args.parallel == "ddp":
        ids = [group.device.index] if group.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(group.device.type, (group.world_size,))
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    return fully_shard(model, mesh=mesh)  # type: ignore[return-value]  # the stub says FSDPModule: it is the model, its class made a subclass of both


def make_step(model: nn.Module, args: argparse.Namespace, group: Group, losses: list[torch.Tensor]) -> Callable:
    """One training step: forward under autocast, backward, gradient exchange, AdamW update."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=args.weight_decay)
    amp = autocast(group.device, args.amp)
    # fp16 gradients underflow without loss scaling; bf16 has fp32's range and needs none.
    scaler = torch.amp.GradScaler(group.device.type) if args.amp == "fp16" else None

    def train(batch: torch.Tensor) -> None:
        optimizer.zero_grad(set_to_none=True)
        with amp():
            loss = loss_of(model, batch)
        losses.append(loss.detach())  # no .item(): a GPU would wait for every step
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()

    return train


def timed_steps(step: Callable[[torch.Tensor], None], batches: Callable[[int], torch.Tensor], first: int,
                count: int, device: torch.device) -> tuple[list[float], list[float]]:
    """Run steps ``first`` … ``first + count - 1``; each one's wall seconds (input included) and this
    process's CPU seconds in it."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times, cpu = [], []
    for i in range(first, first + count):
        start, cpu_start = time.perf_counter(), time.process_time()
        step(batches(i))
        sync()  # CUDA runs asynchronously: without this we would time the launch, not the step
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    return times, cpu


def peak_memory(device: torch.device) -> int:
    """Peak bytes of this replica: CUDA allocator peak on a GPU, process peak RSS on CPU."""
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else peak_rss_bytes()


def params_sha256(model: nn.Module) -> str:
    """SHA-256 of the full parameters' bytes in model order (FSDP's shards gathered: a collective, so
    every rank calls it); replicas that trained together have equal digests."""
    digest = hashlib.sha256()
    for p in model.parameters():
        full = p.full_tensor() if hasattr(p, "full_tensor") else p  # a DTensor under FSDP2
        digest.update(full.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
    return digest.hexdigest()


def report_replica(rank: int, world_size: int, digest: str, own_rate: float) -> None:
    """A replica's closing line, in the format of the other workloads (``measure.report_replica``)."""
    print(f"rank {rank} of {world_size}: params_sha256={digest} own_rate={own_rate!r}", flush=True)


def describe(args: argparse.Namespace, group: Group, params: int) -> None:
    """The start-up banner."""
    s = args.shape
    print(f"llm_train: preset={args.preset} params={params} batch_size={args.batch_size} per replica, "
          f"world_size={group.world_size}, device={group.device}, threads={torch.get_num_threads()}", flush=True)
    print_header({
        "Model": f"{s.layers} layers, d_model {s.d_model}, {s.heads} heads ({s.kv_heads} KV), ffn {s.ffn} {s.mlp}, "
                 f"vocab {s.vocab}",
        "Sequence length": s.seq_len,
        "Dataset": args.data,
        "Batch size": f"{args.batch_size * group.world_size} sequences global, {args.batch_size} per device",
        "Num batches": args.steps,
        "Precision": args.amp if args.amp != "none" else "fp32",
        "Parallel": args.parallel if group.mode == "torch" else "none (one replica)",
        "Compiled": "yes" if args.compile else "no",
        "Checkpointing": "yes" if args.checkpointing else "no",
    })


def run(args: argparse.Namespace, group: Group) -> None:
    """Build, train, measure, and report (rank 0) the run's numbers."""
    if group.mode == "mpi":
        sys.exit("llm_train: replicas train under torch.distributed (DDP or FSDP), not MPI: launch it with "
                 "torchrun or as a PyTorchJob / TrainJob")
    args.amp = resolve_amp(args.amp, group.device)
    with group.device:  # weights made where they live: a 1B model initialised on a CPU takes seconds
        bare = Transformer(args.shape, args.checkpointing)
    model = compiled(parallelize(bare, args, group), args.compile)
    try:
        batches = token_batches(args.data, args.shape, args.batch_size, args.seed, group.rank, group.world_size,
                                group.device)
    except (OSError, ValueError) as e:
        sys.exit(f"llm_train: {e}")  # a missing or malformed token file: one line, not a traceback
    params = total_params(args.shape)
    if group.rank == 0:
        describe(args, group, params)
    losses: list[torch.Tensor] = []
    step = make_step(model, args, group, losses)
    kubebench.mark("first_step")
    warm, warm_cpu = timed_steps(step, batches, 0, args.warmup_steps, group.device)
    meter = gpu_meter(group.device)
    if meter is not None:
        meter.start()
    times, cpu = timed_steps(step, batches, args.warmup_steps, args.steps, group.device)
    kubebench.mark("last_step")
    energy = meter.stop() if meter is not None else None
    if group.rank == 0:  # at once: the file's time marks the end of the measured steps (bench/gpu.py uses it)
        tokens_per_step = args.batch_size * args.shape.seq_len
        write_step_times(args.warmup_steps, tokens_per_step, group.world_size, warm + times, cpu_seconds=warm_cpu + cpu)
    report(args, group, model, warm + times, losses, params, energy)


def report(args: argparse.Namespace, group: Group, model: nn.Module, times: list[float],
           losses: list[torch.Tensor], params: int, energy: Energy | None) -> None:
    """Gather the replicas' figures and print / write them on rank 0; every rank prints its digest."""
    measured = times[args.warmup_steps:]
    tokens_per_step = args.batch_size * args.shape.seq_len
    own_rate = tokens_per_step * len(measured) / sum(measured)
    rate = group.allreduce(own_rate)
    peak_mem = group.allreduce(float(peak_memory(group.device)), op="max")
    mean_losses = _mean_over_replicas(torch.stack(losses).float(), group)
    found = find_peak(group.device, args.amp)
    peak = group.allreduce(found.peak.flops if found.peak else 0.0) / group.world_size
    joules = _energy_over_replicas(energy, group)
    digest = params_sha256(model)
    if group.rank == 0:
        fpt = flops_per_token(args.shape)
        metrics = _metrics(args, group, times, rate, fpt, peak if found.peak else None, peak_mem, params, mean_losses)
        if joules is not None:
            tokens = tokens_per_step * group.world_size * len(measured)
            metrics |= {"energy_joules_measured": joules, "joules_per_token": joules / tokens}
        print(f"tokens/sec: {rate:.1f}", flush=True)
        kubebench.report(**metrics)
        _write_outputs(args, group, mean_losses, found, energy)
    report_replica(group.rank, group.world_size, digest, own_rate)


def _metrics(args: argparse.Namespace, group: Group, times: list[float], rate: float, fpt: int, peak: float | None,
             peak_mem: float, params: int, losses: list[float]) -> dict[str, float]:
    measured = times[args.warmup_steps:]
    per_device = rate / group.world_size
    metrics = {"tokens_per_sec": rate, "tokens_per_sec_per_device": per_device, **step_metrics(measured),
               "model_flops_per_token": float(fpt), "tflops_per_device": per_device * fpt / 1e12,
               "peak_memory_bytes": peak_mem, "params": float(params),
               "loss_first": losses[0], "loss_final": losses[-1]}
    # The steady window is kubebench's collector's (MSER-5 over output/step_times.json, warm-up
    # included): steady_items_per_sec, and steady_mfu from it (kubebench.accounting).
    if peak:
        metrics |= {"peak_tflops_per_device": peak / 1e12, "mfu": per_device * fpt / peak}
    return metrics


def _mean_over_replicas(losses: torch.Tensor, group: Group) -> list[float]:
    """Every step's loss, averaged over the replicas (each trained on its own batch)."""
    if group.mode == "torch":
        import torch.distributed as dist

        losses = losses.to(group.device)
        dist.all_reduce(losses)
        losses = losses / group.world_size
    return [float(v) for v in losses.cpu()]


def _energy_over_replicas(energy: Energy | None, group: Group) -> float | None:
    """Joules of every replica's GPU over the measured steps; None unless every replica could read its own."""
    own = energy.metrics.get("energy_joules") if energy is not None else None
    counted = group.allreduce(1.0 if own is not None else 0.0)
    total = group.allreduce(own or 0.0)
    return total if counted == group.world_size else None


def _write_outputs(args: argparse.Namespace, group: Group, losses: list[float], found: PeakFound,
                   energy: Energy | None) -> None:
    """``output/llm_train.json`` (configuration and losses) and ``result/result.json`` (the run's info)."""
    out, result = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH"), os.environ.get("KUBEBENCH_EXP_RESULT_PATH")
    record = {"preset": args.preset, "shape": vars(args.shape), "batch_size": args.batch_size,
              "world_size": group.world_size, "parallel": args.parallel if group.mode == "torch" else "none",
              "amp": args.amp, "warmup_steps": args.warmup_steps, "loss": losses}
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "llm_train.json").write_text(json.dumps(record, indent=1) + "\n")
    if result:
        info = {"device": device_name(group.device), "precision": precision(group.device, args.amp),
                "parallel": record["parallel"], "preset": args.preset}
        info |= {"peak_source": found.peak.source} if found.peak else {"mfu_unavailable": found.reason}
        if energy is not None:
            info |= {f"workload_{k}": v for k, v in energy.info.items()}
        Path(result).mkdir(parents=True, exist_ok=True)
        (Path(result) / "result.json").write_text(json.dumps(info, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    """Entry point: parse arguments, join the peers, run, and leave the group in order."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)  # same initial weights on every replica
    group = setup(args.dist, args.threads)
    try:
        run(args, group)
    except BaseException:
        group.close()
        raise
    group.end()


if __name__ == "__main__":
    main()
