"""The store's schema version, where code that must not import SQLAlchemy can read it.

``SCHEMA_VERSION`` goes up with every change of the tables in :mod:`.schema`, and each change comes
with an Alembic migration in ``migrations/versions`` whose revision becomes ``HEAD_REVISION``; a test
checks that the migrations and the tables agree.
"""

SCHEMA_VERSION = 11
#: The Alembic revision of ``SCHEMA_VERSION`` (checked against the migrations by a test).
HEAD_REVISION = "0011"
