"""Schema version 3: the telemetry of runs (time series of CPU, memory, GPU … per run).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 3


def upgrade() -> None:
    op.create_table(
        "telemetry",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("series", sa.String(128), nullable=False),
        sa.Column("t", sa.Float, nullable=False),
        sa.Column("value", sa.Float, nullable=False),
    )
    op.create_index("ix_telemetry_run_id", "telemetry", ["run_id"])
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
