"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
${imports if imports else ""}
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None
SCHEMA_VERSION = None  # the schema version this revision makes: set it, and kubebench.store.version's (with HEAD_REVISION)


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}
    op.execute(sa.text("UPDATE kubebench_meta SET value = :v WHERE key = 'schema_version'").bindparams(v=str(SCHEMA_VERSION)))
