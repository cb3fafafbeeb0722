"""Schema version 2: each run's provenance (environment), its metrics as one JSON object, and
indexes for stores of 100,000s of runs.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 2


def upgrade() -> None:
    op.create_table(
        "provenance",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("data", sa.JSON, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        # SQLite adds a nullable column with a REFERENCES clause in place; Alembic would want to
        # rebuild the table (batch mode) to add the constraint separately.
        op.execute("ALTER TABLE runs ADD COLUMN provenance_id VARCHAR(32) REFERENCES provenance (id)")
    else:
        op.add_column("runs", sa.Column("provenance_id", sa.String(32), sa.ForeignKey("provenance.id")))
    op.create_index("ix_runs_provenance_id", "runs", ["provenance_id"])
    op.add_column("runs", sa.Column("metric_values", sa.JSON))
    _copy_metrics()
    op.drop_index("ix_runs_experiment_status", "runs")
    op.create_index("ix_runs_experiment_warmup_status", "runs", ["experiment_id", "warmup", "status"])
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))


def _copy_metrics(batch: int = 5000) -> None:
    """runs.metric_values from the rows of `metrics`, a batch of runs at a time (any database)."""
    conn = op.get_bind()
    metrics = sa.table("metrics", sa.column("run_id", sa.String), sa.column("name", sa.String),
                       sa.column("value", sa.Float))
    runs = sa.table("runs", sa.column("id", sa.String), sa.column("metric_values", sa.JSON))
    update = runs.update().where(runs.c.id == sa.bindparam("b_id")).values(metric_values=sa.bindparam("values"))
    pending: dict[str, dict[str, float]] = {}
    query = sa.select(metrics.c.run_id, metrics.c.name, metrics.c.value).order_by(metrics.c.run_id)
    for run_id, name, value in conn.execute(query).all():
        if run_id not in pending and len(pending) >= batch:
            conn.execute(update, [{"b_id": k, "values": v} for k, v in pending.items()])
            pending.clear()
        pending.setdefault(run_id, {})[name] = value
    if pending:
        conn.execute(update, [{"b_id": k, "values": v} for k, v in pending.items()])
