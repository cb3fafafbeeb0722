"""Helpers of the reliability tests: ``kubebench`` as a real subprocess, and the processes of runs."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
from support.timing import scaled


class Cli:
    """Starts ``python -m kubebench …`` in its own process, with the test's KUBEBENCH_HOME."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = {**os.environ, "KUBEBENCH_HOME": str(home), "COLUMNS": "200"}
        self.env.pop("KUBEBENCH_STORE", None)

    def start(self, *args: str, **kwargs) -> subprocess.Popen:
        """Start the command; stdout and stderr are pipes unless given."""
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen([sys.executable, "-m", "kubebench", *args], env=self.env, text=True, **kwargs)

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run the command to its end."""
        return subprocess.run([sys.executable, "-m", "kubebench", *args], env=self.env, text=True,
                              capture_output=True, timeout=scaled(timeout))

    @property
    def db(self) -> Path:
        """The SQLite store of the home."""
        return self.home / "kubebench.db"

    def rows(self, query: str, *params) -> list[tuple]:
        """Rows of a read-only query on the store (while a runner may be writing: WAL lets us)."""
        if not self.db.exists():
            return []
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30) as conn:
            try:
                return conn.execute(query, params).fetchall()
            except sqlite3.OperationalError:
                return []  # the runner is still creating the tables


def run_processes(home: Path) -> list[psutil.Process]:
    """Live processes (zombies excluded) started for a run folder under ``home``."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("KUBEBENCH_EXP_PATH", "").startswith(str(home)) \
                    and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found

