"""SQLAlchemy engines for store URLs: SQLite tuned for several runners at once, others as given."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry

from ..errors import StoreError, StoreFileError
from ..redact import mask_url, remember_store
from .sqlite import BUSY_TIMEOUT_S, explain

CONNECT_TIMEOUT_S = 10
#: How long a 0-byte SQLite file may take to become a store (another runner creating it) before it is refused.
EMPTY_FILE_WAIT_S = 1.0
_DRIVER_HINTS = {"postgresql": "pip install 'kubebench[postgres]' (psycopg)"}


def parse_url(url: str) -> URL:
    """The SQLAlchemy URL, or a StoreError that names the bad one."""
    try:
        return make_url(url)
    except ArgumentError as e:
        raise StoreError(f"store URL {mask_url(url)!r} is not a valid SQLAlchemy URL: {mask_url(str(e))}") from e


def make_engine(url: str) -> Engine:
    """An engine for ``url``; a SQLite file's folder is created, its connections tuned (see below)."""
    parsed = parse_url(url)
    remember_store(url)
    shown = safe_url_of(parsed)
    backend = parsed.get_backend_name()
    if backend == "sqlite" and parsed.database not in (None, "", ":memory:"):
        try:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"store URL {shown!r}: cannot create the folder of the database: {e}") from e
        refuse_empty_file(Path(parsed.database))
    try:
        busy = busy_timeout(parsed)
    except (TypeError, ValueError):
        raise StoreError(f"store URL {shown!r}: timeout must be a number of seconds") from None
    try:
        engine = create_engine(parsed, **_engine_options(backend, parsed.get_driver_name(), busy))
    except (NoSuchModuleError, ImportError) as e:
        hint = _DRIVER_HINTS.get(backend, "install its SQLAlchemy driver")
        raise StoreError(f"store URL {shown!r}: database driver not installed ({hint}): {mask_url(str(e))}") from e
    if backend == "sqlite":
        event.listen(engine, "connect", partial(_sqlite_connect, busy_timeout=busy))
        event.listen(engine, "begin", _sqlite_begin)
    return engine


def refuse_empty_file(path: Path, wait: float = EMPTY_FILE_WAIT_S) -> None:
    """StoreError for a SQLite file of 0 bytes: a store that lost its contents (a truncation, a full
    disk, a bad copy) must not be taken silently for a new, empty one.

    A store being created by another runner is 0 bytes for the moment between its creation and its
    first page (SQLite writes it when WAL is turned on): such a file is waited for, ``wait`` seconds.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            if path.stat().st_size > 0:
                return
        except OSError:
            return  # no file: a new store is made
        if time.monotonic() >= deadline:
            raise StoreError(f"store {path} is an empty file (0 bytes), not a kubebench store: restore it from "
                             "a backup if it held results, or remove it to start a new store there")
        time.sleep(0.01)


def busy_timeout(url: URL) -> float:
    """How long a SQLite writer waits for the lock (``?timeout=S``); others: ``BUSY_TIMEOUT_S``."""
    if url.get_backend_name() != "sqlite":
        return BUSY_TIMEOUT_S
    value = url.query.get("timeout", BUSY_TIMEOUT_S)
    return float(value[-1] if isinstance(value, tuple) else value)  # a repeated key: SQLAlchemy gives a tuple


def writer(engine: Engine) -> Engine:
    """The same engine, marked so that its transactions take SQLite's write lock at BEGIN."""
    return engine.execution_options(kubebench_write=True)


@contextmanager
def transaction(engine: Engine, what: str, write: bool = False) -> Iterator[Connection]:
    """One transaction; a database error becomes a StoreError saying what could not be done."""
    try:
        with (writer(engine) if write else engine).begin() as conn:
            yield conn
    except SQLAlchemyError as e:
        message = first_line(e)
        if engine.dialect.name == "sqlite":
            message = explain(message)
        raise StoreError(f"store {safe_url(engine)}: cannot {what}: {message}") from e


def safe_url(engine: Engine) -> str:
    """The engine's URL for messages, password hidden."""
    return safe_url_of(engine.url)


def safe_url_of(url: URL) -> str:
    """A parsed store URL for messages: SQLAlchemy's rendering with the password hidden, and a
    password given in the query (libpq reads one there) hidden too."""
    return mask_url(url.render_as_string(hide_password=True))


def first_line(e: Exception) -> str:
    """The first line of a driver's error message."""
    text = str(getattr(e, "orig", None) or e)
    return text.strip().splitlines()[0] if text.strip() else type(e).__name__


def _engine_options(backend: str, driver: str, busy: float = BUSY_TIMEOUT_S) -> dict[str, Any]:
    if backend == "sqlite":
        return {"connect_args": {"timeout": busy}}
    options: dict[str, Any] = {"pool_pre_ping": True}
    if backend == "postgresql" and driver in ("psycopg", "psycopg2"):
        options["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
    return options


def _sqlite_connect(dbapi_connection: sqlite3.Connection, _record: ConnectionPoolEntry,
                    busy_timeout: float = BUSY_TIMEOUT_S) -> None:
    # WAL lets readers work while a runner writes; with WAL, synchronous=NORMAL stays consistent
    # after a crash and saves an fsync per commit; foreign keys make deletes cascade.
    # isolation_level=None: SQLAlchemy emits BEGIN itself (_sqlite_begin), so that reads are
    # consistent and writers queue on the lock instead of failing (sqlite3's own BEGIN is deferred
    # to the first write, and a deferred transaction that must upgrade to a writer fails at once).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # A writer takes the lock at BEGIN IMMEDIATE, where busy_timeout makes it wait its turn.
    write = conn.get_execution_options().get("kubebench_write", False)
    refuse_unwritable_shm(conn.engine.url.database)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def no_store_yet(url: str) -> bool:
    """A SQLite store whose file does not exist (a new home): it has no experiments, and reading it
    must not create it."""
    parsed = make_url(url)
    database = parsed.database or ""
    return parsed.get_backend_name() == "sqlite" and database not in ("", ":memory:") and not Path(database).exists()


def refuse_unwritable_shm(database: str | None) -> None:
    """StoreFileError when the store's ``-shm`` file exists and can no longer be written.

    SQLite maps that file into memory; once it is made read-only under a running process (``chattr +i``,
    a read-only bind mount) the next write to the mapping is a SIGBUS that kills the process without
    a word (review 2026-12-02 N19). Every transaction reads and writes it, so each one looks first: the
    store is left as the last transaction left it, and a resume once the file is writable completes."""
    if not database or database == ":memory:":
        return
    shm = f"{database}-shm"
    try:
        writable = os.access(shm, os.W_OK)
    except (OSError, ValueError):
        return
    if not writable and os.path.exists(shm):
        raise StoreFileError(f"store {database}: its shared-memory file {shm} is not writable any more (made read-only "
                         "or immutable?); kubebench stops before SQLite would crash on it: make it writable (or "
                         "remove it while no kubebench uses the store), then resume")
