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
    """Per experiment: its primary metric's median (first trial), that trial's recent history in its series
    (the trial named by the parameters that vary within an experiment, as ``kubebench history`` names it:
    a fixed parameter changed between nights is the same trial), and the last change found in it."""
    store = _store(request)
    wanted = [i for i in ids.split(",") if i][:500]
    answer = {}
    for exp_id in wanted:
        try:
            record = store.experiment(exp_id)
        except NotFoundError:
            continue
        trend = _trend(store, record, points)
        if trend is not None:
            answer[exp_id] = trend
    return answer


def _trend(store, record, points: int) -> dict | None:
    """The sparkline of one experiment (see :func:`sparklines`); None without a primary metric or values."""
    from ..analyse.changepoint import detect
    from ..analyse.history import DEFAULT_THRESHOLD
    from ..present.numbers import metric_unit
    from ..store.series import accepted_changes, recent_experiments, swept_parameters, trial_key, trial_runs

    metric = record.primary_metric()
    if metric is None:
        return None
    series = record.series or record.name
    recent = recent_experiments(store, series, record.created_at, points)
    runs = trial_runs(store, recent)
    mine = runs.get(record.id)
    if not mine:
        return None
    swept = swept_parameters((other, params) for other in recent for params, _ in runs.get(other, []))
    def key(params: dict) -> str:
        return trial_key({k: v for k, v in params.items() if k in swept})

    wanted = key(mine[0][0])
    values = []
    for other in recent:
        trial = next((vals for params, vals in runs.get(other, []) if key(params) == wanted), [])
        values.append([m[metric] for m in trial if metric in m])
    line = [statistics.median(v) if v else None for v in values]
    goal = record.metric_goal(metric)[1]
    known = [i for i, v in enumerate(values) if v]
    accepted = {e.experiment_id for e in accepted_changes(store, series) if e.metric in ("", metric)}
    found = detect([values[i] for i in known], goal=goal, threshold=DEFAULT_THRESHOLD,
                   accepted={n for n, i in enumerate(known) if recent[i] in accepted})
    last = next((c for c in reversed(found) if not c.accepted), None)
    change = None if last is None else {"experiment": recent[known[last.index]], "verdict": last.comparison.verdict,
                                        "change": last.comparison.ratio - 1}
    unit = next((str(m.get("unit") or "") for m in record.declared_metrics() if m["name"] == metric), "")
    return {"metric": metric, "series": series, "value": line[-1], "history": line, "experiments": recent,
            "goal": goal, "unit": metric_unit(metric, unit), "change": change}


class AcceptRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    experiment: str = Field(max_length=200, description="the experiment where the intended change starts")
    metric: str = Field("", max_length=200, description="only this metric (default: every metric)")
    note: str = Field("", max_length=4000, description="why the level changed")


@router.post("/api/history/{name}/accept", tags=["api"], dependencies=[Depends(require_writer)])
def accept(request: Request, name: str, body: AcceptRequest) -> dict:
    """Mark a step change as intended, as ``kubebench history accept`` does: later detections and
    ``check`` measure against the new level."""
    from ..store.series import accept_change, resolve_series

    store = _store(request)
    change = accept_change(store, resolve_series(store, name), body.experiment, body.metric, body.note)
    return {"series": change.series, "experiment": change.experiment_id, "metric": change.metric, "note": change.note}


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
              limit: Annotated[int, Query(ge=1, le=2000, description="newest experiments read")] = 200,
              benchmark: Annotated[str | None, Query(description="only this benchmark (spec name); "
                                                     "`*`: every benchmark; default: the one run last")] = None,
              ) -> dict:
    """Rows of experiment × trial (newest first) of one benchmark that match ``q``, with the metrics'
    goals and units, and the benchmarks there are (newest first): a union of every benchmark's
    parameters and metrics is a table of empty columns (review 2026-12-02 #17)."""
    from ..analyse.query import parse
    from .table import table_rows

    keep = parse(q)
    store = _store(request)
    names = store.benchmark_names()
    chosen = None if benchmark == "*" else benchmark or (names[0] if names else None)
    rows, goals, units = table_rows(store, limit, chosen)
    _check_fields(q, rows)
    return {"rows": [r for r in rows if keep(r)], "goals": goals, "units": units, "total": len(rows),
            "benchmark": chosen or "*", "benchmarks": names}


def _check_fields(q: str, rows: list[dict]) -> None:
    """422 for a ``params.`` or ``metrics.`` name no row has (a typo gave "0 rows" silently), with the
    nearest name there is."""
    import difflib
    import re

    from fastapi import HTTPException

    for section, name in re.findall(r"\b(params|metrics)\.([\w.\-]+)", q):
        known = sorted({k for r in rows for k in r[section]})
        if rows and name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" (did you mean {section}.{close[0]}?)" if close else f"; {section}: {', '.join(known) or 'none'}"
            raise HTTPException(422, f"unknown {section[:-1] if section == 'params' else 'metric'} {name!r} in "
                                     f"these rows{hint}")
