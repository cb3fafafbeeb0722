"""Schema version 10: sequential decisions (``kubebench run --decide-against``) — each trial's
verdict against its base, the runs it took and its intervals.

Experiments made before have none (they were run to their full repeats).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 10


def upgrade() -> None:
    op.create_table(
        "trial_decisions",
        sa.Column("experiment_id", sa.String(80), sa.ForeignKey("experiments.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("trial_id", sa.String(32), sa.ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("metric", sa.String(128), primary_key=True),
        sa.Column("goal", sa.String(16), nullable=False),
        sa.Column("against", sa.Text, nullable=False),
        sa.Column("base_experiments", sa.JSON, nullable=False),
        sa.Column("verdict", sa.String(16), nullable=False),
        sa.Column("runs", sa.Integer, nullable=False),
        sa.Column("base_runs", sa.Integer, nullable=False),
        sa.Column("min_runs", sa.Integer, nullable=False),
        sa.Column("max_runs", sa.Integer, nullable=False),
        sa.Column("ratio", sa.Float),
        sa.Column("ci_low", sa.Float),
        sa.Column("ci_high", sa.Float),
        sa.Column("band_low", sa.Float),
        sa.Column("band_high", sa.Float),
        sa.Column("alpha", sa.Float, nullable=False),
        sa.Column("beta", sa.Float, nullable=False),
        sa.Column("margin", sa.Float, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("sequential", sa.Boolean, nullable=False),
        sa.Column("decided_at", sa.Float, nullable=False),
    )
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
