"""The JSON API under ``/api`` (documented at ``/docs``): experiments, launch, cancel, compare.

Reads need no token; every state change depends on :func:`.auth.require_writer`. Store calls are
blocking, so the routes are plain functions (FastAPI runs them in its thread pool).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import AfterValidator
from starlette.concurrency import run_in_threadpool

from .. import __version__, ids
from ..errors import LaunchError
from ..redact import mask_url
from ..rules import COMPARE_THRESHOLD
from ..store.records import EXPERIMENT_STATES
from . import api_runs, models, queries
from .auth import require_writer
from .forms import TEMPLATE_FILE, LaunchRequest, form_problems, form_spec
from .launcher import Files

router = APIRouter(prefix="/api", tags=["api"])
Writer = Depends(require_writer)
MAX_PAGE = 500
#: Largest page offset (a bigger one cannot be a row: SQL's OFFSET is a 64-bit integer).
MAX_OFFSET = 2**31 - 1
#: An experiment id in a route: the one id grammar (see kubebench.ids); anything else is 422.
ExperimentId = Annotated[str, Path(description=f"experiment id: {ids.RULE}"),
                         AfterValidator(ids.validator("experiment id"))]


def _store(request: Request):
    return request.app.state.store


def _launcher(request: Request):
    return request.app.state.launcher


@router.get("/config", response_model=models.Config)
def config(request: Request) -> dict:
    """Whether the server is read-only (state changes then answer 403), and kubebench's version."""
    return {"read_only": request.app.state.read_only, "auth": True, "version": __version__}


@router.get("/experiments", response_model=models.ExperimentList)
def experiments(
    request: Request,
    q: Annotated[str | None, Query(description="substring of id or name (case-insensitive)", max_length=200)] = None,
    name: Annotated[str | None, Query(description="exact name")] = None,
    state: Annotated[str | None, Query(description=f"one of {', '.join(EXPERIMENT_STATES)}")] = None,
    backend: Annotated[str | None, Query(description="exact backend")] = None,
    since: Annotated[str | None, Query(description="created at or after: UNIX seconds or ISO date (UTC)")] = None,
    until: Annotated[str | None, Query(description="created at or before: UNIX seconds or ISO date (UTC)")] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
) -> dict:
    """A page of experiments, newest first, with the filtered set's size and counts by state."""
    page = _store(request).experiment_page(
        q=q or None, name=name or None, state=queries.check_state(state), backend=backend or None,
        since=queries.parse_time(since, "since"), until=queries.parse_time(until, "until", end_of_day=True),
        offset=offset, limit=limit, active=_launcher(request).active_ids())
    return {"total": page.total, "offset": offset, "limit": limit,
            "counts": {s: page.counts.get(s, 0) for s in EXPERIMENT_STATES},
            "items": [queries.experiment_summary(r, launched_here=_launcher(request).launched_here(r.id))
                      for r in page.items]}


def _runner_gone(request: Request, experiment_id: str, state: str) -> bool:
    """Whether the store says the experiment runs while no runner does (killed: see kubebench.liveness)."""
    from ..liveness import runner_gone

    return (state == "running" and not _launcher(request).is_active(experiment_id)
            and runner_gone(_store(request), request.app.state.settings, experiment_id))


@router.get("/experiments/{experiment_id}", response_model=models.ExperimentDetail)
def experiment(request: Request, experiment_id: ExperimentId) -> dict:
    """One experiment: spec, metrics, swept parameters, trials with statistics, and its runs."""
    launcher = _launcher(request)
    job = launcher.job(experiment_id)
    detail = queries.experiment_detail(_store(request), experiment_id, launcher.is_active(experiment_id),
                                       job is not None)
    if _runner_gone(request, experiment_id, detail["state"]):
        detail.update(state="interrupted", runner="gone", resume=queries.resume_command(_store(request).experiment(
            experiment_id)))
    if job is not None:
        detail["runner_log"] = mask_url(queries.runner_log(job))  # whatever the runner printed
    return detail


@router.get("/experiments/{experiment_id}/serving", response_model=models.ServingView)
def serving(request: Request, experiment_id: ExperimentId) -> dict:
    """A serving experiment's plots (latency and goodput vs load, throughput–interactivity frontier)
    as Plotly figures, and its capacity answer; empty lists for other experiments."""
    from ..present.serving import serving_view

    store = _store(request)
    record = store.experiment(experiment_id)
    return serving_view(record, store.runs(experiment_id, logs=False))


def _progress(request: Request, experiment_id: str) -> dict:
    launcher = _launcher(request)
    record = _store(request).experiment(experiment_id)
    summary = queries.experiment_summary(record)
    state = queries.live_state(record, launcher.is_active(experiment_id))
    if _runner_gone(request, experiment_id, state):
        state = "interrupted"
    return {"state": state, "partial": queries.partial(state, summary["runs_by_status"]),
            "runs_by_status": summary["runs_by_status"], "runs": summary["runs"]}


