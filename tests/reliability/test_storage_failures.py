"""A full disk, an unwritable folder, a locked or unreachable store: `kubebench run` stops with one
clear line (no traceback, non-zero exit), nothing stored before is damaged, and a resume finishes."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from reliability_support import Cli
from support.timing import scaled

SPEC = """
name: disk
job:
  command: [python, -c, "{code}"]
parameters:
  n: [1, 2, 3, 4, 5, 6]
metrics: [{{name: v}}]
"""
REPORT = "print('KUBEBENCH_METRIC v={{ n }}')"


def write_spec(tmp_path: Path, code: str = REPORT) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(code=code))
    return path


def keep_one(cli: Cli, spec: Path, *store: str) -> str:
    """Run an experiment that must stay intact; return its results as JSON."""
    done = cli.run("run", str(spec), "--id", "keep", *store)
    assert done.returncode == 0, done.stdout + done.stderr
    return cli.run("results", "keep", "-f", "json", *store).stdout


def limited(cli: Cli, file_size: int, *args: str) -> subprocess.CompletedProcess:
    """`kubebench …` in a process whose files cannot grow past ``file_size`` bytes (RLIMIT_FSIZE): the
    kernel refuses the write past it with EFBIG, as a full disk refuses one with ENOSPC."""
    code = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_FSIZE, ({file_size}, {file_size}))
        sys.argv = ["kubebench", *{list(args)!r}]
        from kubebench.cli import main
        main()
    """)
    # coverage's data file is a file too: a measured child would fail on it, not on kubebench's writes
    env = {k: v for k, v in cli.env.items() if not k.startswith("COVERAGE_")}
    return subprocess.run([sys.executable, "-c", code], env=env, text=True, capture_output=True, timeout=scaled(120))


def assert_one_clear_line(done: subprocess.CompletedProcess, *expected: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    for text in expected:
        assert text in line, line


def assert_sqlite_intact(cli: Cli, kept: str) -> None:
    with sqlite3.connect(cli.db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert cli.run("results", "keep", "-f", "json").stdout == kept


@pytest.mark.slow
def test_a_full_disk_under_the_sqlite_store(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    kept = keep_one(cli, spec)
    assert cli.db.stat().st_size > 64 * 1024  # so that writing the store goes past the limit
    done = limited(cli, 64 * 1024, "run", str(spec), "--id", "full-1")
    assert_one_clear_line(done, f"store sqlite:///{cli.db}: cannot ", "(the store's file could not be read or written)")
    assert_sqlite_intact(cli, kept)
    resumed = cli.run("run", str(spec), "--id", "full-1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    runs = json.loads(cli.run("results", "full-1", "-f", "json").stdout)
    assert sorted(r["metrics"]["v"] for r in runs) == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_a_full_disk_under_the_runs_folders(cli: Cli, tmp_path: Path, postgres_url: str) -> None:
    # The store is elsewhere (PostgreSQL): the first write to fail is the runner's `run.json`, which
    # holds the run's result fields escaped (8 info fields of 4,096 'é', the most one keeps: 64 kB
    # of result.json, 196 kB of '\\u00e9' in run.json).
    code = ("import json, os; json.dump({**{f'note{i}': 'é' * 4096 for i in range(8)}, 'v': {{ n }}}, "
            "open(os.environ['KUBEBENCH_EXP_RESULT_PATH'] + '/result.json', 'w', encoding='utf-8'), ensure_ascii=False)")
    spec = write_spec(tmp_path, code)
    store = ("--store", postgres_url)
    kept = keep_one(cli, spec, *store)
    done = limited(cli, 100 * 1024, "run", str(spec), "--id", "full-2", *store)
    assert_one_clear_line(done, f"cannot write the run's folder {cli.home / 'experiments' / 'full-2'}/", ": File too large")
    assert cli.run("results", "keep", "-f", "json", *store).stdout == kept
    (failed,) = json.loads(cli.run("results", "full-2", "-f", "json", *store).stdout)[:1]
    assert failed["status"] == "failed" and failed["reason"].endswith(": File too large")
    resumed = cli.run("run", str(spec), "--id", "full-2", *store)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    runs = json.loads(cli.run("results", "full-2", "-f", "json", *store).stdout)
    assert {r["status"] for r in runs} == {"succeeded"} and len(runs) == 6


@pytest.mark.slow
def test_an_experiments_folder_that_cannot_be_written(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    kept = keep_one(cli, spec)
    (cli.home / "experiments" / "blocked").write_text("a file where the experiment's folder goes")
    done = cli.run("run", str(spec), "--id", "blocked")
    assert_one_clear_line(done, f"cannot write the experiment's folder {cli.home / 'experiments' / 'blocked'}: ")
    assert_sqlite_intact(cli, kept)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes: the file-in-the-way case covers root")
def test_a_read_only_experiments_folder(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    kept = keep_one(cli, spec)
    folder = cli.home / "experiments"
    folder.chmod(0o555)
    try:
        done = cli.run("run", str(spec), "--id", "read-only")
    finally:
        folder.chmod(0o755)
    assert_one_clear_line(done, f"cannot write the experiment's folder {folder / 'read-only'}: Permission denied")
    assert_sqlite_intact(cli, kept)


@pytest.mark.slow
def test_a_sqlite_store_locked_longer_than_the_busy_timeout(cli: Cli, tmp_path: Path) -> None:
    spec = write_spec(tmp_path)
    kept = keep_one(cli, spec)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        conn = sqlite3.connect({str(cli.db)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE experiments SET name = 'changed, never committed'")
        print("locked", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        done = cli.run("run", str(spec), "--id", "locked", "--store", f"sqlite:///{cli.db}?timeout=1")
    finally:
        holder.kill()
        holder.wait()
    assert_one_clear_line(done, "cannot open the store: database is locked (another process has held the store's "
                                "write lock for longer than the busy timeout)")
    assert_sqlite_intact(cli, kept)


def test_a_postgresql_store_that_does_not_answer(cli: Cli, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once we leave: nothing listens there
    url = f"postgresql+psycopg://kubebench@127.0.0.1:{port}/kubebench"
    done = cli.run("run", str(write_spec(tmp_path)), "--store", url)
    assert_one_clear_line(done, f"store postgresql+psycopg://kubebench@127.0.0.1:{port}/kubebench: cannot open the store: ",
                          "Connection refused")
