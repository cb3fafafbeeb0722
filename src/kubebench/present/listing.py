"""The experiments listing as JSON or CSV: what scripts read, and fast for 10,000s of experiments
(a rich table takes about 2 ms a row to lay out)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from ..store.records import RAN_AND_FAILED, ExperimentRecord
from .export import iso_time
from .text import csv_cell

#: 2: ``created_at`` and ``updated_at`` are ISO 8601 (UTC); JSON keeps the epoch seconds in ``*_epoch``.
#: 3: ``state``, ``cancelled`` (no longer counted as failed), ``labels``; JSON also ``note`` and ``tags``.
LISTING_FORMAT_VERSION = 3
COLUMNS = ("id", "name", "backend", "source", "created_at", "updated_at", "runs", "succeeded", "failed",
           "cancelled", "state", "labels")


def resume_command(source: str, experiment_id: str, extra: Sequence[str] = ()) -> str:
    """``kubebench run examples/x/spec.yaml --id ID``, quoted for a POSIX shell: what resumes an
    experiment (``extra``: its ``--params``/``--set`` options, when they are known)."""
    import shlex

    return shlex.join(["kubebench", "run", source or "SPEC.yaml", *extra, "--id", experiment_id])


def labels_text(labels: dict[str, str]) -> str:
    """``version=1.4 commit=abc123``."""
    return " ".join(f"{k}={v}" for k, v in labels.items())


def experiment_row(e: ExperimentRecord) -> dict:
    """One experiment: ids, origin, times, run counts, state and labels."""
    counts = e.runs_by_status
    return {"id": e.id, "name": e.name, "backend": e.backend, "source": e.source, "created_at": iso_time(e.created_at),
            "updated_at": iso_time(e.updated_at), "runs": sum(counts.values()), "succeeded": counts.get("succeeded", 0),
            "failed": sum(counts.get(s, 0) for s in RAN_AND_FAILED), "cancelled": counts.get("cancelled", 0),
            "state": e.current_state, "labels": labels_text(e.labels)}


def experiments_json(experiments: Sequence[ExperimentRecord], notes: dict[str, dict] | None = None) -> str:
    """A JSON list, one experiment per line, each with its run counts by status, labels, note and tags."""
    def line(e: ExperimentRecord) -> str:
        found = (notes or {}).get(e.id, {})
        return json.dumps({**experiment_row(e), "labels": e.labels, "note": found.get("note", ""),
                           "tags": found.get("tags", []), "created_at_epoch": e.created_at,
                           "updated_at_epoch": e.updated_at, "runs_by_status": e.runs_by_status,
                           "format_version": LISTING_FORMAT_VERSION})

    lines = [line(e) for e in experiments]
    return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"


def experiments_csv(experiments: Sequence[ExperimentRecord]) -> str:
    """``id, name, backend, source, created_at, updated_at, runs, succeeded, failed, cancelled, state, labels``."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_cell(v) for k, v in experiment_row(e).items()} for e in experiments)
    return out.getvalue()
