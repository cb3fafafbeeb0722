"""The web application: JSON API (``/api``), pages, static files and Prometheus' ``/metrics``."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"


def make_app(store, settings=None, token: str | None = None, read_only: bool = False):
    """The dashboard over ``store``; state changes need ``token`` and are refused when ``read_only``."""
    from fastapi import FastAPI
    from fastapi.staticfiles import StaticFiles
    from prometheus_client import make_asgi_app

    from ..monitor.exposition import make_registry
    from . import api, pages

    web = FastAPI(title="kubebench", version="1")
    web.state.store = store
    web.state.settings = settings
    web.state.token = token
    web.state.read_only = read_only
    web.include_router(api.router)
    web.include_router(pages.router)
    web.mount("/static", StaticFiles(directory=STATIC), name="static")
    web.mount("/metrics", make_asgi_app(make_registry(store)))
    return web
