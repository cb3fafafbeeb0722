"""The experiments list's sparklines (``/api/sparklines``): each experiment's primary metric over the
last experiments of its series, and the last change found in it.

Anyone who reaches the dashboard may ask, without a token, so what one request costs is bounded
(review 2026-12-02 N4: 500 ids took 30 s of CPU): at most :data:`MAX_IDS` ids (more is a 422; the list
asks for its page in pieces of that size) and :data:`MAX_POINTS` points; the experiments of one series
are read together (their windows overlap: one read of the runs, not one per id); and a trend is kept
until its series changes (:func:`~kubebench.store.series.series_version`), so asking again is a lookup.
"""

from __future__ import annotations

import statistics
import threading
from collections import OrderedDict
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request

from ..errors import NotFoundError

router = APIRouter()
#: Most experiment ids of one request, and most points of one sparkline.
MAX_IDS = 50
MAX_POINTS = 50
#: Trends kept (by experiment and points), each until its series changes.
CACHE_SIZE = 4096
_lock = threading.Lock()


@router.get("/api/sparklines", tags=["api"])
def sparklines(request: Request,
               ids: Annotated[str, Query(description=f"comma-separated experiment ids (at most {MAX_IDS})",
                                         max_length=MAX_IDS * 64)],
               points: Annotated[int, Query(ge=2, le=MAX_POINTS)] = 20) -> dict:
    """Per experiment: its primary metric's median (first trial), that trial's recent history in its series
    (the trial named by the parameters that vary within an experiment, as ``kubebench history`` names it:
    a fixed parameter changed between nights is the same trial), and the last change found in it."""
    from ..store.series import series_version

    wanted = list(dict.fromkeys(i for i in ids.split(",") if i))
    if len(wanted) > MAX_IDS:
        raise HTTPException(422, f"at most {MAX_IDS} experiment ids per request (got {len(wanted)}): ask in pieces")
    store = request.app.state.store
    by_series: dict[str, list] = {}
    for exp_id in wanted:
        try:
            record = store.experiment(exp_id)
        except NotFoundError:
            continue
        by_series.setdefault(record.series or record.name, []).append(record)
    cache = _cache(request)
    answer: dict[str, dict] = {}
    for series, records in by_series.items():
        version = series_version(store, series)
        with _lock:
            known = {r.id: cache.get((r.id, points)) for r in records}
        todo = [r for r in records if (known[r.id] or (None,))[0] != version]
        computed = _trends(store, series, todo, points) if todo else {}
        with _lock:
            for record in todo:
                cache[(record.id, points)] = (version, computed.get(record.id))
                cache.move_to_end((record.id, points))
            while len(cache) > CACHE_SIZE:
                cache.popitem(last=False)
        for record in records:
            trend = computed[record.id] if record.id in computed else (known[record.id] or (None, None))[1]
            if trend is not None:
                answer[record.id] = trend
    return answer


def _cache(request: Request) -> OrderedDict:
    state = request.app.state
    with _lock:
        if not hasattr(state, "sparkline_cache"):
            state.sparkline_cache = OrderedDict()
        return state.sparkline_cache


def _trends(store, series: str, records: list, points: int) -> dict[str, dict | None]:
    """The sparklines of ``records`` (all of ``series``): one read of the runs of every window."""
    from ..store.series import accepted_changes, recent_experiments, trial_runs

    windows = {r.id: recent_experiments(store, series, r.created_at, points) for r in records}
    runs = trial_runs(store, list(dict.fromkeys(e for window in windows.values() for e in window)))
    accepted = accepted_changes(store, series)
    return {r.id: _trend(r, series, windows[r.id], runs, accepted) for r in records}


def _trend(record, series: str, recent: list[str], runs: dict, accepted_changes: list) -> dict | None:
    """The sparkline of one experiment (see :func:`sparklines`); None without a primary metric or values."""
    from ..analyse.changepoint import detect
    from ..analyse.history import DEFAULT_THRESHOLD
    from ..present.numbers import metric_unit
    from ..store.series_records import swept_parameters, trial_key

    metric = record.primary_metric()
    mine = runs.get(record.id)
    if metric is None or not mine:
        return None
    swept = swept_parameters((other, params) for other in recent for params, _ in runs.get(other, []))

    def key(params: dict) -> str:
        return trial_key({k: v for k, v in params.items() if k in swept})

    wanted = key(mine[0][0])
    values = []
    for other in recent:
        trial: list[dict[str, float]] = next((vals for params, vals in runs.get(other, []) if key(params) == wanted), [])
        values.append([m[metric] for m in trial if metric in m])
    line = [statistics.median(v) if v else None for v in values]
    goal = record.metric_goal(metric)[1]
    known = [i for i, v in enumerate(values) if v]
    accepted = {e.experiment_id for e in accepted_changes if e.metric in ("", metric)}
    found = detect([values[i] for i in known], goal=goal, threshold=DEFAULT_THRESHOLD,
                   accepted={n for n, i in enumerate(known) if recent[i] in accepted})
    last = next((c for c in reversed(found) if not c.accepted), None)
    change = None if last is None else {"experiment": recent[known[last.index]], "verdict": last.comparison.verdict,
                                        "change": last.comparison.ratio - 1}
    unit = next((str(m.get("unit") or "") for m in record.declared_metrics() if m["name"] == metric), "")
    return {"metric": metric, "series": series, "value": line[-1], "history": line, "experiments": recent,
            "goal": goal, "unit": metric_unit(metric, unit), "change": change}
