"""Other load tools' result files, read into kubebench's serving metric names (seconds, requests/s,
tokens/s): ``ttft_*``, ``tpot_*``, ``itl_*``, ``e2e_*`` with ``_p50/_p90/_p99/_mean``,
``request_throughput``, ``input_tokens_per_s``, ``output_tokens_per_s``, ``goodput``, ``error_rate``.
Pure: a parsed JSON document in, metrics out; what a file does not hold is left out, never invented.

- vLLM ``vllm bench serve --save-result`` (also ``benchmarks/benchmark_serving.py``): flat keys
  ``{mean,median,p<q>}_{ttft,tpot,itl,e2el}_ms``, ``request_throughput``, ``output_throughput`` …
- GuideLLM ``benchmarks.json``: ``benchmarks[i].metrics.<name>.successful.{mean,median,percentiles}``;
  its ``inter_token_latency_ms`` is vLLM's TPOT (per request, first token excluded) and is read as
  ``tpot``; its ``time_per_output_token_ms`` includes the first token and is not mapped.
- inference-perf ``summary_lifecycle_metrics.json`` (or ``stage_<n>_lifecycle_metrics.json``):
  ``successes.latency.<name>.{mean,median,p90,p99}`` in seconds, ``successes.throughput``.
- AIPerf ``profile_export_aiperf.json``: top-level ``<name>: {unit, avg, p50, p90, p99}``; its
  ``inter_token_latency`` is per request, first token excluded (``tpot``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import PostprocessError
from .summary_file import ScalarList

_STATS = {"p50": 50, "p90": 90, "p99": 99}
_UNIT_SECONDS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "seconds": 1.0, "us": 1e-6, "ns": 1e-9}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer of 400 digits
        return None
    return number if math.isfinite(number) else None


def _put(out: dict[str, float], name: str, value: Any, scale: float = 1.0) -> None:
    number = _number(value)
    if number is not None:
        out[name] = number * scale


def vllm(data: Mapping[str, Any]) -> dict[str, float]:
    """Metrics of a vLLM serving benchmark result (``--save-result``)."""
    if "request_throughput" not in data and "mean_ttft_ms" not in data:
        raise PostprocessError("not a vLLM serving result: no request_throughput or mean_ttft_ms")
    out: dict[str, float] = {}
    for theirs, ours in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2el", "e2e")):
        _put(out, f"{ours}_mean", data.get(f"mean_{theirs}_ms"), 1e-3)
        _put(out, f"{ours}_p50", data.get(f"median_{theirs}_ms", data.get(f"p50_{theirs}_ms")), 1e-3)
        for q in ("90", "99"):
            _put(out, f"{ours}_p{q}", data.get(f"p{q}_{theirs}_ms"), 1e-3)
    _put(out, "request_throughput", data.get("request_throughput"))
    _put(out, "output_tokens_per_s", data.get("output_throughput"))
    _put(out, "goodput", data.get("request_goodput"))
    duration = _number(data.get("duration"))
    if duration and _number(data.get("total_input_tokens")) is not None:
        out["input_tokens_per_s"] = float(data["total_input_tokens"]) / duration
    completed, failed = _number(data.get("completed")), _number(data.get("failed"))
    errors = data.get("errors")
    if failed is None and isinstance(errors, ScalarList):  # as summary_file reads a list of plain values
        failed = float(errors.truthy)
    elif failed is None and isinstance(errors, list):
        failed = float(sum(1 for e in errors if e))
    if completed is not None and failed is not None and completed + failed > 0:
        out["error_rate"] = failed / (completed + failed)
        out["requests_measured"] = completed + failed
    return out


def _distribution(out: dict[str, float], name: str, summary: Any, scale: float) -> None:
    """``mean``/``median``/``percentiles.pNN`` (GuideLLM) or ``pNN`` (inference-perf) of one metric."""
    if not isinstance(summary, Mapping):
        return
    _put(out, f"{name}_mean", summary.get("mean"), scale)
    nested = summary.get("percentiles")
    percentiles: Mapping[Any, Any] = nested if isinstance(nested, Mapping) else summary
    _put(out, f"{name}_p50", summary.get("median", percentiles.get("p50")), scale)
    for key in ("p90", "p99"):
        _put(out, f"{name}_{key}", percentiles.get(key), scale)


def guidellm(data: Mapping[str, Any], benchmark: int = 0) -> dict[str, float]:
    """Metrics of one benchmark (``benchmark``: its index) of a GuideLLM report."""
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise PostprocessError("not a GuideLLM report: no benchmarks list")
    try:
        metrics = benchmarks[benchmark]["metrics"]
    except (IndexError, KeyError, TypeError) as e:
        raise PostprocessError(f"GuideLLM report has no benchmark {benchmark} with metrics "
                               f"({len(benchmarks)} benchmarks)") from e

    def ok(name: str) -> Any:
        value = metrics.get(name)
        return value.get("successful") if isinstance(value, Mapping) else None

    out: dict[str, float] = {}
    _distribution(out, "ttft", ok("time_to_first_token_ms"), 1e-3)
    _distribution(out, "tpot", ok("inter_token_latency_ms"), 1e-3)
    _distribution(out, "e2e", ok("request_latency"), 1.0)
    for ours, theirs in (("request_throughput", "requests_per_second"), ("output_tokens_per_s", "output_tokens_per_second"),
                         ("input_tokens_per_s", "prompt_tokens_per_second")):
        summary = ok(theirs)
        if isinstance(summary, Mapping):
            _put(out, ours, summary.get("mean"))
    totals = metrics.get("request_totals") or {}
    if isinstance(totals, Mapping) and _number(totals.get("total")):
        out["error_rate"] = float(totals.get("errored") or 0) / float(totals["total"])
        out["requests_measured"] = float(totals["total"])
    return out


def inference_perf(data: Mapping[str, Any]) -> dict[str, float]:
    """Metrics of an inference-perf lifecycle summary."""
    successes = data.get("successes")
    if not isinstance(successes, Mapping) or "latency" not in successes:
        raise PostprocessError("not an inference-perf lifecycle summary: no successes.latency")
    latency = successes.get("latency") or {}
    out: dict[str, float] = {}
    for theirs, ours in (("time_to_first_token", "ttft"), ("time_per_output_token", "tpot"),
                         ("inter_token_latency", "itl"), ("request_latency", "e2e")):
        _distribution(out, ours, latency.get(theirs), 1.0)
    throughput = successes.get("throughput") or {}
    _put(out, "request_throughput", throughput.get("requests_per_sec"))
    _put(out, "input_tokens_per_s", throughput.get("input_tokens_per_sec"))
    _put(out, "output_tokens_per_s", throughput.get("output_tokens_per_sec"))
    _put(out, "goodput", (successes.get("goodput_metrics") or {}).get("request_goodput"))
    good, bad = _number(successes.get("count")), _number((data.get("failures") or {}).get("count"))
    if good is not None and bad is not None and good + bad > 0:
        out["error_rate"] = bad / (good + bad)
        out["requests_measured"] = good + bad
    load = data.get("load_summary") or {}
    _put(out, "request_rate_target", load.get("requested_rate"))
    _put(out, "request_rate_achieved", load.get("achieved_rate"))
    return out


def aiperf(data: Mapping[str, Any]) -> dict[str, float]:
    """Metrics of an AIPerf ``profile_export_aiperf.json``."""
    if not isinstance(data.get("time_to_first_token") or data.get("request_latency"), Mapping):
        raise PostprocessError("not an AIPerf profile export: no time_to_first_token or request_latency")
    out: dict[str, float] = {}
    for theirs, ours in (("time_to_first_token", "ttft"), ("inter_token_latency", "tpot"),
                         ("request_latency", "e2e")):
        metric = data.get(theirs)
        if not isinstance(metric, Mapping):
            continue
        scale = _UNIT_SECONDS.get(str(metric.get("unit", "ms")).lower())
        if scale is None:
            raise PostprocessError(f"AIPerf {theirs}: unknown unit {metric.get('unit')!r}")
        _put(out, f"{ours}_mean", metric.get("avg"), scale)
        for key in _STATS:
            _put(out, f"{ours}_{key}", metric.get(key), scale)
    for ours, theirs in (("request_throughput", "request_throughput"), ("output_tokens_per_s", "output_token_throughput"),
                         ("goodput", "goodput")):
        metric = data.get(theirs)
        if isinstance(metric, Mapping):
            _put(out, ours, metric.get("avg"))
    count = _number((data.get("request_count") or {}).get("avg")) if isinstance(data.get("request_count"), Mapping) else None
    errors = data.get("error_request_count")
    errors = _number(errors.get("avg")) if isinstance(errors, Mapping) else _number(errors)
    if count:
        out["error_rate"] = (errors or 0.0) / (count + (errors or 0.0))
    return out


def refuse_bad_values(metrics: Mapping[str, float]) -> None:
    """PostprocessError naming the metrics that are not finite or are negative: every metric read from a
    load tool is a latency, a rate, a count or a fraction, and none of them is below 0 (a tool's bug, or a
    hostile server's answer, must not become a result: review 2026-12-02 N7, N21)."""
    bad = [f"{name}={value:g}" for name, value in metrics.items() if not (math.isfinite(value) and value >= 0)]
    if bad:
        raise PostprocessError(f"refused: {', '.join(sorted(bad))} (latencies, rates, counts and fractions are "
                               "finite numbers ≥ 0)")


PARSERS: dict[str, Callable[..., dict[str, float]]] = {"vllm-bench": vllm, "guidellm": guidellm, "inference-perf": inference_perf, "aiperf": aiperf}
