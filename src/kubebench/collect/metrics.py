"""Read metrics from a run: ``result/result.json``, post-processors and the metric line protocol."""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .. import METRIC_LINE_PREFIX, METRIC_NAME as METRIC_NAME_PATTERN, limits, registry
from ..errors import PostprocessError
from ..output_files import open_output_text, read_output
from ..rules import replica_rank
from ..spec.base import PluginConfig
from .context import RunContext
from .values import to_number

if TYPE_CHECKING:
    from ..spec.model import MetricSpec

METRIC_NAME = re.compile(METRIC_NAME_PATTERN)
_PAIR = re.compile(rf"({METRIC_NAME_PATTERN})=(\S+)")


@dataclass(frozen=True)
class Collected:
    """Metrics of a run, its non-numeric result fields, and why collection failed (if it did)."""

    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)
    error: str = ""


def parse_metric_lines(lines: Iterable[str]) -> dict[str, float]:
    """Values of ``KUBEBENCH_METRIC name=value …`` lines; the last value of a name wins."""
    found: dict[str, float] = {}
    for line in lines:
        start = line.find(METRIC_LINE_PREFIX)
        if start < 0:
            continue
        for name, raw in _PAIR.findall(line[start + len(METRIC_LINE_PREFIX):]):
            value = to_number(raw)
            if value is not None:
                found[name] = value
    return found


def replica_logs(output: Path) -> list[Path]:
    """The replicas' logs (``<type>-<index>.log``) in rank order: master/chief/launcher first.

    Only regular files: a folder or a FIFO a workload named ``*.log`` is no log (opening a FIFO
    would wait for a writer that never comes), nor is a link (it may lead out of the run folder)."""

    def order(path: Path) -> tuple[int, int, str]:
        rtype, _, index = path.stem.rpartition("-")
        return replica_rank(rtype), int(index) if index.isdigit() else 0, path.name

    return sorted((p for p in output.glob("*.log") if stat.S_ISREG(p.lstat().st_mode)), key=order)


def bounded_lines(path: Path) -> Iterator[str]:
    """The lines of a text file; a line longer than ``limits.LOG_LINE_CHARS`` comes in pieces of
    that size, so that a workload printing a gigabyte without a newline costs no gigabyte here."""
    limit = limits.LOG_LINE_CHARS.value()
    with open_output_text(path) as f:
        while line := f.readline(limit):
            yield line


def metrics_from_logs(output: Path) -> dict[str, float]:
    """Protocol lines of all replica logs; a name reported by several replicas keeps rank 0's value."""
    found: dict[str, float] = {}
    for log in reversed(replica_logs(output)):
        found.update(parse_metric_lines(bounded_lines(log)))
    return found


def read_result_json(path: Path) -> tuple[dict[str, float], dict[str, str]]:
    """Numbers and other fields of a flat ``result.json`` object; absent file → empty.

    A field is a metric when its value is a finite number (not a boolean) and its key is a metric
    name; any other field is info, its text cut to ``limits.INFO_CHARS``. A file larger than
    ``limits.RESULT_BYTES``, or with more fields than ``limits.METRICS``, fails the run.
    """
    if not path.exists():
        return {}, {}
    try:
        data = json.loads(read_output(path, limits.RESULT_BYTES).decode("utf-8"))
    except (OSError, ValueError) as e:
        raise PostprocessError(f"result/result.json is not valid JSON: {e}") from e
    except RecursionError as e:
        raise PostprocessError("result/result.json is nested too deeply; it must hold one flat JSON object") from e
    if not isinstance(data, dict):
        raise PostprocessError("result/result.json must hold one flat JSON object")
    _check_count(len(data), "result/result.json has {count:,} fields")
    numbers, info = {}, {}
    for key, value in data.items():
        number = to_number(value)
        if number is not None and METRIC_NAME.fullmatch(key):
            numbers[key] = number
        else:
            info[key] = cut(value if isinstance(value, str) else json.dumps(value))
    return numbers, info


def cut(text: str) -> str:
    """An info value cut to ``limits.INFO_CHARS`` characters, saying how much was cut."""
    limit = limits.INFO_CHARS.value()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters not kept)"


def _check_count(count: int, what: str) -> None:
    limit = limits.METRICS.value()
    if count > limit:
        raise PostprocessError(f"{what.format(count=count)}, more than the limit of {limit:,} metrics per run "
                               f"({limits.METRICS.env} changes it)")


def collect(ctx: RunContext, postprocess: Sequence[PluginConfig], declared: Sequence[MetricSpec]) -> Collected:
    """All metrics of a finished run. Later sources override earlier ones: steady-state metrics of
    ``output/step_times.json``, protocol lines, post-processors in order, then
    ``result/result.json`` (the job's or a post-processor's).

    A failure is the run's, in one stable phrase: ``post-processor 'regex' failed: …``,
    ``metric 'x' missing from the run's outputs``, or what is wrong with an output file.
    """
    from .steady import steady_state_metrics

    try:
        metrics, info = steady_state_metrics(ctx.output)
        metrics.update(metrics_from_logs(ctx.output))
        for config in postprocess:
            metrics.update(_postprocess(config, ctx))
        numbers, result_info = read_result_json(ctx.result / "result.json")
    except PostprocessError as e:
        return Collected(error=str(e))
    except OSError as e:  # a log that cannot be read back (storage gone, I/O error)
        return Collected(error=f"cannot read the run's outputs: {e.strerror or e}")
    metrics.update(numbers)
    info.update(result_info)
    try:
        _check_count(len(metrics), "the run reported {count:,} metrics")
        _check_count(len(info), "the run reported {count:,} info fields")
    except PostprocessError as e:
        return Collected(error=str(e))
    missing = [m.name for m in declared if m.required and m.name not in metrics]
    return Collected(metrics, info, missing_reason(missing))


def _postprocess(config: PluginConfig, ctx: RunContext) -> dict[str, float]:
    processor = registry.load("postprocessors", config.kind)(config)
    try:
        return processor.run(ctx)
    except PostprocessError as e:
        message = str(e).removeprefix(f"{config.kind}: ")  # a plugin naming itself: named once
        raise PostprocessError(f"post-processor {config.kind!r} failed: {message}") from e
    except Exception as e:  # a bug of a plugin is still the run's failure, not the experiment's
        raise PostprocessError(f"post-processor {config.kind!r} failed: {type(e).__name__}: {e}") from e


def missing_reason(missing: Sequence[str]) -> str:
    """``metric 'x' missing from the run's outputs`` (several: ``metrics 'x', 'y' missing …``); empty if none."""
    if not missing:
        return ""
    names = ", ".join(repr(name) for name in missing)
    return f"metric{'s' if len(missing) > 1 else ''} {names} missing from the run's outputs"
