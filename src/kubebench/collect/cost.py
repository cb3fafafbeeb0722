"""What a run costs, from a user's price table (``prices:`` in the spec), and per-item figures.

    cost_usd = hours × (devices × USD per device-hour + CPU cores × USD per core-hour)

``hours`` is the time the workload ran: from its first container (or process) start to the end of its
last, as the run's timeline says (:mod:`kubebench.timeline`), not the time it waited in a queue, for a
node or for its image before (without a timeline: from admission to the end of the job). What the run
held: the GPUs and CPU cores its pods request (each request, else its limit, as the scheduler counts
them) times each replica type's count; a local run that requests none holds the machine's GPUs and
usable CPUs. Per item, at the
measured throughput (what the items cost in a long run, without start-up):

    usd_per_million_tokens   = USD per second / tokens_per_sec × 10⁶
    usd_per_thousand_images  = USD per second / images_per_sec × 10³

and the same for ``samples_per_sec`` and ``requests_per_sec``. Energy per item uses the run's energy:
``joules_per_<item> = (energy_joules / seconds measured over) / <items>_per_sec``, the run's mean power
over its throughput (a pod's energy is read over the workload's window, so a queued run's figure is
the same as one that started at once); start-up idles in that mean, so a workload that measured its own steps (``llm_train`` on a
GPU) reports ``joules_per_token`` itself, and its figure is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec.efficiency import Price, PriceTable

#: Throughput metric → (item, scale and name of the price per item).
ITEMS = {
    "tokens_per_sec": ("token", 1e6, "usd_per_million_tokens"),
    "images_per_sec": ("image", 1e3, "usd_per_thousand_images"),
    "samples_per_sec": ("sample", 1e3, "usd_per_thousand_samples"),
    "requests_per_sec": ("request", 1e3, "usd_per_thousand_requests"),
}


@dataclass(frozen=True)
class Held:
    """What a run held while it ran, and how that is known (for the run's info)."""

    gpus: int
    cores: float
    gpu_name: str = ""
    basis: str = ""


@dataclass(frozen=True)
class Rate:
    """USD per hour of a run's resources, or why there is no price."""

    usd_per_hour: float | None
    detail: str


def column(price: Price, pricing: str, what: str) -> float:
    """The price under ``pricing`` (a plain number applies to every pricing); ValueError if absent."""
    if not isinstance(price, dict):
        return float(price)
    if pricing not in price:
        raise ValueError(f"{what} has no {pricing!r} price (it has {', '.join(sorted(price)) or 'none'})")
    return float(price[pricing])


def device_price(table: PriceTable, gpu_name: str) -> tuple[str, Price] | None:
    """The row of the table for this GPU: the longest key contained in its name; the only row when
    the name is unknown (a Kubernetes node's GPU); None otherwise."""
    rows = table.device_hour
    matches = [k for k in rows if k.lower() in gpu_name.lower()] if gpu_name else []
    if matches:
        key = max(matches, key=len)
        return key, rows[key]
    if not gpu_name and len(rows) == 1:
        return next(iter(rows.items()))
    return None


def hourly_rate(table: PriceTable, held: Held) -> Rate:
    """USD per hour of what the run held, under the table's pricing."""
    parts, usd = [], 0.0
    try:
        if held.gpus:
            row = device_price(table, held.gpu_name)
            if row is None:
                known = ", ".join(sorted(table.device_hour)) or "none"
                return Rate(None, f"no device_hour price for {held.gpu_name or 'the run’s GPUs'} (prices for: {known})")
            price = column(row[1], table.pricing, f"device_hour[{row[0]!r}]")
            usd += held.gpus * price
            parts.append(f"{held.gpus} × {row[0]} at ${price:g}/h")
        if held.cores:
            if table.cpu_core_hour is None:
                if not held.gpus:
                    return Rate(None, "no cpu_core_hour price for a run on CPUs")
            else:
                price = column(table.cpu_core_hour, table.pricing, "cpu_core_hour")
                usd += held.cores * price
                parts.append(f"{held.cores:g} CPU cores at ${price:g}/h")
    except ValueError as e:
        return Rate(None, str(e))
    if not parts:
        return Rate(None, "the run held no priced resource")
    return Rate(usd, f"{table.pricing}: " + " + ".join(parts) + (f" ({held.basis})" if held.basis else ""))


def cost_metrics(rate_usd_per_hour: float, seconds: float, metrics: dict[str, float]) -> dict[str, float]:
    """``cost_usd`` of the run and the price per item of each throughput it reported."""
    found = {"cost_usd": rate_usd_per_hour * seconds / 3600, "usd_per_hour": rate_usd_per_hour}
    for metric, (_, scale, name) in ITEMS.items():
        rate = metrics.get(metric)
        if rate and rate > 0:
            found[name] = rate_usd_per_hour / 3600 / rate * scale
    return found


def energy_per_item(metrics: dict[str, float], seconds: float) -> dict[str, float]:
    """``joules_per_<item>`` for each throughput, from the run's energy and wall time (see module doc)."""
    joules = metrics.get("energy_joules")
    if joules is None or not seconds > 0:
        return {}
    power = joules / seconds
    return {f"joules_per_{item}": power / metrics[metric] for metric, (item, _, _) in ITEMS.items()
            if metrics.get(metric, 0) > 0}
