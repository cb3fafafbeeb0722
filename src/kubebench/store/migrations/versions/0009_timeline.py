"""Schema version 9: each run's timeline (submitted, scheduled, pulled, started, the workload's marks,
exited, collected, deleted …), one row per reading of a moment, with its source and precision.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 9


def upgrade() -> None:
    op.create_table(
        "run_timeline",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("replica", sa.String(128), nullable=False),
        sa.Column("t", sa.Float, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("precision", sa.Float, nullable=False),
        sa.Column("origin", sa.String(256), nullable=False),
    )
    op.create_index("ix_run_timeline_run_id", "run_timeline", ["run_id"])
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
