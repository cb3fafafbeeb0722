"""``kubebench serve`` (the dashboard, its JSON API and ``/metrics`` for Prometheus) and
``kubebench grafana-dashboard``.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import StorageOpt, StoreOpt, app, expected_errors, make_console


def _token(value: Optional[str]) -> Optional[str]:
    """The ``--token`` (or ``KUBEBENCH_TOKEN``) given, if a client can send it (exit 2 otherwise)."""
    from ..web.auth import check_token

    if not value:  # none given (or empty): a new one is made
        return None
    try:
        return check_token(value)
    except ValueError as e:
        raise typer.BadParameter(str(e)) from None


@app.command()
@expected_errors
def serve(
    store: StoreOpt = None,
    storage: StorageOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")] = 8080,
    read_only: Annotated[bool, typer.Option("--read-only", help="Serve pages and results only: every change is refused.")] = False,
    token: Annotated[Optional[str], typer.Option(
        "--token", envvar="KUBEBENCH_TOKEN", show_default=False, callback=_token,
        help="Token that launching, cancelling and deleting need, of visible ASCII characters "
             "(default: a new one, printed at start).")] = None,
    allowed_host: Annotated[Optional[list[str]], typer.Option(
        "--allowed-host", show_default=False,
        help="Also answer requests for this host name (repeatable), e.g. the name of a reverse proxy or of "
             "this machine in DNS. Loopback names and the listening address are always answered; other names "
             "are refused (400), so that a web page cannot reach the dashboard by rebinding its own name.")] = None,
) -> None:
    """Serve the dashboard (pages, JSON API at /api, docs at /docs) and /metrics for Prometheus.

    Runs' files are served from the experiments root and from --storage only, whatever the store records.
    """
    import uvicorn
    from rich.text import Text

    from ..present.text import cell
    from ..settings import settings
    from ..store.store import open_store
    from ..web.app import make_app
    from ..web.auth import new_token
    from ..web.headers import allowed_hosts

    bound = bind(host, port)  # before anything is printed: a busy port is one clear error
    config = settings(store, storage=storage)
    token = token or new_token()
    web = make_app(open_store(config.store_url), config, token=token, read_only=read_only,
                   allowed_hosts=allowed_hosts(host, allowed_host or ()))
    err = make_console(stderr=True)
    if not read_only and not _loopback(host):
        err.print(Text.assemble(cell("warning:", style="yellow"), cell(
            f" listening on {host}, reachable from other machines: anyone with the token can launch processes "
            "here; use --read-only, or keep the default 127.0.0.1")))
    if read_only:
        typer.echo(f"kubebench dashboard (read-only): {dashboard_url(host, port)}")
    else:  # the page keeps the token and takes it out of the address bar
        typer.echo(f"kubebench dashboard: {dashboard_url(host, port, token)}")
    uvicorn.Server(uvicorn.Config(web, host=host, port=port, log_level="warning")).run(sockets=[bound])


def dashboard_url(host: str, port: int, token: str | None = None) -> str:
    """The address printed at start; with ``token`` quoted, so that ``&``, ``+`` or ``#`` in it reach
    the page intact."""
    from urllib.parse import quote

    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    url = f"http://{_url_host(shown)}:{port}/"
    return url if token is None else f"{url}?token={quote(token, safe='')}"


def bind(host: str, port: int):
    """A socket bound to ``host:port``; ServeError (exit 3) when that is refused.

    It listens only once uvicorn serves (asyncio calls listen()): until the app is ready a client
    is refused, as before, rather than left waiting in the backlog.
    """
    import errno
    import socket

    from ..errors import ServeError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as e:
        raise ServeError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a port in TIME_WAIT is free
        sock.bind(address)
    except OSError as e:
        sock.close()
        why = ("the port is in use (another `kubebench serve`?): choose another with --port"
               if e.errno == errno.EADDRINUSE else e.strerror or str(e))
        raise ServeError(f"cannot listen on {_url_host(host)}:{port}: {why}") from None
    return sock


def _loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@app.command("grafana-dashboard")
def grafana_dashboard() -> None:
    """Print the Grafana dashboard (JSON) of kubebench's Prometheus metrics, to import into Grafana."""
    from ..monitor.dashboard import dashboard_json

    typer.echo(dashboard_json())
