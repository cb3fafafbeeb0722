"""Experiment leases: which runner runs an experiment, held in the store itself (schema version 10).

A runner on one machine cannot see another machine's lock file, so on a store that runners share
(PostgreSQL) the lock is a row: the runner's random owner token, its host and pid, and a heartbeat. Times
are the database's clock, so that machines whose clocks differ agree on when a lease has expired. A
lease whose ``expires_at`` has passed was left by a runner that died (or lost the store for longer than
the lease lasts): the next runner takes it over. Every statement here runs in the caller's transaction;
the row is read ``FOR UPDATE`` so that two runners deciding at once are serialised by the database.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select, text, update

from ..errors import LeaseLost
from . import schema

_l = schema.experiment_leases


@dataclass(frozen=True)
class Lease:
    """Who holds (or held) an experiment's lease, as the store says, and how old its heartbeat is."""

    experiment_id: str
    owner: str
    host: str
    pid: int
    acquired_at: float
    heartbeat_at: float
    expires_at: float
    #: the database's clock when this was read
    now: float

    @property
    def alive(self) -> bool:
        """Whether the holder's last heartbeat is recent enough: its runner is taken to be running."""
        return self.expires_at > self.now

    @property
    def silent_s(self) -> float:
        """Seconds since the holder's last heartbeat."""
        return max(0.0, self.now - self.heartbeat_at)

    def describe(self) -> str:
        """``host H, pid P, last heartbeat 3 s ago`` for messages."""
        return f"host {self.host}, pid {self.pid}, last heartbeat {self.silent_s:.0f} s ago"


def db_now(conn: Connection) -> float:
    """Seconds since the epoch by the database's clock (this machine's for other databases than
    PostgreSQL and SQLite; SQLite's clock is this machine's anyway)."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        return float(conn.scalar(text("SELECT extract(epoch FROM clock_timestamp())")))
    if dialect == "sqlite":
        return float(conn.scalar(text("SELECT (julianday('now') - 2440587.5) * 86400.0")))
    return time.time()


def current(conn: Connection, experiment_id: str, lock: bool = False) -> Lease | None:
    """The experiment's lease row, if any (``lock``: read FOR UPDATE)."""
    query = select(_l).where(_l.c.experiment_id == experiment_id)
    row = conn.execute(query.with_for_update() if lock else query).first()
    return Lease(**row._mapping, now=db_now(conn)) if row is not None else None


def acquire(conn: Connection, experiment_id: str, owner: str, host: str, pid: int, ttl: float,
            dead_owner: str | None = None) -> tuple[bool, Lease | None]:
    """Take the lease: ``(True, None)`` when it was free, ``(True, previous)`` when it was taken over
    from ``previous`` (expired, or its owner is ``dead_owner``: known dead), ``(False, holder)`` when
    another runner holds it."""
    row = {"experiment_id": experiment_id, "owner": owner, "host": host[:255], "pid": pid}
    for _ in range(2):  # a row inserted by another runner meanwhile is read on the second pass
        found = current(conn, experiment_id, lock=True)
        now = db_now(conn)
        times = {"acquired_at": now, "heartbeat_at": now, "expires_at": now + ttl}
        if found is None:
            if _insert_if_absent(conn, {**row, **times}):
                return True, None
            continue
        if found.owner != owner and found.alive and found.owner != dead_owner:
            return False, found
        conn.execute(update(_l).where(_l.c.experiment_id == experiment_id, _l.c.owner == found.owner)
                     .values(**row, **times))
        return True, (found if found.owner != owner else None)
    raise AssertionError("unreachable: a lease row that is neither absent nor present")  # pragma: no cover


def _insert_if_absent(conn: Connection, row: dict[str, object]) -> bool:
    """Insert the lease row unless one exists (another runner's, inserted at the same moment)."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return conn.execute(postgresql.insert(_l).values(**row).on_conflict_do_nothing()).rowcount == 1
    if dialect == "sqlite":
        from sqlalchemy.dialects import sqlite

        return conn.execute(sqlite.insert(_l).values(**row).on_conflict_do_nothing()).rowcount == 1
    conn.execute(insert(_l).values(**row))
    return True


def renew(conn: Connection, experiment_id: str, owner: str, ttl: float) -> bool:
    """The holder's heartbeat; False when the lease is no longer its own (taken over)."""
    now = db_now(conn)
    return conn.execute(update(_l).where(_l.c.experiment_id == experiment_id, _l.c.owner == owner)
                        .values(heartbeat_at=now, expires_at=now + ttl)).rowcount == 1


def release(conn: Connection, experiment_id: str, owner: str) -> None:
    """Give the lease up (only if it is still the owner's)."""
    conn.execute(delete(_l).where(_l.c.experiment_id == experiment_id, _l.c.owner == owner))


def check_held(conn: Connection, held: Mapping[str, str]) -> None:
    """LeaseLost unless every lease in ``held`` (experiment id → owner) is still its owner's.

    Read ``FOR SHARE``: a runner taking one over waits until this transaction ends, so a write
    that passed this check never lands after a takeover."""
    rows = conn.execute(select(_l.c.experiment_id, _l.c.owner, _l.c.host, _l.c.pid)
                        .where(_l.c.experiment_id.in_(list(held))).with_for_update(read=True)).all()
    found = {r.experiment_id: r for r in rows}
    for experiment_id, owner in held.items():
        row = found.get(experiment_id)
        if row is None or row.owner != owner:
            who = f"by host {row.host}, pid {row.pid}" if row is not None else "(its lease was removed)"
            raise LeaseLost(f"experiment {experiment_id!r} was taken over {who}: this runner's lease expired "
                            "(no heartbeat reached the store in time); it stops, and the new runner goes on")
