"""The API of one run: state and provenance, replica logs, telemetry, and its files (see :mod:`.files`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Path as RoutePath, Query, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import AfterValidator

from .. import ids
from ..errors import PathRefused
from ..storage import files as run_files
from ..storage.run_folder import RunFolder, run_folder
from ..storage.storage import Storage
from . import models, queries
from .served import DescriptorResponse

router = APIRouter(prefix="/runs")
_REPLICA = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
#: Headers of every served run file: outputs are the workload's, never a page of this origin.
SAFE_HEADERS = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox; default-src 'none'"}
#: Largest ``tail`` of a log (what the run page shows is far less).
MAX_TAIL = 64 * 1024 * 1024
#: A run id in a route: the one id grammar (see kubebench.ids); anything else is 422.
RunId = Annotated[str, RoutePath(description=f"run id: {ids.RULE}"), AfterValidator(ids.validator("run id"))]


def _run(request: Request, run_id: str):
    return request.app.state.store.run(run_id)


def _folder(request: Request, record) -> RunFolder:
    """The run's folder that may be served (:mod:`kubebench.storage.run_folder`): 404 when none yet, 403 when the row
    names a folder outside the dashboard's roots."""
    return run_folder(request.app.state.settings, record.run_id, record.experiment_id, record.path)


def _folder_or_none(request: Request, record) -> RunFolder | None:
    try:
        return _folder(request, record)
    except PathRefused:
        return None


def _is_replica(name: str) -> bool:
    """Whether ``name`` is one the log route serves: the listing offers no other (``a..b``, ``<svg>``)."""
    return _REPLICA.fullmatch(name) is not None and ".." not in name


def _log_names(folder: RunFolder | None) -> list[str]:
    """Replica log names (``worker-0``), rank 0 first."""
    if folder is None:
        return []
    if folder.is_local:
        from ..collect.metrics import replica_logs

        return [p.stem for p in replica_logs(Path(folder.url) / "output") if _is_replica(p.stem)]
    try:
        found = Storage(folder.url).files("output")
    except Exception:  # noqa: BLE001  (a folder not uploaded yet, unreachable storage: no logs to offer)
        return []
    return sorted(Path(name).stem for name, _ in found
                  if name.endswith(".log") and name.count("/") == 1 and _is_replica(Path(name).stem))


@router.get("/{run_id}", response_model=models.RunDetail)
def run(request: Request, run_id: RunId) -> dict:
    """One run: state, timings, parameters, metrics, provenance, end of its log, its logs and series."""
    record = _run(request, run_id)
    store = request.app.state.store
    series = sorted(store.telemetry(run_id))
    experiment = store.experiment(record.experiment_id)
    folder = _folder_or_none(request, record)
    return {**queries.run_summary(record), "experiment_id": record.experiment_id, "log_tail": record.log_tail,
            "provenance": record.provenance, "path": record.path, "logs": _log_names(folder),
            "telemetry": series, "info": record.info, "metric_list": queries.run_metrics(experiment, record),
            "step_times": _has_step_times(folder)}


def _has_step_times(folder: RunFolder | None) -> bool:
    """Whether the run wrote ``output/step_times.json`` (its per-step times, which the run page plots)."""
    if folder is None:
        return False
    if folder.is_local:
        return (Path(folder.url) / "output" / "step_times.json").is_file()
    try:
        return any(name == "output/step_times.json" for name, _ in Storage(folder.url).files("output"))
    except Exception:  # noqa: BLE001  (unreachable storage: no plot, the page is whole without it)
        return False


@router.get("/{run_id}/logs/{replica}", response_class=PlainTextResponse)
def log(request: Request, run_id: RunId, replica: str,
        tail: Annotated[int | None, Query(ge=1, le=MAX_TAIL, description=(
            "for display: only the last TAIL bytes, from the first line start in them, after a one-line note "
            "of what is left out"))] = None) -> Response:
    """The log of one replica (``output/<replica>.log``) as text, up to its size when asked for."""
    record = _run(request, run_id)
    if not _is_replica(replica):
        raise HTTPException(400, f"{replica!r} is not a replica name (like worker-0)")
    relative = f"output/{replica}.log"
    root = _folder(request, record)
    if not root.is_local:
        return Response(run_files.read_remote(root, relative), media_type="text/plain; charset=utf-8",
                        headers=SAFE_HEADERS)
    with _open_file(root, relative, f"run {run_id} has no log of replica {replica!r}") as opened:
        start, note = _tail(opened, tail, relative)
        return DescriptorResponse(opened.detach(), opened.stat.st_size, opened.stat.st_mtime,
                                  "text/plain; charset=utf-8", {**SAFE_HEADERS, "X-Kubebench-Skipped": str(start)},
                                  start=start, prefix=note)


def _open_file(root: RunFolder, relative: str, missing: str) -> run_files.Opened:
    """The run's file, opened once (see :mod:`.files`); 404 with ``missing`` when it is not a file."""
    opened = run_files.open_local(root, relative)
    if not opened.is_file:
        opened.__exit__()
        raise HTTPException(404, missing)
    return opened


def _tail(opened: run_files.Opened, tail: int | None, relative: str) -> tuple[int, bytes]:
    """Where a tail of ``tail`` bytes starts (at a line start when one is near) and its note."""
    size = opened.stat.st_size
    if tail is None or tail >= size:
        return 0, b""
    start = size - tail
    newline = os.pread(opened.fd, min(tail, 64 * 1024), start).find(b"\n")
    if 0 <= newline < tail - 1:
        start += newline + 1
    note = f"[kubebench: the first {start:,} bytes of this log are not shown; download {relative} for all of it]\n"
    return start, note.encode()


@router.get("/{run_id}/telemetry", response_model=models.Telemetry)
def telemetry(request: Request, run_id: RunId) -> dict:
    """The run's telemetry series: ``name → [[t, value], …]`` in time order."""
    _run(request, run_id)
    return {"series": request.app.state.store.telemetry(run_id)}


@router.get("/{run_id}/files", response_model=models.Folder)
def folder(request: Request, run_id: RunId,
           path: Annotated[str, Query(description="folder relative to the run's folder")] = "") -> dict:
    """The entries of one folder of the run (folders first)."""
    record = _run(request, run_id)
    entries = run_files.list_folder(_folder(request, record), path)
    return {"path": run_files.checked(path), "entries": [e.__dict__ for e in entries]}


@router.get("/{run_id}/files/{path:path}")
def file(request: Request, run_id: RunId, path: str,
         inline: Annotated[bool, Query(description="show as text in the browser instead of downloading")] = False,
         ) -> Response:
    """One file of the run: a download, or plain text with ``?inline=1`` (never rendered as a page)."""
    record = _run(request, run_id)
    relative = run_files.checked(path)
    root = _folder(request, record)
    name = relative.rsplit("/", 1)[-1]
    media = "text/plain; charset=utf-8" if inline else "application/octet-stream"
    disposition = "inline" if inline else "attachment"
    if not root.is_local:
        data = run_files.read_remote(root, relative)
        return Response(data, media_type=media, headers={
            **SAFE_HEADERS, "Content-Disposition": f"{disposition}; filename=\"{_ascii(name)}\""})
    opened = _open_file(root, relative, f"no file {relative!r} in run {run_id}")
    return DescriptorResponse(opened.detach(), opened.stat.st_size, opened.stat.st_mtime, media, SAFE_HEADERS,
                              filename=name, disposition=disposition)


def _ascii(name: str) -> str:
    return re.sub(r'[^A-Za-z0-9._-]', "_", name)
