"""N21 (review 2026-12-02): a load tool's result file cost about 5× its size in memory (200 MB → 1.04 GB
in the runner), and negative throughputs were stored. The file is now read as a stream (per-request
lists counted, not built), and a negative or non-finite value fails the run naming it."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from kubebench.collect.context import RunContext
from kubebench.collect.metrics import collect
from kubebench.paths import RunPaths
from kubebench.spec.model import BenchmarkSpec


def postprocess(tmp_path: Path, kind: str, name: str, text: str | None) -> tuple[dict, str]:
    """The metrics and error of post-processing ``text`` as output/``name`` (None: already written)."""
    paths = RunPaths(tmp_path, tmp_path / "data", "exp", "run1")
    for folder in (paths.output, paths.result):
        Path(folder).mkdir(parents=True, exist_ok=True)
    if text is not None:
        (Path(paths.output) / name).write_text(text)
    spec = BenchmarkSpec.model_validate({"name": "x", "job": {"command": ["x"]}, "postprocess": [{"kind": kind}]})
    collected = collect(RunContext("exp", "t", "run1", 0, {}, paths, tmp_path), spec.postprocess, [])
    return collected.metrics, collected.error


def test_a_result_file_of_per_request_lists_costs_a_fraction_of_its_size(tmp_path: Path) -> None:
    """The review's `huge` mode, smaller: 4 MB of per-request lists (json.loads held ~5× the file). Few long
    strings keep the test fast: memory is the parser's buffer and one string, whatever the file's size."""
    import kubebench.collect.serving  # noqa: F401  (imported before memory is counted)
    import kubebench.collect.summary_file  # noqa: F401

    ttfts = json.dumps([0.5] * 10_000)
    texts = json.dumps(["x" * 20_000] * 400)
    text = (f'{{"request_throughput": 2.5, "completed": 9, "failed": 1, "ttfts": {ttfts}, '
            f'"generated_texts": {texts}}}')
    output = tmp_path / "exp" / "run1" / "output"  # written before memory is counted
    output.mkdir(parents=True)
    (output / "result.json").write_text(text)
    tracemalloc.start()
    try:
        metrics, error = postprocess(tmp_path, "vllm-bench", "result.json", None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error == "" and metrics["request_throughput"] == 2.5 and metrics["error_rate"] == 0.1
    assert peak < len(text) / 10, f"peak {peak:,} bytes for a file of {len(text):,}"


def test_vllm_errors_are_counted_from_the_streamed_list(tmp_path: Path) -> None:
    text = json.dumps({"request_throughput": 1.0, "completed": 3, "errors": ["", "timeout", "", "reset"]})
    metrics, error = postprocess(tmp_path, "vllm-bench", "result.json", text)
    assert error == "" and metrics["error_rate"] == 2 / 5


@pytest.mark.parametrize("data, named", [
    ({"request_throughput": 1, "output_throughput": -3}, "output_tokens_per_s=-3"),
    ({"request_throughput": 1, "completed": 5, "failed": -4}, "error_rate=-4"),
    ({"request_throughput": 1, "duration": 5e-324, "total_input_tokens": 1e308}, "input_tokens_per_s=inf"),
])
def test_negative_or_infinite_values_fail_the_run_naming_them(tmp_path: Path, data: dict, named: str) -> None:
    metrics, error = postprocess(tmp_path, "vllm-bench", "result.json", json.dumps(data))
    assert named in error and error.startswith("post-processor 'vllm-bench' failed: result.json: refused: ")


def test_aiperf_negative_percentile_is_refused(tmp_path: Path) -> None:
    data = {"time_to_first_token": {"unit": "ms", "avg": 10.0, "p50": -1}, "request_count": {"avg": 5}}
    _, error = postprocess(tmp_path, "aiperf", "profile_export_aiperf.json", json.dumps(data))
    assert "ttft_p50=-0.001" in error


@pytest.mark.parametrize("text, message", [
    ('{"request_throughput": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested more than 64 levels"),
    ("{" + ",".join(f'"k{i}": {i}' for i in range(250_000)) + ', "request_throughput": 1}', "more than 200,000 values"),
    ('{"request_throughput": 1, "x": [1, 2', "not JSON"),
    ("[1, 2]", "expected a JSON object"),
])
def test_a_file_that_is_no_summary_fails_the_run_clearly(tmp_path: Path, text: str, message: str) -> None:
    _, error = postprocess(tmp_path, "vllm-bench", "result.json", text)
    assert message in error


def test_guidellm_benchmarks_are_read_past_their_request_samples(tmp_path: Path) -> None:
    requests = [{"prompt": "p" * 50, "output_tokens": i} for i in range(5_000)]
    metric = {"successful": {"mean": 0.2, "median": 0.19, "percentiles": {"p90": 0.3, "p99": 0.4}}}
    benchmarks = [{"requests": {"successful": requests}, "metrics": {"time_to_first_token_ms": metric,
                                                                      "request_totals": {"total": 10, "errored": 1}}}]
    metrics, error = postprocess(tmp_path, "guidellm", "benchmarks.json", json.dumps({"benchmarks": benchmarks}))
    assert error == "" and metrics["ttft_p99"] == pytest.approx(0.0004) and metrics["error_rate"] == 0.1
