"""The ``mllog`` post-processor: metrics from MLPerf ``:::MLLOG`` lines in a replica's log.

``{kind: mllog}`` reads the first replica log (rank order) that holds such lines, or ``file:``.
Times are the events' ``time_ms``. Metrics, in seconds where they are times:

- ``time_to_train``: ``run_start`` → ``run_stop``, only when ``run_stop`` says ``status: success``
  (MLPerf scores only successful runs, so a benchmark requiring it fails the others);
- ``run_duration``: the same interval, whatever the status; ``run_success``: 1 or 0;
- ``time_to_accuracy``: ``run_start`` → the first ``eval_accuracy`` ≥ ``target`` (or, without
  ``target``, → the last ``eval_accuracy`` of a successful run, the one that reached the goal);
- ``eval_accuracy`` (last), ``best_eval_accuracy``, ``evals``, ``epochs`` (largest ``epoch_num``),
  ``init_time`` (first ``init_start`` → ``init_stop``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, Optional

from pydantic import field_validator

from ..errors import PostprocessError
from ..spec.base import PluginConfig
from .context import RunContext
from .metrics import bounded_lines, replica_logs
from .values import to_number

TOKEN = ":::MLLOG "


class MllogConfig(PluginConfig):
    """``{kind: mllog, file: master-0.log, target: 0.759, accuracy_key: eval_accuracy}``."""

    kind: Literal["mllog"] = "mllog"
    #: A file of ``output/``; default: the first replica log that has ``:::MLLOG`` lines.
    file: Optional[str] = None
    #: Accuracy that defines ``time_to_accuracy``; default: the run's own (``run_stop`` success).
    target: Optional[float] = None
    accuracy_key: str = "eval_accuracy"

    @field_validator("file")
    @classmethod
    def _inside_output(cls, file: Optional[str]) -> Optional[str]:
        if file is not None:
            path = PurePosixPath(file)
            if path.is_absolute() or ".." in path.parts or not file.strip():
                raise ValueError(f"file {file!r} must be a relative path inside the run's output/ folder")
        return file


@dataclass(frozen=True)
class Event:
    """One ``:::MLLOG`` record."""

    time_s: float
    key: str
    value: object
    metadata: dict


def parse_events(lines) -> list[Event]:
    """The records of ``:::MLLOG`` lines (anything before the token, e.g. a rank prefix, is ignored;
    lines that are not valid records — say, two ranks' output interleaved — are skipped).
    """
    events = []
    for line in lines:
        start = line.find(TOKEN)
        if start < 0:
            continue
        try:
            record = json.loads(line[start + len(TOKEN):])
            events.append(Event(float(record["time_ms"]) / 1000.0, str(record["key"]), record.get("value"),
                                record.get("metadata") or {}))
        except (ValueError, KeyError, TypeError):
            continue
    return events


def summarize(events: list[Event], target: Optional[float] = None, accuracy_key: str = "eval_accuracy") -> dict[str, float]:
    """The metrics described in the module's docstring."""
    first: dict[str, Event] = {}
    for e in events:
        first.setdefault(e.key, e)
    stops = [e for e in events if e.key == "run_stop"]
    metrics: dict[str, float] = {}
    start, stop = first.get("run_start"), stops[-1] if stops else None
    success = bool(stop and stop.metadata.get("status") == "success")
    if start and stop:
        metrics["run_duration"] = stop.time_s - start.time_s
        metrics["run_success"] = float(success)
        if success:
            metrics["time_to_train"] = metrics["run_duration"]
    if "init_start" in first and "init_stop" in first:
        metrics["init_time"] = first["init_stop"].time_s - first["init_start"].time_s
    evals = [(e, v) for e in events if e.key == accuracy_key and (v := to_number(e.value)) is not None]
    if evals:
        metrics.update(eval_accuracy=evals[-1][1], best_eval_accuracy=max(v for _, v in evals), evals=float(len(evals)))
        if target is not None:
            reached = next((e for e, v in evals if v >= target), None)
        else:
            reached = evals[-1][0] if success else None
        if reached and start:
            metrics["time_to_accuracy"] = reached.time_s - start.time_s
    epochs = [to_number(e.metadata.get("epoch_num")) for e in events if "epoch_num" in e.metadata]
    if any(n is not None for n in epochs):
        metrics["epochs"] = max(n for n in epochs if n is not None)
    return metrics


class MllogPostprocessor:
    """Metrics of an MLPerf-style log (see the module's docstring)."""

    Config = MllogConfig

    def __init__(self, config: MllogConfig) -> None:
        self.config = config

    def run(self, ctx: RunContext) -> dict[str, float]:
        """Parse the chosen log and summarize its events."""
        events = self._events(ctx.output)
        return summarize(events, self.config.target, self.config.accuracy_key)

    def _events(self, output: Path) -> list[Event]:
        if self.config.file is not None:
            candidates = [output / self.config.file]
            if not candidates[0].is_file():
                raise PostprocessError(f"mllog: output/{self.config.file} does not exist")
        else:
            candidates = replica_logs(output)
        for path in candidates:
            events = parse_events(bounded_lines(path))
            if events:
                return events
        where = f"output/{self.config.file}" if self.config.file else "any replica log of output/"
        raise PostprocessError(f"mllog: no {TOKEN.strip()} lines in {where}")
