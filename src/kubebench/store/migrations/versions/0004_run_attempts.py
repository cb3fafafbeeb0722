"""Schema version 4: every attempt of a run (retries of infrastructure failures, runs found
interrupted by a resumed runner), with its status, reason, exit code and times.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 4


def upgrade() -> None:
    op.create_table(
        "run_attempts",
        sa.Column("run_id", sa.String(32), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("attempt", sa.Integer, primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("exit_code", sa.Integer),
        sa.Column("started_at", sa.Float),
        sa.Column("finished_at", sa.Float),
    )
    # The runs that ended before attempts were recorded: their last attempt, as the runs table has it.
    op.execute(sa.text(
        "INSERT INTO run_attempts (run_id, attempt, status, reason, exit_code, started_at, finished_at) "
        "SELECT id, attempts, status, reason, exit_code, started_at, finished_at FROM runs "
        "WHERE attempts > 0 AND status NOT IN ('pending', 'running')"
    ))
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))
