"""Two runner processes writing to one SQLite store at the same time lose nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.timing import scaled, wait_for
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.errors import StoreError
from kubebench.store import migrate
from kubebench.store.store import open_store

WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from kubebench.plan.plan import make_plan
    from kubebench.spec.model import BenchmarkSpec
    from kubebench.store.records import ExperimentRecord, RunResult
    from kubebench.store.store import open_store

    url, exp_id, runs, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    store = open_store(url)
    spec = BenchmarkSpec.model_validate({"name": "c", "job": {"command": ["true"]}, "repeats": runs})
    plan = make_plan(spec, exp_id, "f")
    Path(f"{go}-{exp_id}").touch()  # ready
    while not go.exists():  # both writers start together
        time.sleep(0.005)
    now = time.time()
    store.begin_experiment(ExperimentRecord(id=exp_id, name="c", backend="local", source="-", spec_text="",
                                            job_fingerprint="f", created_at=now, updated_at=now), plan)
    for i, run in enumerate(plan.runs):
        store.start_run(run.id, "/runs/" + run.id)
        store.finish_run(RunResult(run_id=run.id, status="succeeded", finished_at=time.time(),
                                   metrics={f"m{k}": float(i * 10 + k) for k in range(5)},
                                   provenance={"host": exp_id}))
""")


def test_two_writer_processes_lose_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kb.db'}"
    open_store(url).engine.dispose()
    go = tmp_path / "go"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, url, f"exp-{i}", "150", str(go)],
                                stderr=subprocess.PIPE, text=True) for i in range(2)]
    wait_for(lambda: all(Path(f"{go}-exp-{i}").exists() or writers[i].poll() is not None for i in range(2)), 60,
             "both writers to be ready")
    go.touch()
    for writer in writers:
        _, err = writer.communicate(timeout=scaled(120))
        assert writer.returncode == 0, err
    store = open_store(url)
    for i in range(2):
        runs = store.runs(f"exp-{i}")
        assert len(runs) == 150 and {r.status for r in runs} == {"succeeded"}
        assert sorted(r.metrics["m3"] for r in runs) == [float(n * 10 + 3) for n in range(150)]
        assert {r.provenance["host"] for r in runs} == {f"exp-{i}"}


SPEC = """
name: together
job:
  command: [python, -c, "import kubebench; kubebench.report(v={{ n }})"]
parameters:
  n: [1, 2, 3, 4, 5, 6]
"""


@pytest.mark.slow
def test_two_kubebench_runs_at_once_share_one_store(home: Path, write) -> None:
    spec = write("spec.yaml", SPEC)
    command = [sys.executable, "-m", "kubebench", "run", str(spec), "--id"]
    runs = [subprocess.Popen([*command, f"together-{i}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True) for i in range(2)]
    for run in runs:
        out, _ = run.communicate(timeout=240)
        assert run.returncode == 0, out
    store = open_store(f"sqlite:///{home / 'kubebench.db'}")
    for i in range(2):
        assert sorted(r.metrics["v"] for r in store.runs(f"together-{i}")) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert CliRunner().invoke(app, ["experiments"]).exit_code == 0


def test_opening_retries_an_immediate_locked_answer_until_the_busy_timeout(tmp_path: Path, monkeypatch) -> None:
    """SQLite can answer "database is locked" at once to a runner opening a new store while another
    creates it (seen in CI): opening retries that answer until the store's busy timeout."""
    real, calls = migrate.transaction, []

    def locked_at_first(engine, what, write=False):
        calls.append(what)
        if len(calls) <= 2:
            raise StoreError("store x: cannot open the store: database is locked (…)")
        return real(engine, what, write)

    monkeypatch.setattr(migrate, "transaction", locked_at_first)
    store = open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    assert len(calls) == 3 and store.experiments() == []
    calls.clear()
    with pytest.raises(StoreError, match="database is locked"):  # ?timeout=0: one more try at most
        open_store(f"sqlite:///{tmp_path / 'other.db'}?timeout=0")
    assert len(calls) <= 2


def test_opening_does_not_retry_other_errors(tmp_path: Path, monkeypatch) -> None:
    calls = []

    def failing(engine, what, write=False):
        calls.append(what)
        raise StoreError("store x: cannot open the store: disk I/O error")

    monkeypatch.setattr(migrate, "transaction", failing)
    with pytest.raises(StoreError, match="disk I/O error"):
        open_store(f"sqlite:///{tmp_path / 'kb.db'}")
    assert calls == ["open the store"]
