"""Schema version 8: input data — the datasets each experiment's trials read (cache key, checksum,
size, the time spent on each) and the experiment's ``data_prepare_seconds``.

Experiments made before have no data recorded (their runs read whatever was in the data root).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 8


def upgrade() -> None:
    op.add_column("experiments", sa.Column("data_prepare_seconds", sa.Float))
    op.create_table(
        "experiment_data",
        sa.Column("experiment_id", sa.String(80), sa.ForeignKey("experiments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("checksum", sa.String(96), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("origin", sa.Text, nullable=False),
        sa.Column("trials", sa.JSON, nullable=False),
        sa.Column("files", sa.Integer, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.Column("prepared", sa.Boolean, nullable=False),
        sa.Column("recorded_at", sa.Float, nullable=False),
    )
    op.create_index("ix_experiment_data_key", "experiment_data", ["key"])
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
