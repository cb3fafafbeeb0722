"""Schema versions: new stores at the newest schema, old ones upgraded by `kubebench db upgrade`, newer refused."""

from __future__ import annotations

import pytest
from sqlalchemy import text, update
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.errors import StoreError
from kubebench.store import migrate, schema
from kubebench.store.engine import make_engine
from kubebench.store.store import open_store
from kubebench.store.version import HEAD_REVISION, SCHEMA_VERSION

runner = CliRunner(env={"COLUMNS": "200"})

V1_ROWS = [
    "INSERT INTO experiments VALUES ('old-exp', 'old', 'local', 's.yaml', 'name: old', 'f1', 10.0, 11.0)",
    "INSERT INTO trials VALUES ('t1', 'old-exp', 0, '{\"bs\": 8}')",
    "INSERT INTO runs VALUES ('r1', 'old-exp', 't1', 0, false, 'succeeded', 0, '', 'tail', '{}', 1, 10.0, 12.0, '/x/r1')",
    "INSERT INTO metrics VALUES ('r1', 'ips', 812.5)",
]


def make_v1_store(url: str, before_alembic: bool) -> None:
    """A store as kubebench wrote it at schema version 1, with one run."""
    engine = make_engine(url)
    migrate.upgrade(engine, migrate.FIRST_REVISION)
    with engine.begin() as conn:
        for statement in V1_ROWS:
            conn.execute(text(statement))
        if before_alembic:  # stores made before Alembic have no alembic_version table
            conn.execute(text("DROP TABLE alembic_version"))
    engine.dispose()


def test_head_revision_is_the_migrations_head() -> None:
    from alembic.script import ScriptDirectory

    assert ScriptDirectory(str(migrate.MIGRATIONS)).get_current_head() == HEAD_REVISION


def test_a_new_store_starts_at_the_newest_schema(store_url: str) -> None:
    engine = open_store(store_url).engine
    assert migrate.state(engine) == migrate.SchemaState(SCHEMA_VERSION, HEAD_REVISION)
    engine.dispose()


def test_the_migrations_make_the_schema_of_the_tables(store_url: str) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = make_engine(store_url)  # every migration from an empty database, not create_all
    assert migrate.upgrade(engine, migrate.FIRST_REVISION)[1].version == 1
    assert migrate.upgrade(engine)[1] == migrate.SchemaState(SCHEMA_VERSION, HEAD_REVISION)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), schema.metadata) == []
    engine.dispose()


@pytest.mark.parametrize("before_alembic", [True, False], ids=["pre-alembic", "revision-0001"])
def test_an_old_store_is_refused_until_db_upgrade_keeps_its_rows(store_url: str, before_alembic: bool) -> None:
    make_v1_store(store_url, before_alembic)
    with pytest.raises(StoreError, match=r"schema version 1, older .* run `kubebench db upgrade`"):
        open_store(store_url)
    status = runner.invoke(app, ["db", "status", "--store", store_url])
    assert status.exit_code == 0 and "schema version 1" in status.output and "kubebench db upgrade" in status.output
    done = runner.invoke(app, ["db", "upgrade", "--store", store_url])
    assert done.exit_code == 0, done.output
    assert f"schema version 1 → {SCHEMA_VERSION}" in done.output
    store = open_store(store_url)
    [run] = store.runs("old-exp")
    assert (run.run_id, run.params, run.metrics, run.path, run.provenance) == ("r1", {"bs": 8}, {"ips": 812.5}, "/x/r1", {})
    assert migrate.state(store.engine).revision == HEAD_REVISION
    again = runner.invoke(app, ["db", "upgrade", "--store", store_url])
    assert again.exit_code == 0 and "already at schema version" in again.output
    store.engine.dispose()


def test_db_upgrade_refuses_a_newer_store(store_url: str) -> None:
    engine = open_store(store_url).engine
    with engine.begin() as conn:
        conn.execute(update(schema.meta).values(value=str(SCHEMA_VERSION + 1)))
    engine.dispose()
    done = runner.invoke(app, ["db", "upgrade", "--store", store_url])
    assert done.exit_code == 2
    assert "newer than this kubebench understands" in done.output and "Traceback" not in done.output
