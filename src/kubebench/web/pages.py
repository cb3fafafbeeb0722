"""HTML pages: server-rendered shells (title, nav, ids in ``data-*`` attributes) whose content the
small JS modules under ``static/`` fetch from the JSON API. Plotly's JS is served from the
installed ``plotly`` package, so the dashboard works offline (no CDN).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.templating import Jinja2Templates

from ..errors import IdError, NotFoundError

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))

router = APIRouter(include_in_schema=False)


@lru_cache(maxsize=1)
def plotly_js() -> tuple[Path, str]:
    """The ``plotly.min.js`` shipped inside the installed ``plotly`` package, and a tag of that file.

    Found without importing plotly (a tenth of a second the first page would wait for); the tag
    (size and modification time) changes whenever another plotly is installed.
    """
    import importlib.util

    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the plotly package is not installed (it is a dependency of kubebench)")
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    stat = path.stat()
    return path, f"{stat.st_size:x}-{stat.st_mtime_ns // 1_000_000_000:x}"


@router.get("/static/plotly.min.js")
def plotly_script() -> FileResponse:
    """Plotly's JS; pages ask for ``?v=<tag>``, so it may be cached for a year."""
    path, _ = plotly_js()
    return FileResponse(path, media_type="text/javascript",
                        headers={"Cache-Control": "public, max-age=31536000, immutable"})


class AsgiEndpoint:
    """An ASGI app served at one exact path (``/metrics``): a mount would answer only below it,
    redirecting ``/metrics`` to ``/metrics/``, which scrapers configured for ``/metrics`` then follow
    or refuse. Starlette calls a plain function with a Request; an object is called as ASGI."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)


def _page(request: Request, template: str, title: str, status_code: int = 200, **context: object) -> HTMLResponse:
    context = {"title": title, "plotly_tag": plotly_js()[1], "page": template.removesuffix(".html"),
               "read_only": request.app.state.read_only, **context}
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status_code)


@router.get("/", response_class=HTMLResponse)
def experiments_page(request: Request) -> HTMLResponse:
    """The experiments: filters, counts by state, live progress, cancel, pagination."""
    return _page(request, "experiments.html", "Experiments")


@router.get("/launch", response_class=HTMLResponse)
def launch_page(request: Request) -> HTMLResponse:
    """Launch an experiment from a YAML spec or a small form."""
    return _page(request, "launch.html", "Launch")


@router.get("/experiments/{experiment_id}", response_class=HTMLResponse)
def experiment_page(request: Request, experiment_id: str) -> HTMLResponse:
    """One experiment: progress, trials with statistics, plots, runs."""
    try:
        name = request.app.state.store.experiment(experiment_id).name
    except (NotFoundError, IdError) as e:  # IdError: not an id at all (its message names the rule)
        return _page(request, "not_found.html", "Not found", 404, message=str(e))
    return _page(request, "experiment.html", name, experiment_id=experiment_id, experiment_name=name)


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, run_id: str) -> HTMLResponse:
    """One run: state, timings, provenance, logs, telemetry, files."""
    try:
        run = request.app.state.store.run(run_id)
    except (NotFoundError, IdError) as e:  # IdError: not an id at all (its message names the rule)
        return _page(request, "not_found.html", "Not found", 404, message=str(e))
    return _page(request, "run.html", f"Run {run_id}", run_id=run_id, experiment_id=run.experiment_id)


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: str = "", b: str = "") -> HTMLResponse:
    """Two experiments side by side: comparison table and chart with verdicts."""
    return _page(request, "compare.html", "Compare", a=a, b=b)
