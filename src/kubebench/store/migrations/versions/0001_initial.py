"""Schema version 1: experiments, trials, runs, metrics (the store before Alembic).

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None
SCHEMA_VERSION = 1


def upgrade() -> None:
    meta = op.create_table(
        "kubebench_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.String(256), nullable=False),
    )
    op.create_table(
        "experiments",
        sa.Column("id", sa.String(80), primary_key=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("backend", sa.String(64), nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("spec_text", sa.Text, nullable=False),
        sa.Column("job_fingerprint", sa.String(32), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_index("ix_experiments_name", "experiments", ["name"])
    op.create_index("ix_experiments_created_at", "experiments", ["created_at"])
    op.create_table(
        "trials",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("experiment_id", sa.String(80), sa.ForeignKey("experiments.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("index", sa.Integer, nullable=False),
        sa.Column("params", sa.JSON, nullable=False),
    )
    op.create_index("ix_trials_experiment_id", "trials", ["experiment_id"])
    _create_runs()
    op.create_table(
        "metrics",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
    )
    op.bulk_insert(meta, [{"key": "schema_version", "value": str(SCHEMA_VERSION)}])


def _create_runs() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("experiment_id", sa.String(80), sa.ForeignKey("experiments.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("trial_id", sa.String(32), sa.ForeignKey("trials.id", ondelete="CASCADE"), nullable=False),
        sa.Column("repeat", sa.Integer, nullable=False),
        sa.Column("warmup", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("log_tail", sa.Text, nullable=False),
        sa.Column("info", sa.JSON, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("started_at", sa.Float),
        sa.Column("finished_at", sa.Float),
        sa.Column("path", sa.Text, nullable=False),
    )
    op.create_index("ix_runs_trial_id", "runs", ["trial_id"])
    op.create_index("ix_runs_experiment_status", "runs", ["experiment_id", "status"])
