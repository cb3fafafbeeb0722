"""Where the time goes, in the dashboard: a run's timeline (one lane per replica, phases coloured as
in the report) and an experiment's phases (a stacked bar of each trial's medians), as JSON for the
pages ``/runs/{run_id}/timeline`` and ``/experiments/{experiment_id}/phases`` that draw them."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Path as RoutePath, Request
from fastapi.responses import HTMLResponse
from pydantic import AfterValidator, BaseModel

from .. import ids
from ..analyse.startup import CHAIN_METRICS, startup
from ..errors import IdError, NotFoundError
from ..timeline import COLOURS, lanes, phases
from ..timeline.phases import PHASE_NAMES
from .pages import _page

router = APIRouter()
RunId = Annotated[str, RoutePath(description=f"run id: {ids.RULE}"), AfterValidator(ids.validator("run id"))]


class RunTimeline(BaseModel):
    """A run's moments (seconds after its submit), its lanes of phases and its phase metrics."""

    run_id: str
    experiment_id: str
    origin: float | None
    boundaries: list[dict[str, Any]]
    lanes: list[dict[str, Any]]
    phases: dict[str, float]
    names: dict[str, str]
    colours: dict[str, str]


class ExperimentPhases(BaseModel):
    """Each trial's phase medians (seconds) with their intervals, and the runs that have a timeline."""

    experiment_id: str
    chain: list[str]
    trials: list[dict[str, Any]]
    names: dict[str, str]
    colours: dict[str, str]


@router.get("/api/runs/{run_id}/timeline", response_model=RunTimeline, tags=["api"])
def run_timeline(request: Request, run_id: RunId) -> dict:
    """One run's timeline: every reading of each moment (source, precision, origin) and its lanes."""
    store = request.app.state.store
    record = store.run(run_id)
    timeline = store.timelines([run_id]).get(run_id, [])
    starts = [b.t for b in timeline if b.name == "submitted"]
    origin = min(starts) if starts else (min(b.t for b in timeline) if timeline else None)
    shift = origin or 0.0
    return {"run_id": run_id, "experiment_id": record.experiment_id, "origin": origin,
            "boundaries": [{**b.as_dict(), "t": round(b.t - shift, 6)} for b in timeline],
            "lanes": [{"name": lane.name, "segments": [s.as_dict(shift) for s in lane.segments]}
                      for lane in lanes(timeline)],
            "phases": phases(timeline), "names": PHASE_NAMES, "colours": COLOURS}


@router.get("/api/experiments/{experiment_id}/phases", response_model=ExperimentPhases, tags=["api"])
def experiment_phases(request: Request, experiment_id: str) -> dict:
    """Each trial's phases: median, the 95% interval of the median, runs; and its runs' ids."""
    store = request.app.state.store
    runs = store.runs(experiment_id, logs=False)
    trials = []
    for trial in startup(runs):
        trials.append({"trial_id": trial.trial_id, "params": trial.params,
                       "runs": [r.run_id for r in runs if r.trial_id == trial.trial_id and not r.warmup],
                       "phases": {p.metric: {"median": p.median, "low": _number(p.low), "high": _number(p.high),
                                             "n": p.n} for p in trial.phases}})
    return {"experiment_id": experiment_id, "chain": list(CHAIN_METRICS), "trials": trials, "names": PHASE_NAMES,
            "colours": COLOURS}


@router.get("/runs/{run_id}/timeline", response_class=HTMLResponse, include_in_schema=False)
def run_timeline_page(request: Request, run_id: str) -> HTMLResponse:
    """A run drawn as a timeline: one lane per replica, and every moment with where it came from."""
    try:
        run = request.app.state.store.run(run_id)
    except (NotFoundError, IdError) as e:
        return _page(request, "not_found.html", "Not found", 404, message=str(e))
    return _page(request, "timeline.html", f"Timeline of run {run_id}", run_id=run_id, experiment_id=run.experiment_id)


@router.get("/experiments/{experiment_id}/phases", response_class=HTMLResponse, include_in_schema=False)
def phases_page(request: Request, experiment_id: str) -> HTMLResponse:
    """An experiment's phases: a stacked bar per trial, and its runs' timelines."""
    try:
        name = request.app.state.store.experiment(experiment_id).name
    except (NotFoundError, IdError) as e:
        return _page(request, "not_found.html", "Not found", 404, message=str(e))
    return _page(request, "phases.html", f"Phases of {name}", experiment_id=experiment_id, experiment_name=name)


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None
