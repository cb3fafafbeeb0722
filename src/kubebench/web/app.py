"""The web application: JSON API (``/api``), pages, static files and Prometheus' ``/metrics``."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import asynccontextmanager
from pathlib import Path

STATIC = Path(__file__).parent / "static"
#: The one address of another host in the ReDoc bundle (see ``_api_docs``).
REDOC_LOGO = b"https://cdn.redoc.ly/redoc/logo-mini.svg"


def make_app(store, settings=None, token: str | None = None, read_only: bool = False,
             allowed_hosts: Sequence[str] | None = None):
    """The dashboard over ``store``; state changes need ``token`` and are refused when ``read_only``.

    ``settings`` say where launched experiments keep their files (default: the environment's, with
    this store). Experiments launched here are stopped when the app stops. Only requests naming one
    of ``allowed_hosts`` (default: this machine's loopback names) are answered; others get 400.
    """
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles
    from prometheus_client import make_asgi_app
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from .. import __version__
    from ..monitor.exposition import make_registry
    from . import api, benchmarks, decisions, history, pages, sparklines, timeline
    from .auth import BodyLimit
    from .headers import LOOPBACK_HOSTS, SecurityHeaders
    from .launcher import Launcher

    settings = settings or _default_settings(store)

    @asynccontextmanager
    async def lifespan(app):
        yield
        from starlette.concurrency import run_in_threadpool

        await run_in_threadpool(app.state.launcher.shutdown)

    web = FastAPI(title="kubebench", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Benchmark results: experiments, runs, comparisons; launch and cancel experiments "
                              "(state changes need `Authorization: Bearer <token>`).")
    web.state.store = store
    web.state.settings = settings
    web.state.token = token
    web.state.read_only = read_only
    web.state.launcher = Launcher(settings, store)
    web.state.events_interval = 1.0
    _error_handlers(web)
    web.add_middleware(BodyLimit)
    web.add_middleware(SecurityHeaders)
    web.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts or LOOPBACK_HOSTS), www_redirect=False)
    web.include_router(api.router)
    web.include_router(benchmarks.router)  # the Benchmark resources of the namespace (kubebench.web.benchmarks)
    _api_docs(web)
    web.include_router(pages.router)
    web.include_router(history.router)  # series history, runs table (kubebench.web.history)
    web.include_router(sparklines.router)  # the list's trends (kubebench.web.sparklines)
    web.include_router(timeline.router)  # where the time goes: run timelines, phases (kubebench.web.timeline)
    web.include_router(decisions.router)  # sequential decisions of a run --decide-against (kubebench.web.decisions)
    web.mount("/static", StaticFiles(directory=STATIC), name="static")
    # Starlette serves an endpoint that is not a function as an ASGI app (its Route does so), but
    # annotates add_route for request handlers only.
    web.add_route("/metrics", pages.AsgiEndpoint(make_asgi_app(make_registry(store))),  # type: ignore[arg-type]
                  include_in_schema=False)
    return web


def _api_docs(web) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` from the files of the installed ``fastapi-offline``
    package: the pages load nothing from other hosts (they would run on the token's origin)."""
    import fastapi_offline
    from fastapi import Response
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    assets = Path(fastapi_offline.__file__).parent / "static"
    redoc_js: list[bytes] = []

    @web.get("/static-docs/redoc.standalone.js", include_in_schema=False)
    def redoc_script():
        # ReDoc's menu shows Redocly's logo from their CDN; an address that is no image makes the
        # component hide it (its onError), so the page asks no other host for anything.
        if not redoc_js:
            redoc_js.append((assets / "redoc.standalone.js").read_bytes().replace(REDOC_LOGO, b"data:,"))
        return Response(redoc_js[0], media_type="text/javascript", headers={"Cache-Control": "max-age=3600"})

    web.mount("/static-docs", StaticFiles(directory=assets), name="static-docs")

    @web.get("/docs", include_in_schema=False)
    def swagger():
        return get_swagger_ui_html(openapi_url=web.openapi_url, title="kubebench API",
                                   swagger_js_url="/static-docs/swagger-ui-bundle.js",
                                   swagger_css_url="/static-docs/swagger-ui.css",
                                   swagger_favicon_url="/static-docs/favicon.png")

    @web.get("/redoc", include_in_schema=False)
    def redoc():
        return get_redoc_html(openapi_url=web.openapi_url, title="kubebench API",
                              redoc_js_url="/static-docs/redoc.standalone.js",
                              redoc_favicon_url="/static-docs/favicon.png", with_google_fonts=False)


def _default_settings(store):
    from ..settings import settings as make_settings

    url = store.engine.url.render_as_string(hide_password=False)
    return make_settings(store=url)


def _error_handlers(web) -> None:
    """Expected errors as ``{"detail": message}`` with their HTTP status; bad requests with located errors."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    from ..errors import (
        BusyError,
        IdError,
        KubebenchError,
        NotFoundError,
        PathRefused,
        SpecError,
        StorageError,
        StoreError,
    )

    statuses = ((NotFoundError, 404), (SpecError, 422), (IdError, 422), (BusyError, 409), (StoreError, 503),
                (StorageError, 502), (KubebenchError, 400))

    async def expected(_request, e: KubebenchError):
        status = e.status if isinstance(e, PathRefused) else next(code for kind, code in statuses if isinstance(e, kind))
        return JSONResponse({"detail": str(e)}, status_code=status)

    async def invalid(_request, e: RequestValidationError):
        errors = []
        for err in e.errors():
            loc = [str(p) for p in err["loc"] if p != "body"]
            field = loc[1] if len(loc) > 1 and loc[0] == "form" else (loc[-1] if loc else None)
            errors.append({"loc": ".".join(loc) or "body", "field": field, "line": None, "column": None,
                           "message": str(err["msg"]).removeprefix("Value error, ")})
        first = errors[0] if errors else {"loc": "body", "message": "invalid request"}
        return JSONResponse({"detail": f"invalid request: {first['loc']}: {first['message']}", "errors": errors},
                            status_code=422)

    web.add_exception_handler(KubebenchError, expected)
    web.add_exception_handler(RequestValidationError, invalid)
