"""Schema version 5: each experiment's state (derived from its runs), and indexes that cover the
dashboard's listing, so that it filters, pages and counts 10,000s of experiments by state in
milliseconds (see kubebench.store.listing).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None
SCHEMA_VERSION = 5


def upgrade() -> None:
    op.add_column("experiments", sa.Column("state", sa.String(16), nullable=False, server_default="pending"))
    op.create_index("ix_experiments_state_created_at", "experiments", ["state", "created_at"])
    op.create_index("ix_experiments_listing", "experiments", ["created_at", "id", "name", "backend", "state"])
    _fill_states()
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'")
               .bindparams(v=str(SCHEMA_VERSION)))


def _fill_states() -> None:
    """Every experiment's state from the statuses of its counted runs (one grouped scan of the runs)."""
    from kubebench.store.records import experiment_state

    conn = op.get_bind()
    runs = sa.table("runs", sa.column("experiment_id", sa.String), sa.column("warmup", sa.Boolean),
                    sa.column("status", sa.String))
    experiments = sa.table("experiments", sa.column("id", sa.String), sa.column("state", sa.String))
    present: dict[str, set[str]] = {}
    query = (sa.select(runs.c.experiment_id, runs.c.status).where(runs.c.warmup.is_(False))
             .group_by(runs.c.experiment_id, runs.c.status))
    for exp_id, status in conn.execute(query).all():
        present.setdefault(exp_id, set()).add(status)
    update = experiments.update().where(experiments.c.id == sa.bindparam("b_id")).values(state=sa.bindparam("b_state"))
    values = [{"b_id": exp_id, "b_state": experiment_state(statuses)} for exp_id, statuses in present.items()]
    for start in range(0, len(values), 5000):
        conn.execute(update, values[start:start + 5000])
