"""Schema version 7: series and history — each experiment's series and run-time labels, step changes
accepted as intended, noise floors measured by A/A runs, and notes and tags on experiments.

Existing experiments join the series of their name (a spec's ``series:`` did not exist before).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 7


def upgrade() -> None:
    op.add_column("experiments", sa.Column("series", sa.String(128), nullable=False, server_default=""))
    op.add_column("experiments", sa.Column("labels", sa.JSON, nullable=False, server_default="{}"))
    op.execute(sa.text("UPDATE experiments SET series = name"))
    op.create_index("ix_experiments_series_created_at", "experiments", ["series", "created_at"])
    op.create_table(
        "series_changes",
        sa.Column("series", sa.String(128), primary_key=True),
        sa.Column("experiment_id", sa.String(80), sa.ForeignKey("experiments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("metric", sa.String(128), primary_key=True),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_table(
        "noise_floors",
        sa.Column("series", sa.String(128), primary_key=True),
        sa.Column("trial_key", sa.String(1024), primary_key=True),
        sa.Column("metric", sa.String(128), primary_key=True),
        sa.Column("spread", sa.Float, nullable=False),
        sa.Column("cv", sa.Float, nullable=False),
        sa.Column("experiments", sa.JSON, nullable=False),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "experiment_notes",
        sa.Column("experiment_id", sa.String(80), sa.ForeignKey("experiments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("tags", sa.JSON, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
