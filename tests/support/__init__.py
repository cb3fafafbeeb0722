"""Helpers shared by the tests (imported as ``support.*``: ``tests/`` is on sys.path through its conftest)."""
