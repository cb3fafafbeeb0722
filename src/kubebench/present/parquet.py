"""Run records as a Parquet file: the CSV's columns, one row per run, with their types kept."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from ..errors import ExportError
from ..store.records import RunRecord
from .export import RESULT_FORMAT_VERSION, columns


def write_parquet(runs: Sequence[RunRecord], path: Path) -> None:
    """``run_id, trial_id, repeat, status, param.<name>…, metric.<name>…, started_at, finished_at (UTC
    timestamps), duration_s, exit_code, reason``: the CSV's columns.

    A parameter column takes the type of its values (int, float, bool, string, lists); one whose
    values mix types holds them as text, as in the CSV. Metrics are float64; a missing value is null.
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ExportError("--format parquet needs pyarrow: pip install 'kubebench[parquet]'") from e
    params, metrics = columns(runs)
    data = {
        "run_id": pa.array([r.run_id for r in runs], pa.string()),
        "trial_id": pa.array([r.trial_id for r in runs], pa.string()),
        "repeat": pa.array([r.repeat for r in runs], pa.int64()),
        "status": pa.array([r.status for r in runs], pa.string()),
    }
    for name in params:
        data[f"param.{name}"] = _typed([r.params.get(name) for r in runs])
    for name in metrics:
        data[f"metric.{name}"] = pa.array([r.metrics.get(name) for r in runs], pa.float64())
    for name in ("started_at", "finished_at"):  # Parquet's own timestamp type, in UTC
        data[name] = pa.array([None if getattr(r, name) is None else round(getattr(r, name) * 1000) for r in runs],
                              pa.timestamp("ms", tz="UTC"))
    data["duration_s"] = pa.array([r.duration_s for r in runs], pa.float64())
    data["exit_code"] = pa.array([r.exit_code for r in runs], pa.int64())
    data["reason"] = pa.array([r.reason for r in runs], pa.string())
    table = pa.table(data).replace_schema_metadata({"kubebench.format_version": str(RESULT_FORMAT_VERSION)})
    try:
        pq.write_table(table, path)
    except OSError as e:
        raise ExportError(f"cannot write {path}: {e}") from e


def _typed(values: list[object]):
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if len(kinds) <= 1 or kinds == {int, float}:
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return pa.array([None if v is None else json.dumps(v) if isinstance(v, (list, dict)) else str(v)
                     for v in values], pa.string())
