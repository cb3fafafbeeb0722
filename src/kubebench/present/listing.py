"""The experiments listing as JSON or CSV: what scripts read, and fast for 10,000s of experiments
(a rich table takes about 2 ms a row to lay out)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from ..store.records import FAILED_STATES, ExperimentRecord
from .export import iso_time

#: 2: ``created_at`` and ``updated_at`` are ISO 8601 (UTC); JSON keeps the epoch seconds in ``*_epoch``.
LISTING_FORMAT_VERSION = 2
COLUMNS = ("id", "name", "backend", "source", "created_at", "updated_at", "runs", "succeeded", "failed")


def resume_command(source: str, experiment_id: str, extra: Sequence[str] = ()) -> str:
    """``kubebench run examples/x/spec.yaml --id ID``, quoted for a POSIX shell: what resumes an
    experiment (``extra``: its ``--params``/``--set`` options, when they are known)."""
    import shlex

    return shlex.join(["kubebench", "run", source or "SPEC.yaml", *extra, "--id", experiment_id])


def experiment_row(e: ExperimentRecord) -> dict:
    """One experiment: ids, origin, times and run counts."""
    counts = e.runs_by_status
    return {"id": e.id, "name": e.name, "backend": e.backend, "source": e.source, "created_at": iso_time(e.created_at),
            "updated_at": iso_time(e.updated_at), "runs": sum(counts.values()), "succeeded": counts.get("succeeded", 0),
            "failed": sum(counts.get(s, 0) for s in FAILED_STATES)}


def experiments_json(experiments: Sequence[ExperimentRecord]) -> str:
    """A JSON list, one experiment per line, each with its run counts by status."""
    lines = [json.dumps({**experiment_row(e), "created_at_epoch": e.created_at, "updated_at_epoch": e.updated_at,
                         "runs_by_status": e.runs_by_status, "format_version": LISTING_FORMAT_VERSION}) for e in experiments]
    return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"


def experiments_csv(experiments: Sequence[ExperimentRecord]) -> str:
    """``id, name, backend, source, created_at, updated_at, runs, succeeded, failed``."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(experiment_row(e) for e in experiments)
    return out.getvalue()
