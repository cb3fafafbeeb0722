"""Energy per item and cost of a finished run, added to its metrics (see :mod:`kubebench.collect.cost` for the formulas).

Called by the runner once the run's telemetry (energy included) is recorded. A workload's own metric
is never replaced; what could not be priced is said in the run's info (``cost_unavailable``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .collect.cost import Held, cost_metrics, energy_per_item, hourly_rate
from .errors import SpecError
from .render.kinds import replica_groups
from .render.pods import cpu_quantity
from .render.trainjob import TRAINER_NODE
from .spec.efficiency import load_prices

if TYPE_CHECKING:
    from .spec.model import BenchmarkSpec
    from .store.records import RunResult

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
COST_KEY, NO_COST_KEY = "cost_basis", "cost_unavailable"
#: Info key naming the derived metrics left out because they came to no finite number (a throughput of
#: 1e-300 makes the price per item ``inf``): JSON has no ``inf``, and it is no measurement.
REFUSED_KEY = "metrics_refused"


def requested(manifest: dict[str, Any]) -> tuple[int, float]:
    """GPUs and CPU cores the manifest's pods ask for, over all replicas, as the scheduler (and
    Kueue's quota) counts them: each resource's request, else its limit (an MPIJob's launcher asks
    for a little CPU and no GPU: the workers' GPUs are the ranks')."""
    gpus, cores = 0, 0.0
    for group in replica_groups(manifest):
        containers = (group.template.get("spec") or {}).get("containers") or []
        resources = [c.get("resources") or {} for c in containers]
        if group.type == TRAINER_NODE:  # a TrainJob's sizes are the trainer's, per node
            resources = [((manifest.get("spec") or {}).get("trainer") or {}).get("resourcesPerNode") or {}]
        for r in resources:
            amounts = {**(r.get("limits") or {}), **(r.get("requests") or {})}
            gpus += group.count * sum(int(amounts.get(k, 0)) for k in GPU_RESOURCES)
            cores += group.count * cpu_quantity(amounts.get("cpu", 0))
    return gpus, cores


def held_by(manifest: dict[str, Any], provenance: dict[str, Any], machine_local: bool) -> Held:
    """What the run held: its requests, else (a local run) this machine's GPUs and usable CPUs."""
    gpus, cores = requested(manifest)
    models = [g.get("model", "") for g in provenance.get("gpus") or [] if isinstance(g, dict)]
    name = models[0] if models and machine_local else ""
    if gpus or cores:
        return Held(gpus, cores, name, "as requested by the job")
    if machine_local:
        return Held(len(models), float(provenance.get("cpus_usable") or provenance.get("cpu_threads") or 0), name,
                    "the machine's GPUs and usable CPUs: the job requests none")
    return Held(0, 0.0, "", "")


def steady_mfu(metrics: dict[str, float]) -> dict[str, float]:
    """``steady_mfu``: the MFU of the collector's steady window (``steady_items_per_sec``, MSER-5 over
    the steps the workload wrote) for a workload that reports its FLOPs per item and its devices' peak."""
    names = ("steady_items_per_sec", "model_flops_per_token", "peak_tflops_per_device", "tokens_per_sec",
             "tokens_per_sec_per_device")
    values = [v for v in (metrics.get(n) for n in names) if isinstance(v, (int, float)) and v > 0]
    if len(values) != len(names):
        return {}
    steady, fpt, peak_tflops, rate, per_device = values
    devices = rate / per_device
    return {"steady_mfu": steady / devices * fpt / (peak_tflops * 1e12)}


def account(spec: BenchmarkSpec, base_dir: Path, manifest: dict[str, Any], result: RunResult, seconds: float,
            machine_local: bool, energy_seconds: float | None = None) -> RunResult:
    """``result`` with energy per item and, under ``prices:``, its cost (succeeded runs only).

    ``seconds``: how long the workload ran (its containers' or processes' start to their end, not the
    queue, scheduling, scale-up or image pull before it); ``energy_seconds``: the window the run's
    ``energy_joules`` was measured over (default ``seconds``), so that its mean power is right."""
    if result.status != "succeeded" or not seconds > 0:
        return result
    metrics, info = dict(result.metrics), dict(result.info)
    added = energy_per_item(metrics, energy_seconds or seconds) | steady_mfu(metrics)
    if spec.prices is not None:
        try:
            table = load_prices(spec.prices, base_dir)
        except SpecError as e:  # checked before the first run; a file changed since is this run's note
            table, info[NO_COST_KEY] = None, str(e)
        rate = hourly_rate(table, held_by(manifest, result.provenance, machine_local)) if table else None
        if rate is None:
            pass
        elif rate.usd_per_hour is None:
            info[NO_COST_KEY] = rate.detail
        else:
            added |= cost_metrics(rate.usd_per_hour, seconds, metrics)
            info[COST_KEY] = rate.detail
    refused = sorted(name for name, value in added.items() if not math.isfinite(value) and name not in metrics)
    if refused:
        info[REFUSED_KEY] = (", ".join(f"{name}={added[name]}" for name in refused)
                             + ": not finite numbers (a throughput, energy or price out of range), left out")
    metrics = {**{k: v for k, v in added.items() if math.isfinite(v)}, **metrics}  # the workload's own figures win
    return result.model_copy(update={"metrics": metrics, "info": info})
