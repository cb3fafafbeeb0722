"""Alembic migrations of the store, run by :mod:`kubebench.store.migrate` (no alembic.ini)."""
