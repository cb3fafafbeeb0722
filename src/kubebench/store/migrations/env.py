"""Alembic's entry point: migrate the connection that kubebench.store.migrate hands over."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run the store's migrations with `kubebench db upgrade`, not the alembic command")

# Dropping or rebuilding a SQLite table (batch mode) cascades deletes while foreign keys are on:
# a migration that does so must turn them off first, outside the transaction.
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
