"""Other load tools' result files read into kubebench's metric names, through the post-processor
registry as a spec names them; and kubebench's own records merged from several replicas."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kubebench.collect.context import RunContext
from kubebench.collect.metrics import collect
from kubebench.paths import RunPaths
from kubebench.serving.records import RecordsFile, RequestRecord, write_records
from kubebench.spec.model import BenchmarkSpec

# Shapes as each tool writes them (fields kubebench reads, plus some it ignores).
VLLM = {"date": "20261130-101010", "backend": "vllm", "model_id": "m", "request_rate": 4.0, "duration": 50.0,
        "completed": 198, "failed": 2, "total_input_tokens": 25344, "total_output_tokens": 25000,
        "request_throughput": 3.96, "request_goodput": 3.5, "output_throughput": 500.0, "total_token_throughput": 1006.9,
        "mean_ttft_ms": 120.0, "median_ttft_ms": 110.0, "std_ttft_ms": 20.0, "p90_ttft_ms": 150.0, "p99_ttft_ms": 210.0,
        "mean_tpot_ms": 20.0, "median_tpot_ms": 19.0, "p99_tpot_ms": 30.0, "mean_itl_ms": 20.5, "median_itl_ms": 18.0,
        "p99_itl_ms": 40.0, "mean_e2el_ms": 2600.0, "median_e2el_ms": 2500.0, "p99_e2el_ms": 4000.0,
        "ttfts": [0.1, 0.12], "itls": [[0.02], [0.019]], "errors": ["", ""]}


def _dist(mean: float, median: float, p90: float, p99: float) -> dict:
    percentiles = {"p001": 0, "p01": 0, "p05": 0, "p10": 0, "p25": 0, "p50": median, "p75": 0, "p90": p90,
                   "p95": 0, "p99": p99, "p999": 0}
    return {"successful": {"mean": mean, "median": median, "mode": median, "variance": 1, "std_dev": 1, "min": 0,
                           "max": 1, "count": 100, "total_sum": 1, "percentiles": percentiles},
            "errored": None, "incomplete": None, "total": None}


GUIDELLM = {"benchmarks": [{"type_": "generative_benchmark", "metrics": {
    "requests_per_second": _dist(3.9, 3.9, 4, 4),
    "request_latency": _dist(2.6, 2.5, 3.5, 4.0),
    "time_to_first_token_ms": _dist(120, 110, 150, 210),
    "time_per_output_token_ms": _dist(21, 20, 25, 31),
    "inter_token_latency_ms": _dist(20, 19, 25, 30),
    "output_tokens_per_second": _dist(500, 500, 500, 500),
    "request_totals": {"successful": 99, "errored": 1, "incomplete": 0, "total": 100},
}}]}

INFERENCE_PERF = {
    "benchmark_time_seconds": 50.0,
    "load_summary": {"count": 200, "send_duration": 49.8, "requested_rate": 4.0, "achieved_rate": 4.01},
    "successes": {"count": 196, "latency": {
        "request_latency": {"mean": 2.6, "min": 1, "max": 5, "median": 2.5, "p90": 3.5, "p99": 4.0},
        "normalized_time_per_output_token": {"mean": 0.021, "median": 0.02},
        "time_per_output_token": {"mean": 0.020, "min": 0.01, "max": 0.05, "median": 0.019, "p90": 0.025, "p99": 0.030},
        "time_to_first_token": {"mean": 0.12, "min": 0.05, "max": 0.3, "median": 0.11, "p90": 0.15, "p99": 0.21},
        "inter_token_latency": {"mean": 0.0205, "median": 0.018, "p90": 0.03, "p99": 0.04}},
        "throughput": {"input_tokens_per_sec": 506.9, "output_tokens_per_sec": 500.0, "total_tokens_per_sec": 1006.9,
                       "requests_per_sec": 3.92}},
    "failures": {"count": 4, "request_latency": None},
}

AIPERF = {
    "request_throughput": {"unit": "requests/sec", "avg": 3.96},
    "request_latency": {"unit": "ms", "avg": 2600.0, "p50": 2500.0, "p90": 3500.0, "p99": 4000.0, "min": 1, "max": 5},
    "time_to_first_token": {"unit": "ms", "avg": 120.0, "p50": 110.0, "p90": 150.0, "p99": 210.0},
    "inter_token_latency": {"unit": "ms", "avg": 20.0, "p50": 19.0, "p90": 25.0, "p99": 30.0},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 500.0},
    "request_count": {"unit": "requests", "avg": 198.0},
    "error_request_count": {"unit": "requests", "avg": 2.0},
    "input_config": {"loadgen": {"concurrency": 8}},
}

EXPECTED = {"ttft_p50": 0.11, "ttft_p99": 0.21, "ttft_mean": 0.12, "tpot_p50": 0.019, "tpot_p99": 0.030,
            "e2e_p50": 2.5, "e2e_p99": 4.0, "output_tokens_per_s": 500.0}


def context(tmp_path: Path) -> RunContext:
    paths = RunPaths(tmp_path, tmp_path / "data", "exp", "run1")
    for folder in (paths.output, paths.result):
        Path(folder).mkdir(parents=True, exist_ok=True)
    return RunContext("exp", "t", "run1", 0, {}, paths, tmp_path)


def postprocessed(tmp_path: Path, config: dict, files: dict[str, object]) -> tuple[dict, str]:
    ctx = context(tmp_path)
    for name, data in files.items():
        path = ctx.output / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    spec = BenchmarkSpec.model_validate({"name": "x", "job": {"command": ["x"]}, "postprocess": [config]})
    collected = collect(ctx, spec.postprocess, [])
    return collected.metrics, collected.error


@pytest.mark.parametrize("kind, files", [
    ("vllm-bench", {"vllm-4qps.json": VLLM}),
    ("guidellm", {"benchmarks.json": GUIDELLM}),
    ("inference-perf", {"summary_lifecycle_metrics.json": INFERENCE_PERF}),
    ("aiperf", {"artifacts/m-openai-chat-concurrency8/profile_export_aiperf.json": AIPERF}),
])
def test_each_tool_lands_in_the_same_metric_names(tmp_path: Path, kind: str, files: dict) -> None:
    metrics, error = postprocessed(tmp_path, {"kind": kind}, files)
    assert error == ""
    for name, value in EXPECTED.items():
        assert metrics[name] == pytest.approx(value), name
    assert 0 < metrics["error_rate"] < 0.03


def test_vllm_throughputs_and_goodput(tmp_path: Path) -> None:
    metrics, _ = postprocessed(tmp_path, {"kind": "vllm-bench", "file": "r.json"}, {"r.json": VLLM})
    assert metrics["request_throughput"] == 3.96 and metrics["goodput"] == 3.5
    assert metrics["input_tokens_per_s"] == pytest.approx(25344 / 50.0)
    assert metrics["error_rate"] == pytest.approx(0.01) and metrics["itl_p99"] == pytest.approx(0.04)


def test_inference_perf_rates(tmp_path: Path) -> None:
    metrics, _ = postprocessed(tmp_path, {"kind": "inference-perf"}, {"summary_lifecycle_metrics.json": INFERENCE_PERF})
    assert metrics["request_rate_achieved"] == 4.01 and metrics["error_rate"] == pytest.approx(0.02)


@pytest.mark.parametrize("kind, files, message", [
    ("guidellm", {}, "no benchmarks.json in output/"),
    ("guidellm", {"benchmarks.json": VLLM}, "benchmarks.json: not a GuideLLM report"),
    ("vllm-bench", {"x.json": "{oops"}, "x.json: not JSON"),
    ("aiperf", {"a/profile_export_aiperf.json": {"time_to_first_token": {"unit": "fortnights", "avg": 1}}},
     "unknown unit 'fortnights'"),
    ("guidellm", {"benchmarks.json": {"benchmarks": [{"metrics": {}}]}}, "no metrics kubebench knows"),
])
def test_a_missing_or_foreign_file_fails_the_run_naming_it(tmp_path: Path, kind: str, files: dict, message: str) -> None:
    _, error = postprocessed(tmp_path, {"kind": kind}, files)
    assert error.startswith(f"post-processor {kind!r} failed") and message in error


def _records(replica: int, ttft: float, valid: bool = True) -> RecordsFile:
    records = tuple(RequestRecord(replica, i, float(i), float(i), (i + ttft, i + ttft + 0.01), i + ttft + 0.01, 5, 2,
                                  "usage") for i in range(10))
    return RecordsFile(records, (0.0, 10.0), {"valid": valid, "invalid_reasons": [] if valid else ["late"]})


def test_llm_requests_merges_replicas_exactly(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    write_records(ctx.output / "requests-0.parquet", _records(0, 0.1))
    write_records(ctx.output / "requests-1.jsonl", _records(1, 0.3))
    metrics, error = postprocessed(tmp_path, {"kind": "llm-requests", "slo": "ttft=0.2s"}, {})
    assert error == ""
    assert metrics["load_replicas"] == 2 and metrics["requests_measured"] == 20
    assert metrics["ttft_p50"] == pytest.approx(0.2) and metrics["ttft_p99"] == pytest.approx(0.3)
    assert metrics["goodput_ratio"] == pytest.approx(0.5)
    assert json.loads((ctx.result / "result.json").read_text())["tokens_counted_from"] == "usage"


def test_llm_requests_fails_a_run_whose_client_lagged(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    write_records(ctx.output / "requests-0.jsonl", _records(0, 0.1, valid=False))
    _, error = postprocessed(tmp_path, {"kind": "llm-requests"}, {})
    assert "could not keep up" in error and "requests-0.jsonl: late" in error


def test_llm_requests_without_records_says_so(tmp_path: Path) -> None:
    _, error = postprocessed(tmp_path, {"kind": "llm-requests"}, {})
    assert "no requests-*.parquet" in error


def test_a_bad_slo_is_a_spec_error() -> None:
    with pytest.raises(ValueError, match="SLO term"):
        BenchmarkSpec.model_validate({"name": "x", "job": {"command": ["x"]},
                                      "postprocess": [{"kind": "llm-requests", "slo": "speed=1s"}]})


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to_outside(path: Path) -> None:
    outside = path.parent.parent.parent / f"outside{path.suffix}"
    if path.name.startswith("requests-"):
        write_records(outside, _records(0, 0.1))
    else:
        outside.write_text(json.dumps(VLLM))
    path.symlink_to(outside)


def _too_large(path: Path) -> None:
    if path.name.startswith("requests-"):
        write_records(path, _records(0, 0.1))
    else:
        path.write_text(json.dumps(VLLM))


# What a workload leaves where a serving post-processor reads: a FIFO (opening it waited for a writer
# forever, the run stayed `running`), a link out of the run (followed), a file past the size limit (read
# whole into memory). Each fails the run, naming the file; none hangs (the timeout fails the test).
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind, where, make, message", [
    ("llm-requests", "output/requests-0.jsonl", _fifo, "output/requests-0.jsonl is a FIFO, not a regular file"),
    ("llm-requests", "result/result.json", _fifo, "result/result.json is a FIFO, not a regular file"),
    ("llm-requests", "output/requests-0.parquet", _link_to_outside,
     "output/requests-0.parquet is a symbolic link, not a regular file"),
    ("llm-requests", "output/requests-0.jsonl", _too_large, "output/requests-0.jsonl is larger than 100 bytes"),
    ("llm-requests", "output/requests-0.parquet", _too_large, "output/requests-0.parquet is larger than 100 bytes"),
    ("vllm-bench", "output/r.json", _link_to_outside, "output/r.json is a symbolic link, not a regular file"),
    ("vllm-bench", "output/r.json", _too_large, "output/r.json is larger than 100 bytes"),
])
def test_what_a_workload_leaves_in_place_of_a_serving_file_fails_the_run_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, where: str, make, message: str) -> None:
    ctx = context(tmp_path)
    if where.startswith("result/"):
        write_records(ctx.output / "requests-0.jsonl", _records(0, 0.1))
    make(Path(ctx.output).parent / where)
    if make is _too_large:
        monkeypatch.setenv("KUBEBENCH_MAX_SERVING_FILE_BYTES", "100")
    config = {"kind": kind, "file": "r.json"} if kind == "vllm-bench" else {"kind": kind}
    _, error = postprocessed(tmp_path, config, {})
    assert error.startswith(f"post-processor {kind!r} failed") and message in error, error
