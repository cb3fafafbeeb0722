"""The sqlite3 reader behind `kubebench results`: the same records as the Store, or the Store itself."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kubebench.errors import NotFoundError, StoreError
from kubebench.plan.plan import make_plan
from kubebench.spec.model import BenchmarkSpec
from kubebench.store.reader import SqliteReader, open_results
from kubebench.store.records import FAILED_STATES, ExperimentRecord, RunRecord, RunResult, TrialResults
from kubebench.store.store import Store, open_store

from test_migrate import make_v1_store


def _fill(url: str) -> None:
    """Two experiments: warmups, every run state, info, provenance, parameters of several types."""
    store = open_store(url)
    spec = BenchmarkSpec.model_validate({
        "name": "mixed", "job": {"command": ["true"]}, "warmup_runs": 1, "repeats": 3,
        "parameters": {"bs": [8, 16], "opt": ["sgd"], "lr": [0.1], "amp": [True], "dims": [None]},
        "metrics": [{"name": "ips", "primary": True}, {"name": "loss", "goal": "minimize"}],
    })
    for exp_id, created in (("older", 100.0), ("mixed", 200.0)):
        plan = make_plan(spec, exp_id, "f1")
        store.begin_experiment(ExperimentRecord(
            id=exp_id, name="mixed", backend="local", source="s.yaml", spec_text=spec.model_dump_json(),
            job_fingerprint="f1", created_at=created, updated_at=created), plan)
    outcomes = [("succeeded", {"ips": 812.5, "loss": 0.25}, 0, ""),
                ("failed", {}, 3, "worker-0 exited with code 3"),
                ("timeout", {}, None, "timed out after 30s"),
                ("succeeded", {"ips": 1e-300, "loss": -0.0}, 0, "")]
    for i, run in enumerate(plan.runs[:-2]):  # the last two stay pending
        status, metrics, code, reason = outcomes[i % len(outcomes)]
        store.start_run(run.id, f"/runs/{run.id}")
        store.finish_run(RunResult(run_id=run.id, status=status, metrics=metrics, exit_code=code, reason=reason,
                                   info={"host": "n1"} if i % 2 else {}, log_tail="ünïcode tail",
                                   provenance={"python": "3.11", "node": f"n{i % 2}"}, finished_at=time.time()))
    store.start_run(plan.runs[-2].id, "/runs/x")  # left running
    store.engine.dispose()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'kb.db'}"
    _fill(url)
    return url


@pytest.mark.parametrize("include_warmup", [False, True])
@pytest.mark.parametrize("logs", [False, True])
def test_the_reader_returns_what_the_store_returns(sqlite_url: str, include_warmup: bool, logs: bool) -> None:
    reader, store = open_results(sqlite_url), open_store(sqlite_url)
    assert isinstance(reader, SqliteReader)
    for exp_id in ("older", "mixed"):  # `mixed` has runs in every state
        assert reader.experiment(exp_id) == store.experiment(exp_id)
        runs = reader.runs(exp_id, include_warmup=include_warmup, logs=logs)
        assert runs == store.runs(exp_id, include_warmup=include_warmup, logs=logs)
    assert {r.status for r in runs} == {"succeeded", "failed", "timeout", "running", "pending"}
    assert any(r.warmup for r in runs) is include_warmup
    assert any(r.provenance for r in runs) and any(r.info for r in runs)
    assert {r.log_tail for r in runs} == ({"", "ünïcode tail"} if logs else {""})
    assert reader.experiment("mixed").primary_metric() == "ips"


def assert_trials_are_the_runs_by_trial(trials: list[TrialResults], runs: list[RunRecord]) -> None:
    assert [t.trial_id for t in trials] == list(dict.fromkeys(r.trial_id for r in runs))
    for trial in trials:
        mine = [r for r in runs if r.trial_id == trial.trial_id]
        assert trial.params == mine[0].params
        assert trial.runs_by_status == dict(Counter(r.status for r in mine))
        assert trial.metrics == [r.metrics for r in mine if r.status == "succeeded"]


def test_trial_results_are_the_counted_runs_by_trial(sqlite_url: str) -> None:
    reader, store = open_results(sqlite_url), open_store(sqlite_url)
    for exp_id in ("older", "mixed"):
        trials = reader.trial_results(exp_id)
        assert trials == store.trial_results(exp_id)
        assert_trials_are_the_runs_by_trial(trials, store.runs(exp_id))
    assert sum(len(t.metrics) for t in trials) == 2  # of `mixed`'s 6 counted runs, 2 succeeded


def test_runs_in_some_states(sqlite_url: str) -> None:
    reader, store = open_results(sqlite_url), open_store(sqlite_url)
    failed = reader.runs("mixed", include_warmup=True, statuses=FAILED_STATES)
    assert failed == store.runs("mixed", include_warmup=True, statuses=FAILED_STATES)
    assert failed == [r for r in store.runs("mixed", include_warmup=True) if r.status in FAILED_STATES]
    assert {r.status for r in failed} == {"failed", "timeout"} and any(r.warmup for r in failed)


def test_an_unknown_experiment_is_the_same_error(sqlite_url: str) -> None:
    reader = open_results(sqlite_url)
    for read in (reader.experiment, reader.runs, reader.trial_results):
        with pytest.raises(NotFoundError, match="no experiment 'nope' in the store"):
            read("nope")


def test_reading_while_a_runner_holds_the_write_lock(sqlite_url: str) -> None:
    writer = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE runs SET reason = 'changing' WHERE experiment_id = 'mixed'")
    try:
        runs = open_results(sqlite_url).runs("mixed")  # WAL: the last committed state, no waiting
        assert "changing" not in {r.reason for r in runs}
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.parametrize("url", [
    "sqlite:///{db}?timeout=5",
    "sqlite+pysqlite:///{db}",
])
def test_plain_sqlite_urls_are_read_directly(sqlite_url: str, url: str) -> None:
    db = sqlite_url.removeprefix("sqlite:///")
    assert isinstance(open_results(url.format(db=db)), SqliteReader)


@pytest.mark.parametrize("url", [
    "sqlite:///{db}?mode=ro&uri=true",  # options only SQLAlchemy knows
    "sqlite://",  # in memory
    "sqlite:///{missing}",  # no file yet: the Store creates it
])
def test_other_sqlite_urls_go_through_the_store(tmp_path: Path, sqlite_url: str, url: str) -> None:
    opened = open_results(url.format(db=sqlite_url.removeprefix("sqlite:///"), missing=tmp_path / "new.db"))
    assert isinstance(opened, Store)


def test_a_postgresql_store_goes_through_the_store(postgres_url: str) -> None:
    _fill(postgres_url)
    opened = open_results(postgres_url)
    assert isinstance(opened, Store)
    runs = opened.runs("mixed")
    assert {r.status for r in runs} == {"succeeded", "failed", "timeout", "running", "pending"}
    assert_trials_are_the_runs_by_trial(opened.trial_results("mixed"), runs)
    assert {r.status for r in opened.runs("mixed", statuses=["timeout"])} == {"timeout"}


def test_an_older_store_gets_the_stores_error(tmp_path: Path) -> None:
    old = f"sqlite:///{tmp_path / 'old.db'}"
    make_v1_store(old, before_alembic=False)
    with pytest.raises(StoreError, match="run `kubebench db upgrade`"):
        open_results(old)  # (a newer store: tests/store/test_store.py)


def test_a_file_that_is_not_a_store_gets_the_stores_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("not a database\n" * 100)
    with pytest.raises(StoreError, match="store"):
        open_results(f"sqlite:///{bad}")
    assert bad.read_text().startswith("not a database")  # left as it was


def test_a_read_error_names_the_store_and_what_failed(sqlite_url: str) -> None:
    reader = open_results(sqlite_url)
    with sqlite3.connect(sqlite_url.removeprefix("sqlite:///")) as conn:  # a table it needs disappears under it
        conn.execute("DROP TABLE provenance")
    with pytest.raises(StoreError, match=r"store sqlite:///.*kb\.db: cannot read runs: no such table: provenance"):
        reader.runs("mixed")


def test_results_on_sqlite_import_neither_sqlalchemy_nor_scipy(sqlite_url: str, tmp_path: Path) -> None:
    """What keeps `kubebench results` fast (its timing is in bench/harness.py)."""
    out = tmp_path / "runs.json"
    code = (
        "import sys\n"
        "from kubebench.cli import app\n"
        "for args in (['results', 'mixed'], ['results', 'mixed', '-f', 'json', '-o', sys.argv[2]]):\n"
        "    try:\n"
        "        app([*args, '--store', sys.argv[1]])\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), e.code\n"
        "print(sorted(m for m in ('sqlalchemy', 'numpy', 'scipy', 'pandas') if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run([sys.executable, "-c", code, sqlite_url, str(out)], capture_output=True, text=True,
                          timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert "812" in done.stdout  # the table was printed (3 significant digits)
    assert "of mean" in done.stdout  # whole: written to a pipe, not squeezed into 80 columns
    assert len(json.loads(out.read_text())) == 6  # 2 trials × 3 repeats (warmups are not results)
