"""``kubebench serve`` (the web server: ``/metrics`` for Prometheus, the dashboard later) and
``kubebench grafana-dashboard``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from . import StoreOpt, app, expected_errors


@app.command()
@expected_errors
def serve(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8080,
) -> None:
    """Serve the store over HTTP: /metrics for Prometheus (runs, durations, latest metrics, live telemetry)."""
    import uvicorn

    from ..settings import settings
    from ..store.store import open_store

    from ..web.app import make_app

    uvicorn.run(make_app(open_store(settings(store).store_url)), host=host, port=port, log_level="warning")


@app.command("grafana-dashboard")
def grafana_dashboard() -> None:
    """Print the Grafana dashboard (JSON) of kubebench's Prometheus metrics, to import into Grafana."""
    from ..monitor.dashboard import dashboard_json

    typer.echo(dashboard_json())
