"""A throwaway PostgreSQL server: ``initdb`` into a temporary folder, served on a free loopback port.

Used by the tests and ``bench/store_scale.py``. PostgreSQL refuses to run as root, so as root the
server runs as the ``postgres`` user (``runuser``) in a folder given to that user.

    with PostgresServer() as server:
        url = server.create_database("kb")   # postgresql+psycopg://kubebench@127.0.0.1:PORT/kb
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER = "kubebench"
#: Settings for tests only: durability traded for speed (never for a store that matters).
FAST_SETTINGS = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


class PostgresUnavailable(RuntimeError):
    """PostgreSQL's server binaries are not installed (Debian: ``apt-get install postgresql``)."""


def find_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``$KUBEBENCH_PG_BINDIR``, Debian's newest, or PATH."""
    candidates = [os.environ.get("KUBEBENCH_PG_BINDIR", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    found = shutil.which("initdb")
    candidates.append(str(Path(found).parent) if found else "")
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    raise PostgresUnavailable("PostgreSQL server binaries (initdb, pg_ctl) not found; "
                              "on Debian: apt-get install postgresql (or set KUBEBENCH_PG_BINDIR)")


def _version_key(path: str) -> float:
    try:
        return float(Path(path).parent.name)
    except ValueError:
        return 0.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One PostgreSQL server in a temporary folder; ``stop()`` (or leaving ``with``) removes it all."""

    def __init__(self, fast: bool = True) -> None:
        self.bindir = find_bindir()
        self.fast = fast
        self.port = 0
        self.folder: Path | None = None
        self._as_postgres = os.geteuid() == 0

    @property
    def url(self) -> str:
        """URL of the server's ``postgres`` database."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        """SQLAlchemy URL of a database on this server."""
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/{name}"

    def start(self) -> "PostgresServer":
        """initdb, then start the server on a free port (retrying if another process took it)."""
        self.folder = Path(tempfile.mkdtemp(prefix="kubebench-pg-"))
        atexit.register(self.stop)
        if self._as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.folder / "data"), "-U", USER, "--auth=trust", "-E", "UTF8",
                  "--no-sync", "--no-instructions")
        for attempt in range(3):
            self.port = free_port()
            try:
                self._pg_ctl_start()
                return self
            except subprocess.CalledProcessError:
                if attempt == 2:
                    raise RuntimeError(f"PostgreSQL did not start:\n{self.log()}") from None
        return self

    def _pg_ctl_start(self) -> None:
        assert self.folder is not None
        options = [f"-p {self.port}", f"-k {self.folder}", "-c listen_addresses=127.0.0.1", "-c max_connections=200"]
        if self.fast:
            options += [f"-c {k}={v}" for k, v in FAST_SETTINGS.items()]
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.folder / "data"),
                  "-l", str(self.folder / "server.log"), "-o", " ".join(options))

    def create_database(self, name: str) -> str:
        """Create a database and return its URL."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=USER, dbname="postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.database_url(name)

    def log(self) -> str:
        """The server's log (for failure messages)."""
        path = self.folder / "server.log" if self.folder else None
        return path.read_text(errors="replace") if path and path.exists() else ""

    def stop(self) -> None:
        """Stop the server at once and delete its folder; safe to call twice."""
        folder, self.folder = self.folder, None
        if folder is None:
            return
        data = folder / "data"
        if (data / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", "immediate", "-D", str(data))
            except subprocess.CalledProcessError:
                _kill_postmaster(data)
        shutil.rmtree(folder, ignore_errors=True)

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        # cwd: the postgres user may not be allowed into the caller's working directory
        subprocess.run(command, check=True, capture_output=True, text=True, cwd=self.folder or "/")

    def __enter__(self) -> "PostgresServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kill_postmaster(data: Path) -> None:
    try:
        pid = int((data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 9)
        time.sleep(0.2)
    except (OSError, ValueError, IndexError):
        pass
