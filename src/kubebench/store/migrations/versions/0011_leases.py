"""Schema version 11: experiment leases — which runner runs an experiment (owner token, host, pid) and
its heartbeat, so that runners on several machines sharing one store never run an experiment at once.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 11


def upgrade() -> None:
    op.create_table(
        "experiment_leases",
        sa.Column("experiment_id", sa.String(80), primary_key=True),
        sa.Column("owner", sa.String(32), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("acquired_at", sa.Float, nullable=False),
        sa.Column("heartbeat_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=False),
    )
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
