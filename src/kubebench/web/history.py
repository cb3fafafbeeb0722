"""The dashboard's views across experiments: a series' history page, sparklines for the list, and the
runs table (choose columns, sort, filter with a small query language, parallel coordinates, notes and tags).

History is computed as ``kubebench history`` computes it (``analyse.history.load_history`` → analyse), and
cached per series until the series changes (:func:`~kubebench.store.series.series_version`): a series of
500 experiments × 20 trials takes a few hundred milliseconds to analyse, a page view should not.
"""

from __future__ import annotations

import statistics
import threading
from collections import OrderedDict
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import NotFoundError
from .auth import require_writer

router = APIRouter()
_CACHE_SIZE = 16
_lock = threading.Lock()


def _store(request: Request):
    return request.app.state.store


def _cache(request: Request) -> OrderedDict:
    state = request.app.state
    if not hasattr(state, "history_cache"):
        state.history_cache = OrderedDict()
    return state.history_cache


@router.get("/history/{name}", response_class=HTMLResponse, include_in_schema=False)
def history_page(request: Request, name: str) -> HTMLResponse:
    """A series' history: per trial the medians with CI bands, change points and accepted changes."""
    from ..store.series import resolve_series
    from .pages import _page

    try:
        series = resolve_series(_store(request), name)
    except NotFoundError as e:
        return _page(request, "not_found.html", "Not found", 404, message=str(e))
    return _page(request, "history.html", f"History of {series}", series=series)


@router.get("/table", response_class=HTMLResponse, include_in_schema=False)
def table_page(request: Request) -> HTMLResponse:
    """The runs table: experiments × trials with parameters, metrics, labels and environment."""
    from .pages import _page

    return _page(request, "table.html", "Runs table")


@router.get("/api/history/{name}", tags=["api"])
def history_api(request: Request, name: str,
                metric: Annotated[str | None, Query(description="metric (default: the primary one)")] = None,
                trial: Annotated[list[str] | None, Query(description="key=value; repeatable")] = None,
                points: Annotated[bool, Query(description="each trial's points too (the figure has them drawn)")] = False,
                ) -> Response:
    """A series' history as ``kubebench history -f json`` gives it (``points=true``), plus a Plotly figure of it.

    The answer is cached as the bytes sent: encoding the figure of 500 experiments × 20 trials again
    for every view took FastAPI's encoder ~150 ms, more than the page's whole budget."""
    from ..analyse.history import load_history, parse_trials
    from ..present.history import history_dict, history_figure
    from ..store.series import resolve_series, series_version
    from ..store.series_reader import StoreSeries

    store = _store(request)
    series = resolve_series(store, name)
    key = (series, metric, tuple(trial or ()), points)
    version = series_version(store, series)
    cache = _cache(request)
    with _lock:
        hit = cache.get(key)
    if hit and hit[0] == version:
        return Response(hit[1], media_type="application/json")
    _, metric_name, found = load_history(StoreSeries(store), series, metric, parse_trials(trial), None)
    newest = store.experiment(found[0].points[-1].experiment.id)
    answer = {"series": series, "metric": metric_name, "goal": found[0].goal,
              "metrics": [m["name"] for m in newest.declared_metrics()],
              "trials": [history_dict(h) if points else {**history_dict(h, points=False), "n_points": len(h.points)}
                         for h in found],
              "figure": history_figure(found, f"{series}: {metric_name}")}
    body = JSONResponse(answer).body
    with _lock:
        cache[key] = (version, body)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
    return Response(body, media_type="application/json")


@router.get("/api/sparklines", tags=["api"])
def sparklines(request: Request, ids: Annotated[str, Query(description="comma-separated experiment ids", max_length=8000)],
               points: Annotated[int, Query(ge=2, le=100)] = 20) -> dict:
    """Per experiment: its primary metric's median (first trial) and that trial's recent history in its series."""
    from ..store.series import recent_experiments, trial_key, trial_runs

    store = _store(request)
    wanted = [i for i in ids.split(",") if i][:500]
    answer = {}
    for exp_id in wanted:
        try:
            record = store.experiment(exp_id)
        except NotFoundError:
            continue
        metric = record.primary_metric()
        if metric is None:
            continue
        recent = recent_experiments(store, record.series or record.name, record.created_at, points)
        runs = trial_runs(store, recent)
        mine = runs.get(exp_id)
        if not mine:
            continue
        key = trial_key(mine[0][0])
        line = []
        for other in recent:
            trial = next((vals for p, vals in runs.get(other, []) if trial_key(p) == key), [])
            values = [m[metric] for m in trial if metric in m]
            line.append(statistics.median(values) if values else None)
        answer[exp_id] = {"metric": metric, "series": record.series or record.name, "value": line[-1],
                          "history": line, "experiments": recent}
    return answer


class NoteRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    note: str | None = Field(None, max_length=4000)
    tags: list[Annotated[str, Field(max_length=64)]] | None = Field(None, max_length=50)


@router.put("/api/experiments/{experiment_id}/notes", tags=["api"], dependencies=[Depends(require_writer)])
def put_notes(request: Request, experiment_id: str, body: NoteRequest) -> dict:
    """Set an experiment's note and/or tags (a field left out keeps its value)."""
    from ..store.series import set_note

    return set_note(_store(request), experiment_id, body.note, body.tags)


@router.get("/api/table", tags=["api"])
def table_api(request: Request,
              q: Annotated[str, Query(description="filter, e.g. params.bs >= 32 and labels.version = \"1.4.2\"", max_length=2000)] = "",
              limit: Annotated[int, Query(ge=1, le=2000, description="newest experiments read")] = 200) -> dict:
    """Rows of experiment × trial (newest first) that match ``q``, with the metrics' goals."""
    from ..analyse.query import parse
    from .table import table_rows

    keep = parse(q)
    rows, goals = table_rows(_store(request), limit)
    return {"rows": [r for r in rows if keep(r)], "goals": goals, "total": len(rows)}
