"""Schema versions of a store: a new store starts at the newest schema, a newer one is refused, and an
older one is upgraded by ``kubebench db upgrade`` (Alembic migrations in ``migrations/versions``).

Opening a store never changes its schema: an upgrade is an explicit step on every backend, because
a PostgreSQL store is shared by runners that may still run the older kubebench. ``schema_version`` in
``kubebench_meta`` is the authority (every migration sets it); Alembic's ``alembic_version`` names the
revision the migrations start from. Alembic is imported only to upgrade: it costs a third of a second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Column, Connection, Engine, MetaData, String, Table, insert, inspect, select

from ..errors import StoreError
from . import schema
from .engine import busy_timeout, safe_url, transaction
from .version import HEAD_REVISION, SCHEMA_VERSION

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")
#: The revision of schema version 1, the schema of stores made before Alembic was used.
FIRST_REVISION = "0001"

_alembic_version = Table("alembic_version", MetaData(), Column("version_num", String(32), primary_key=True))


@dataclass(frozen=True)
class SchemaState:
    """Where a store stands: ``version`` None means an empty database (a new store)."""

    version: int | None
    revision: str | None

    @property
    def current(self) -> bool:
        """At the schema this kubebench writes."""
        return self.version == SCHEMA_VERSION


def read_state(conn: Connection) -> SchemaState:
    """The store's schema version and Alembic revision."""
    tables = inspect(conn)
    if not tables.has_table(schema.meta.name):
        return SchemaState(None, None)
    version = conn.scalar(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version"))
    revision = conn.scalar(select(_alembic_version.c.version_num)) if tables.has_table("alembic_version") else None
    return SchemaState(int(version) if version is not None else None, revision)


def ensure_current(engine: Engine) -> None:
    """Create a new store at the newest schema; refuse a store of another schema with what to do."""
    state = _open(engine, time.monotonic() + busy_timeout(engine.url))
    if state is not None:
        _refuse_other(engine, state)


def _open(engine: Engine, deadline: float) -> SchemaState | None:
    """The state of a store that exists, or None once a new one is created.

    Two runners opening a new SQLite store at once: SQLite may answer one of them "database is
    locked" at once instead of making it wait (seen in CI; its busy handler is not called on some
    lock transitions, as while the other turns the new file to WAL). That answer is retried until
    the store's busy timeout has passed; nothing has been written by then.
    """
    while True:
        try:
            with transaction(engine, "open the store", write=True) as conn:
                state = read_state(conn)
                if state.version is None:
                    _create(conn)
                    return None
                return state
        except StoreError as e:
            if "database is locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _refuse_other(engine: Engine, state: SchemaState) -> None:
    version = state.version or 0
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the store {safe_url(engine)} has schema version {version}, newer than this kubebench "
            f"understands ({SCHEMA_VERSION}); upgrade kubebench"
        )
    if version < SCHEMA_VERSION:
        raise StoreError(
            f"the store {safe_url(engine)} has schema version {version}, older than this kubebench's "
            f"({SCHEMA_VERSION}); run `kubebench db upgrade` (with the same --store) to upgrade it"
        )


def _create(conn: Connection) -> None:
    schema.metadata.create_all(conn)
    _alembic_version.create(conn, checkfirst=True)
    conn.execute(insert(schema.meta).values(key="schema_version", value=str(SCHEMA_VERSION)))
    conn.execute(insert(_alembic_version).values(version_num=HEAD_REVISION))


def state(engine: Engine) -> SchemaState:
    """The store's schema state (for ``kubebench db status``)."""
    with transaction(engine, "read the schema version") as conn:
        return read_state(conn)


def upgrade(engine: Engine, revision: str = "head") -> tuple[SchemaState, SchemaState]:
    """Upgrade the store (to ``revision``, default the newest); return its state before and after.

    An empty database is created at the newest schema; a store made before Alembic was used
    (schema version 1, no ``alembic_version``) is first marked as revision ``0001``.
    """
    with transaction(engine, "upgrade the store", write=True) as conn:
        before = read_state(conn)
        if (before.version or 0) > SCHEMA_VERSION:
            _refuse_other(engine, before)
        if before.version is None and revision == "head":
            _create(conn)
        elif not (before.current and revision == "head"):
            _run_migrations(conn, before, revision)
        after = read_state(conn)
    return before, after


def _run_migrations(conn: Connection, before: SchemaState, revision: str) -> None:
    from alembic import command

    config = alembic_config(conn)
    if before.version is not None and before.revision is None:
        command.stamp(config, FIRST_REVISION)
    command.upgrade(config, revision)


def alembic_config(conn: Connection) -> Config:
    """An Alembic configuration that runs this package's migrations on ``conn`` (no alembic.ini)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = conn
    return config
