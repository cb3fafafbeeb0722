"""The dashboard's views across experiments: a series' history page and the runs table (choose columns,
sort, filter with a small query language, parallel coordinates, notes and tags). The list's sparklines
are :mod:`.sparklines`.

History is computed as ``kubebench history`` computes it (``analyse.history.load_history`` → analyse), and
cached per series until the series changes (:func:`~kubebench.store.series.series_version`): a series of
500 experiments × 20 trials takes a few hundred milliseconds to analyse, a page view should not.

These answer without a token, so what the client chooses never makes them compute again (review
2026-12-02 N4: every ``trial=`` value recomputed the history, even one that matched nothing). The
history of a series is computed once per metric, every trial at once, and a request's ``trial=``
only picks trials out of it; a metric the series does not have, or trials that match none, are a 404
before anything is computed. The answers are cached by the trials picked, not by what was asked.
The runs table reads at most :data:`MAX_TABLE_ROWS` rows, newest experiments first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import NotFoundError
from .auth import require_writer

router = APIRouter()
#: Answers kept (at most this many, and this many bytes in all), and computed histories (a series × a
#: metric, every trial) kept.
_CACHE_SIZE = 16
_CACHE_BYTES = 64 * 2**20
_HISTORIES = 4
#: Rows of experiment × trial one runs-table answer holds at most (newest experiments first).
MAX_TABLE_ROWS = 5_000
_lock = threading.Lock()


def _store(request: Request):
    return request.app.state.store


def _cache(request: Request, name: str = "history_cache") -> OrderedDict:
    state = request.app.state
    with _lock:
        if not hasattr(state, name):
            setattr(state, name, OrderedDict())
        return getattr(state, name)


def _remember(cache: OrderedDict, key: tuple, value: tuple, size: int, most_bytes: int | None = None) -> None:
    """Keep ``value`` (``(version, …)``), dropping the oldest past ``size`` entries or, for answers
    (``(version, bytes)``), past ``most_bytes`` in all."""
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > size or (most_bytes is not None and len(cache) > 1
                                    and sum(len(v[1]) for v in cache.values()) > most_bytes):
            cache.popitem(last=False)


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
    for every view took FastAPI's encoder ~150 ms, more than the page's whole budget. ``X-Kubebench-Cache``
    says whether the history was computed for this request (``miss``) or not (``hit``)."""
    from ..analyse.history import parse_trials, trial_matches
    from ..present.history import history_dict, history_figure
    from ..store.series import resolve_series, series_version
    from ..store.series_records import trial_key

    wanted = parse_trials(trial)
    store = _store(request)
    series = resolve_series(store, name)
    version = series_version(store, series)
    computed, miss = _history(request, series, metric, version)
    metric_name, found, declared = computed
    chosen = [h for h in found if trial_matches(h.params, wanted)]
    if not chosen:
        raise NotFoundError(f"series {series!r} has no values of {metric_name!r} for trials "
                            + ", ".join(f"{k}={v}" for k, v in wanted.items()))
    key = (series, metric_name, tuple(trial_key(h.params) for h in chosen), points)
    cache = _cache(request)
    with _lock:
        hit = cache.get(key)
    headers = {"X-Kubebench-Cache": "miss" if miss else "hit"}
    if hit and hit[0] == version:
        return Response(hit[1], media_type="application/json", headers=headers)
    answer = {"series": series, "metric": metric_name, "goal": chosen[0].goal, "metrics": declared,
              "trials": [history_dict(h) if points else {**history_dict(h, points=False), "n_points": len(h.points)}
                         for h in chosen],
              "figure": history_figure(chosen, f"{series}: {metric_name}")}
    body = JSONResponse(answer).body
    _remember(cache, key, (version, body), _CACHE_SIZE, _CACHE_BYTES)
    return Response(body, media_type="application/json", headers=headers)


def _history(request: Request, series: str, metric: str | None, version: tuple) -> tuple[tuple, bool]:
    """((metric, every trial's history, the newest experiment's declared metrics), computed now) of a
    series; NotFoundError for a metric its newest experiment neither declares nor reported."""
    from ..analyse.history import load_history
    from ..store.series_reader import StoreSeries

    store = _store(request)
    source = StoreSeries(store)
    newest = store.experiment(source.newest_experiment(series))
    declared = [str(m["name"]) for m in newest.declared_metrics()]
    if metric and metric not in declared and metric not in _reported(store, newest.id):
        raise NotFoundError(f"series {series!r} has no metric {metric!r} (its newest experiment's: "
                            f"{', '.join(declared) or 'none declared'})")
    metric = metric or newest.primary_metric()
    cache = _cache(request, "history_computed")
    with _lock:
        hit = cache.get((series, metric))
    if hit and hit[0] == version:
        if isinstance(hit[1], NotFoundError):  # nothing to show is kept as well: asking again costs nothing
            raise hit[1]
        return hit[1], False
    try:
        _, metric_name, found = load_history(source, series, metric, {}, None)
    except NotFoundError as e:
        _remember(cache, (series, metric), (version, e), _HISTORIES)
        raise
    computed = (metric_name, found, declared)
    _remember(cache, (series, metric), (version, computed), _HISTORIES)
    return computed, True


def _reported(store, experiment_id: str) -> set[str]:
    """The metrics the runs of an experiment reported."""
    return {name for run in store.runs(experiment_id, logs=False) for name in run.metrics}


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
              limit: Annotated[int, Query(ge=1, le=2000, description=(
                  f"newest experiments read; at most {MAX_TABLE_ROWS:,} rows (experiment × trial) are"))] = 200,
              benchmark: Annotated[str | None, Query(description="only this benchmark (spec name); "
                                                     "`*`: every benchmark; default: the one run last")] = None,
              ) -> dict:
    """Rows of experiment × trial (newest first) of one benchmark that match ``q``, with the metrics'
    goals and units, and the benchmarks there are (newest first): a union of every benchmark's
    parameters and metrics is a table of empty columns (review 2026-12-02 #17). ``experiments``: how
    many were read; ``truncated``: the rows stopped at the bound, before ``limit`` experiments."""
    from ..analyse.query import parse
    from .table import table_rows

    keep = parse(q)
    store = _store(request)
    names = store.benchmark_names()
    chosen = None if benchmark == "*" else benchmark or (names[0] if names else None)
    table = table_rows(store, limit, chosen, MAX_TABLE_ROWS)
    _check_fields(q, table.rows)
    return {"rows": [r for r in table.rows if keep(r)], "goals": table.goals, "units": table.units,
            "total": len(table.rows), "benchmark": chosen or "*", "benchmarks": names,
            "experiments": table.experiments, "truncated": table.truncated}


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
