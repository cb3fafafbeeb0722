"""Post-processors of serving runs (import-light: the spec model imports every plugin's options).

- ``llm-requests``: the metrics of every load-generator replica's records together (exact
  percentiles over all requests, throughput over the window all replicas measured), and the run
  failed with the reason when a replica's client could not keep up.
- ``vllm-bench``, ``guidellm``, ``inference-perf``, ``aiperf``: another load tool's result file in
  ``output/`` read into the same metric names, so that a user keeps their tool and gets kubebench's
  repeats, statistics, store and dashboard.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import field_validator

from .. import limits
from ..errors import PostprocessError
from ..output_files import read_output
from ..serving.slo import parse_request_slo
from ..spec.base import PluginConfig


class RequestsConfig(PluginConfig):
    """``{kind: llm-requests, slo: "ttft=2s,tpot=100ms", require_valid: true}``."""

    kind: Literal["llm-requests"] = "llm-requests"
    slo: str = ""
    require_valid: bool = True

    @field_validator("slo")
    @classmethod
    def _slo(cls, slo: str) -> str:
        parse_request_slo(slo)  # a ValueError names the bad term
        return slo


class RequestsPostprocessor:
    """Merge every replica's ``requests-*.parquet`` / ``.jsonl`` of ``output/`` into one run's metrics."""

    Config = RequestsConfig

    def __init__(self, config: RequestsConfig) -> None:
        self.config = config

    def run(self, ctx) -> dict[str, float]:
        """The merged metrics; PostprocessError when there are no records or a client lagged."""
        from ..serving.metrics import serving_metrics, tokens_source
        from ..serving.records import find_records, merge, read_records

        paths = find_records(ctx.output)
        if not paths:
            raise PostprocessError("no requests-*.parquet or requests-*.jsonl in output/ (is the load generator "
                                   "kubebench.workloads.llm_load?)")
        files = [read_records(p) for p in paths]
        invalid = [f"{p.name}: " + "; ".join(f.meta.get("invalid_reasons") or ["invalid"])
                   for p, f in zip(paths, files) if f.meta.get("valid") is False]
        if invalid and self.config.require_valid:
            raise PostprocessError("the load generator could not keep up, so its latencies are not the server's: "
                                   + " | ".join(invalid))
        merged = merge(files)
        slo = parse_request_slo(self.config.slo) if self.config.slo else (files[0].meta.get("slo") or None)
        metrics = serving_metrics(merged, slo)
        metrics["load_replicas"] = float(len(files))
        _write_info(ctx.result, {"tokens_counted_from": tokens_source(merged.records)})
        return metrics


def _write_info(folder: Path, info: dict[str, str]) -> None:
    """Add text fields to ``result/result.json`` (kept as the run's info)."""
    path = folder / "result.json"
    data = json.loads(read_output(path, limits.RESULT_BYTES).decode("utf-8")) if path.exists() else {}
    data.update(info)
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


#: Where each tool writes its result (a glob inside output/), when ``file`` is not given.
DEFAULT_FILES = {
    "vllm-bench": "*.json",
    "guidellm": "benchmarks.json",
    "inference-perf": "summary_lifecycle_metrics.json",
    "aiperf": "**/profile_export_aiperf.json",
}


class InteropConfig(PluginConfig):
    """Options shared by the readers of other tools' files: ``file`` (a glob inside ``output/``) and,
    for GuideLLM, which ``benchmark`` of the report."""

    file: str = ""
    benchmark: int = 0

    @field_validator("file")
    @classmethod
    def _inside_output(cls, file: str) -> str:
        path = PurePosixPath(file)
        if file and (path.is_absolute() or ".." in path.parts):
            raise ValueError(f"file {file!r} must be a relative path (or glob) inside the run's output/ folder")
        return file


class VllmBenchConfig(InteropConfig):
    """``{kind: vllm-bench, file: result.json}``: a ``vllm bench serve --save-result`` file."""

    kind: Literal["vllm-bench"] = "vllm-bench"


class GuidellmConfig(InteropConfig):
    """``{kind: guidellm, file: benchmarks.json, benchmark: 0}``."""

    kind: Literal["guidellm"] = "guidellm"


class InferencePerfConfig(InteropConfig):
    """``{kind: inference-perf, file: summary_lifecycle_metrics.json}``."""

    kind: Literal["inference-perf"] = "inference-perf"


class AiperfConfig(InteropConfig):
    """``{kind: aiperf, file: "**/profile_export_aiperf.json"}``."""

    kind: Literal["aiperf"] = "aiperf"


class InteropPostprocessor:
    """Reads one tool's result file (the newest one matching ``file``) into serving metrics."""

    Config = InteropConfig

    def __init__(self, config: InteropConfig) -> None:
        self.config = config

    def run(self, ctx) -> dict[str, float]:
        """Parse the file; a missing or foreign file is a PostprocessError naming it."""
        from . import interop
        from .summary_file import load_summary

        pattern = self.config.file or DEFAULT_FILES[self.config.kind]
        found = sorted((p for p in ctx.output.glob(pattern) if p.is_file() and not p.name.startswith("requests-")),
                       key=lambda p: p.stat().st_mtime)
        if not found:
            raise PostprocessError(f"no {pattern} in output/ (where the {self.config.kind} tool must write its result)")
        path = found[-1]
        data = load_summary(path, limits.SERVING_FILE_BYTES)  # streamed: memory bounded, not the file's size
        parse = interop.PARSERS[self.config.kind]
        try:
            metrics = parse(data, self.config.benchmark) if self.config.kind == "guidellm" else parse(data)
            interop.refuse_bad_values(metrics)
        except PostprocessError as e:
            raise PostprocessError(f"{path.name}: {e}") from e
        if not metrics:
            raise PostprocessError(f"{path.name}: no metrics kubebench knows in it")
        return metrics


class VllmBenchPostprocessor(InteropPostprocessor):
    """vLLM's serving benchmark result."""

    Config = VllmBenchConfig


class GuidellmPostprocessor(InteropPostprocessor):
    """GuideLLM's report."""

    Config = GuidellmConfig


class InferencePerfPostprocessor(InteropPostprocessor):
    """inference-perf's lifecycle summary."""

    Config = InferencePerfConfig


class AiperfPostprocessor(InteropPostprocessor):
    """AIPerf's aggregate export."""

    Config = AiperfConfig
