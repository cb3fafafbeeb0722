"""Load generator for OpenAI-compatible LLM servers (vLLM, llama.cpp, TGI, SGLang, kubebench's own).

    python -m kubebench.workloads.llm_load --endpoint http://127.0.0.1:8000/v1 --rate 10 --duration 60 \
        --input-tokens 128 --output-tokens 64:256 --slo ttft=2s,tpot=100ms

Open loop at ``--rate`` requests/s (``--arrivals poisson|gamma|constant``, ``--burstiness``) or closed
loop at ``--concurrency`` users; ``--requests N`` or ``--duration S``; ``--warmup``/``--cooldown``
seconds left out of the statistics. Prints the metric line protocol (TTFT, TPOT, ITL, E2E
percentiles, throughputs, goodput, error rates; seconds) and writes every request to
``$KUBEBENCH_EXP_OUTPUT_PATH/requests-<replica>.parquet``. A run whose client could not keep up
(late sends, a late event loop, a rate or concurrency not reached, arrivals off their law) prints
why and exits 3, reporting no latency: its numbers would be the client's, not the server's.
The endpoint defaults to ``$KUBEBENCH_SERVER_URL`` (what a ``kind: Serving`` job sets).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp

import kubebench

from ..serving import client, validate
from ..serving.arrivals import Arrivals
from ..serving.metrics import energy_metrics, serving_metrics, tokens_source
from ..serving.prompts import Lengths, from_dataset, synthetic
from ..serving.records import RecordsFile, write_records
from ..serving.scrape import MetricsScraper
from ..serving.slo import parse_request_slo

#: Exit code of a run whose client could not keep up (its numbers are not the server's).
INVALID_EXIT = 3
#: Prompts drawn for a closed loop run by duration (used in turn).
_POOL = 2000


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked (errors exit 2 with the option named)."""
    p = argparse.ArgumentParser(prog="python -m kubebench.workloads.llm_load", description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", default=os.environ.get("KUBEBENCH_SERVER_URL", ""),
                   help="base URL(s) ending in /v1, comma-separated (default: $KUBEBENCH_SERVER_URL)")
    p.add_argument("--model", default="", help="model name (default: the first of /v1/models)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=float, help="open loop: requests per second")
    load.add_argument("--concurrency", type=int, help="closed loop: users sending back to back")
    p.add_argument("--arrivals", choices=("poisson", "gamma", "constant"), default="poisson")
    p.add_argument("--burstiness", type=float, default=1.0, help="gamma shape (1: Poisson, <1: burstier)")
    p.add_argument("--requests", type=int, help="requests to send (or --duration)")
    p.add_argument("--duration", type=float, help="seconds to send for (or --requests)")
    p.add_argument("--warmup", type=float, default=0.0, help="first seconds left out of the statistics")
    p.add_argument("--cooldown", type=float, default=0.0, help="last seconds left out of the statistics")
    p.add_argument("--input-tokens", default="128", help="N or LOW:HIGH (synthetic prompts)")
    p.add_argument("--output-tokens", default="128", help="N or LOW:HIGH")
    p.add_argument("--dataset", type=Path, help="ShareGPT-style JSONL instead of synthetic prompts")
    p.add_argument("--token-ids", action="store_true", help="send prompts as token ids (completions API)")
    p.add_argument("--no-ignore-eos", action="store_true", help="let the server stop at its end-of-sequence")
    p.add_argument("--slo", default="", help="per-request SLO for goodput, e.g. ttft=2s,tpot=100ms")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before one request is given up")
    p.add_argument("--max-lag", type=float, default=0.02,
                   help="p99 seconds the client may lag its schedule (and its event loop) before the run is invalid")
    p.add_argument("--allow-invalid", action="store_true", help="report latencies even if the client lagged")
    p.add_argument("--scrape-interval", type=float, default=2.0, help="seconds between scrapes of the server's /metrics")
    p.add_argument("--no-energy", action="store_true", help="do not read the GPUs' energy counter (NVML)")
    p.add_argument("--records", type=Path, help="records file (default: $KUBEBENCH_EXP_OUTPUT_PATH/requests-<replica>.parquet)")
    args = p.parse_args(argv)
    _check(p, args)
    return args


def _check(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not args.endpoint:
        p.error("--endpoint is required (or set KUBEBENCH_SERVER_URL)")
    if (args.requests is None) == (args.duration is None):
        p.error("give exactly one of --requests N and --duration S")
    if args.requests is not None and args.requests < 1 or args.duration is not None and args.duration <= 0:
        p.error("--requests and --duration must be positive")
    if args.rate is not None and args.rate <= 0 or args.concurrency is not None and args.concurrency < 1:
        p.error("--rate must be positive and --concurrency at least 1")
    try:
        args.inputs, args.outputs = Lengths.parse(args.input_tokens), Lengths.parse(args.output_tokens)
        args.slo_bounds = parse_request_slo(args.slo)
    except ValueError as e:
        p.error(str(e))
    args.endpoints = tuple(e.strip().rstrip("/") for e in args.endpoint.split(",") if e.strip())


def replica_index() -> int:
    """This load generator's index among its replicas (local backend, or a Kubernetes Indexed Job)."""
    return int(os.environ.get("KUBEBENCH_REPLICA_INDEX") or os.environ.get("JOB_COMPLETION_INDEX") or 0)


def plan_prompts(args: argparse.Namespace, count: int, seed: int):
    """The prompts of this replica."""
    if args.dataset:
        return from_dataset(args.dataset, count, seed, args.outputs if args.output_tokens != "128" else None)
    return synthetic(count, args.inputs, args.outputs, seed, args.token_ids)


async def run(args: argparse.Namespace, replica: int) -> tuple[RecordsFile, list[float], list[dict]]:
    """Drive the load; return the records (measured flags set), loop delays and server scrapes."""
    seed = args.seed + 1000 * replica  # replicas draw different prompts and arrivals
    clock = client.Clock()
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        model = args.model or await client.first_model(session, args.endpoints[0])
        target = client.Target(args.endpoints, model, args.api, args.timeout, not args.no_ignore_eos)
        monitor = client.LoopMonitor()
        scraper = MetricsScraper(session, args.endpoints[0].removesuffix("/v1") + "/metrics", clock,
                                 args.scrape_interval)
        monitor.start()
        if replica == 0:
            scraper.start()
        start = clock.now()
        energy = _EnergyWindow(args, start, clock)
        if args.rate is not None:
            arrivals = Arrivals(args.rate, args.arrivals, args.burstiness)
            offsets = arrivals.offsets(seed, args.requests, args.duration)
            prompts = plan_prompts(args, len(offsets), seed)
            records = await client.open_loop(session, target, prompts, offsets, clock, replica)
            send_end = args.duration if args.duration is not None else float(offsets[-1])
        else:
            prompts = plan_prompts(args, args.requests or _POOL, seed)
            records = await client.closed_loop(session, target, prompts, args.concurrency, clock, replica,
                                               args.requests, args.duration)
            send_end = args.duration if args.duration is not None else max(r.scheduled for r in records) - start
        joules = await energy.finish()
        await monitor.stop()
        await scraper.stop()
    window = (start + args.warmup, start + max(send_end - args.cooldown, args.warmup))
    if args.requests is not None and args.warmup == 0 and args.cooldown == 0:
        window = (start, max(start + send_end, max(r.end for r in records)))  # a fixed count: all of it
    records = [replace(r, measured=bool(window[0] <= r.scheduled <= window[1])) for r in records]
    meta: dict[str, Any] = {"energy_joules": joules} if joules is not None else {}
    meta |= {"replica": replica, "model": model, "endpoints": list(args.endpoints), "api": args.api,
            "rate": args.rate, "concurrency": args.concurrency, "arrivals": args.arrivals,
            "burstiness": args.burstiness, "seed": args.seed, "slo": args.slo_bounds,
            "protocol_errors": target.protocol_errors}
    return RecordsFile(tuple(records), window, meta), monitor.delays, scraper.samples


class _EnergyWindow:
    """The GPUs' total-energy counter read at the measured window's ends (by duration: at warm-up's
    end and cool-down's start; by count without warm-up: at the start and once all requests ended)."""

    def __init__(self, args: argparse.Namespace, start: float, clock: client.Clock) -> None:
        self.readings: list[float | None] = []
        self.task: asyncio.Task | None = None
        fixed_count = args.requests is not None and args.warmup == 0 and args.cooldown == 0
        if args.no_energy or not (args.duration is not None or fixed_count):
            return
        ends = (start + args.warmup, start + args.duration - args.cooldown) if args.duration else (start, None)
        self.task = asyncio.create_task(self._read(ends, clock))

    async def _read(self, ends: tuple[float, float | None], clock: client.Clock) -> None:
        from ..serving.energy import total_energy_joules

        for end in ends:
            if end is None:
                return
            await asyncio.sleep(max(0.0, end - clock.now()))
            self.readings.append(await asyncio.to_thread(total_energy_joules))
            if self.readings[0] is None:
                return

    async def finish(self) -> float | None:
        """Joules over the window, or None (no GPU, no counter, not measurable for this load)."""
        if self.task is None:
            return None
        if len(self.readings) == 1 and self.readings[0] is not None:  # by count: the end is now
            from ..serving.energy import total_energy_joules

            await self.task
            self.readings.append(await asyncio.to_thread(total_energy_joules))
        else:
            await self.task
        if len(self.readings) == 2 and None not in self.readings:
            return self.readings[1] - self.readings[0]  # type: ignore[operator]
        return None


def main(argv: list[str] | None = None) -> int:
    """Run the load, validate the client, report the metrics; exit 3 when the client could not keep up."""
    args = parse_args(argv)
    replica = replica_index()
    try:
        data, delays, scrapes = asyncio.run(run(args, replica))
    except client.ServerError as e:
        print(f"llm_load: error: {e}", file=sys.stderr, flush=True)
        return 2
    arrivals = Arrivals(args.rate, args.arrivals, args.burstiness) if args.rate is not None else None
    checked = validate.check(data.records, data.window, delays, arrivals=arrivals, concurrency=args.concurrency,
                             max_lag=args.max_lag, send_window=data.window if args.duration is not None else None)
    data = replace(data, meta={**data.meta, "valid": checked.valid, "invalid_reasons": list(checked.reasons),
                               "client": checked.metrics})
    _write_outputs(args, replica, data, scrapes)
    for reason, count in data.meta["protocol_errors"].items():
        print(f"{count} answer(s) given up as protocol errors: {reason}", file=sys.stderr, flush=True)
    metrics = serving_metrics(data, args.slo_bounds)
    if data.meta.get("energy_joules") is not None:
        metrics |= energy_metrics(data.meta["energy_joules"], data.records, data.window)
    print(f"tokens counted from: {tokens_source(data.records)}", flush=True)
    if not checked.valid and not args.allow_invalid:
        print("INVALID run: the client could not keep up, so its latencies are not the server's: "
              + "; ".join(checked.reasons), file=sys.stderr, flush=True)
        kubebench.report(**checked.metrics)
        return INVALID_EXIT
    _print_summary(metrics)
    kubebench.report(**metrics, **checked.metrics)
    return 0


def _write_outputs(args: argparse.Namespace, replica: int, data: RecordsFile, scrapes: list[dict]) -> None:
    out = os.environ.get("KUBEBENCH_EXP_OUTPUT_PATH")
    path = args.records or (Path(out) / f"requests-{replica}.parquet" if out else None)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"records: {write_records(path, data)}", flush=True)
    if scrapes and out:
        with open(Path(out) / "server-metrics.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s) + "\n" for s in scrapes)


def _print_summary(metrics: dict[str, float]) -> None:
    for name in ("ttft", "tpot", "itl", "e2e"):
        if f"{name}_p50" in metrics:
            print(f"{name:>5}: p50 {metrics[f'{name}_p50'] * 1e3:8.2f} ms  p90 {metrics[f'{name}_p90'] * 1e3:8.2f} ms"
                  f"  p99 {metrics[f'{name}_p99'] * 1e3:8.2f} ms", flush=True)
    for name in ("request_throughput", "output_tokens_per_s", "goodput", "error_rate"):
        if name in metrics:
            print(f"{name}: {metrics[name]:.4g}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
