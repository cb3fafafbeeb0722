"""``kubebench db status`` and ``db upgrade``: the results store's schema version."""

from __future__ import annotations

import typer

from . import StoreOpt, app, expected_errors, make_console

db_app = typer.Typer(help="The results store's schema: its version, and upgrades.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command()
@expected_errors
def status(store: StoreOpt = None) -> None:
    """Print the store's schema version and whether it needs `kubebench db upgrade`."""
    from ..settings import settings
    from ..store import migrate
    from ..store.engine import make_engine
    from ..store.version import SCHEMA_VERSION

    engine = make_engine(settings(store).store_url)
    state = migrate.state(engine)
    if state.version is None:
        verdict = "empty: a new store is created at schema version {}".format(SCHEMA_VERSION)
    elif state.version < SCHEMA_VERSION:
        verdict = "older than this kubebench: run `kubebench db upgrade`"
    elif state.version > SCHEMA_VERSION:
        verdict = "newer than this kubebench: upgrade kubebench"
    else:
        verdict = "current"
    make_console().print(f"store {engine.url.render_as_string(hide_password=True)}: schema version "
                         f"{state.version} (revision {state.revision}); this kubebench: {SCHEMA_VERSION} "
                         f"— {verdict}", markup=False)


@db_app.command()
@expected_errors
def upgrade(store: StoreOpt = None) -> None:
    """Upgrade the store to this kubebench's schema (back it up first; runners must be stopped)."""
    from ..settings import settings
    from ..store import migrate
    from ..store.engine import make_engine

    engine = make_engine(settings(store).store_url)
    before, after = migrate.upgrade(engine)
    url = engine.url.render_as_string(hide_password=True)
    if before.version is None:
        message = f"created the store {url} at schema version {after.version}"
    elif before.version == after.version:
        message = f"the store {url} is already at schema version {after.version}"
    else:
        message = f"upgraded the store {url}: schema version {before.version} → {after.version}"
    make_console().print(message, markup=False)