@router.get("/experiments/{experiment_id}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}, "description": "server-sent events"}})
async def events(request: Request, experiment_id: ExperimentId) -> StreamingResponse:
    """Server-sent events: ``progress`` every ~1 s while the experiment runs, then one ``done``."""
    first = await run_in_threadpool(_progress, request, experiment_id)  # 404 before the stream starts
    interval = getattr(request.app.state, "events_interval", 1.0)

    async def stream():
        data = first
        while data["state"] == "running":
            yield f"event: progress\ndata: {json.dumps(data)}\n\n"
            await asyncio.sleep(interval)
            if await request.is_disconnected():
                return
            data = await run_in_threadpool(_progress, request, experiment_id)
        yield f"event: done\ndata: {json.dumps(data)}\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.post("/experiments", status_code=201, response_model=models.Launched, dependencies=[Writer],
             responses={401: {"model": models.Problem}, 403: {"model": models.Problem},
                        413: {"model": models.Problem}, 422: {"model": models.LaunchProblems}})
def launch(request: Request, body: LaunchRequest) -> dict | JSONResponse:
    """Start an experiment from a spec (YAML text, optionally a parameter file) or from a form.

    A bad spec or form answers 422 with each problem located (line and column, or form field),
    and nothing starts.
    """
    if body.form is not None and body.spec is None:
        form = body.form
        template = (TEMPLATE_FILE, form.template) if form.template else None
        files = Files(form_spec(form), None, template)
    elif body.spec is not None and body.form is None:
        files = Files(body.spec, body.params)
    else:
        raise HTTPException(422, "give either `spec` (YAML text) or `form`")
    try:
        exp_id = _launcher(request).launch(files)
    except LaunchError as e:
        problems = form_problems(e.problems) if body.form is not None else e.problems
        first = problems[0].message if problems else str(e)
        return JSONResponse({"detail": f"invalid {'form' if body.form else 'spec'}: {first}",
                             "errors": [p.model_dump() for p in problems]}, status_code=422)
    return {"id": exp_id, "url": f"/experiments/{exp_id}"}


@router.post("/experiments/{experiment_id}/cancel", status_code=202, response_model=models.Cancelled,
             dependencies=[Writer], responses={409: {"model": models.Problem}})
def cancel(request: Request, experiment_id: ExperimentId) -> dict:
    """Cancel an experiment this server launched and still runs (its run in flight is cancelled), or one
    whose runner is gone (killed): its runs left pending or running are recorded as cancelled."""
    from ..liveness import cancel_abandoned

    record = _store(request).experiment(experiment_id)
    launcher = _launcher(request)
    if not launcher.launched_here(experiment_id) and _runner_gone(request, experiment_id,
                                                                  queries.live_state(record, False)):
        cancel_abandoned(_store(request), request.app.state.settings, experiment_id,
                         "cancelled from the dashboard; its runner had stopped (killed?) while it ran")
        return {"id": experiment_id, "cancelled": True}
    if not launcher.launched_here(experiment_id):
        raise HTTPException(409, f"experiment {experiment_id} was not launched by this server: "
                                 "stop its `kubebench run` where it runs (Ctrl-C)")
    if not launcher.cancel(experiment_id):
        raise HTTPException(409, f"experiment {experiment_id} is not running any more")
    return {"id": experiment_id, "cancelled": True}


@router.delete("/experiments/{experiment_id}", status_code=204, dependencies=[Writer],
               responses={409: {"model": models.Problem}})
def delete(request: Request, experiment_id: ExperimentId) -> Response:
    """Delete an experiment: its rows in the store and its runs' folders (as ``kubebench delete``).

    409 while it runs (launched here, or recorded running and its runner not known to be gone, or its
    runner's lock held).
    """
    from ..deletion import delete as delete_experiment, plan_deletion

    store, launcher, settings = _store(request), _launcher(request), request.app.state.settings
    state = store.experiment(experiment_id).state
    if launcher.is_active(experiment_id) or (state == "running" and not _runner_gone(request, experiment_id, state)):
        raise HTTPException(409, f"experiment {experiment_id} is running: cancel it first")
    delete_experiment(store, settings, plan_deletion(store, settings, experiment_id))
    launched = (settings.home / "launched").resolve()
    folder = (launched / experiment_id).resolve()
    if folder.parent == launched:  # the id is checked; resolved, the folder is still one of launched/
        shutil.rmtree(folder, ignore_errors=True)
    return Response(status_code=204)


@router.get("/compare", response_model=models.Comparison)
def compare(
    request: Request,
    a: Annotated[str, Query(description="base experiment id")],
    b: Annotated[str, Query(description="candidate experiment id")],
    metric: Annotated[str | None, Query(description="metric (default: a's primary metric)")] = None,
    threshold: Annotated[float, Query(gt=0, lt=1, description="relative change below which a difference is noise")] = COMPARE_THRESHOLD,
) -> dict:
    """Two experiments compared trial by trial: ratio of medians with CI, p-value and verdict."""
    return queries.compare_detail(_store(request), a, b, metric or None, threshold)


router.include_router(api_runs.router)
