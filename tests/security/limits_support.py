"""Helpers of the limits tests: the CLI in a child process under a memory cap, and a dashboard client.

The child's address space is capped so that, on code without the limits, a test of a bomb fails
(MemoryError, a traceback, exit 1) instead of taking the machine down with it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

TOKEN = "limits-token"


def run_cli(*args: str, cwd: Path, memory_bytes: int = 1_500_000_000, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m kubebench ARGS`` in ``cwd``, its memory capped, its output as text."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return subprocess.run([sys.executable, "-m", "kubebench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap, env={**os.environ, **(env or {})})


def alias_bomb(levels: int, width: int = 9, indent: str = "") -> str:
    """Nested YAML aliases: ``levels`` lists each holding ``width`` aliases of the one before."""
    lines = [f'{indent}a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"{indent}a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def bomb_values(levels: int, width: int) -> int:
    """Values of ``alias_bomb(levels, width)`` with every alias expanded (the root mapping included)."""
    size, total = 2, 1 + 1 + 2  # a0: a list of one string; the root mapping, key a0 and its value
    for _ in range(levels):
        size = 1 + width * size
        total += 1 + size
    return total


def dashboard(home: Path):
    """A TestClient of the dashboard over a fresh store in ``home`` (state changes need TOKEN)."""
    from fastapi.testclient import TestClient

    from kubebench.settings import settings as make_settings
    from kubebench.store.store import open_store
    from kubebench.web.app import make_app

    config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}", storage=str(home / "experiments"))
    home.mkdir(parents=True, exist_ok=True)
    return TestClient(make_app(open_store(config.store_url), config, token=TOKEN), base_url="http://127.0.0.1")


def launch(client, spec: str, params: str | None = None):
    """POST a spec to /api/experiments with the token."""
    body = {"spec": spec} if params is None else {"spec": spec, "params": params}
    return client.post("/api/experiments", json=body, headers={"Authorization": f"Bearer {TOKEN}"})


def in_child(function, *args, timeout: float = 60, memory_bytes: int = 1_000_000_000,
             env: dict[str, str] | None = None) -> tuple:
    """``function(*args)`` in a forked child that may map ``memory_bytes`` more than it inherited:
    ``("ok", result)``,
    ``("error", type name, message)``, or ``("timeout",)`` when it ran past ``timeout`` (killed).

    Code without a limit may compute for ever in one C call or allocate gigabytes; a child keeps
    that out of the test process (and a test of it fails instead of hanging).
    """
    import pickle
    import select
    import signal
    import time

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            resource.setrlimit(resource.RLIMIT_AS, (_address_space() + memory_bytes,
                                                    resource.getrlimit(resource.RLIMIT_AS)[1]))
            os.environ.update(env or {})
            try:
                result = ("ok", function(*args))
            except BaseException as e:  # noqa: BLE001 (reported to the parent)
                result = ("error", type(e).__name__, str(e)[:2000])
            os.write(write, pickle.dumps(result))
        finally:
            os._exit(0)
    os.close(write)
    data, deadline = b"", time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                return ("timeout",)
            chunk = os.read(read, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return pickle.loads(data) if data else ("error", "died", "the child died without an answer")


def serving(app):
    """The web tests' uvicorn-in-a-thread server (``tests/web/web_support.py``) for ``app``."""
    web = str(Path(__file__).resolve().parents[1] / "web")
    if web not in sys.path:
        sys.path.append(web)
    from web_support import serving as web_serving

    return web_serving(app)


def _address_space() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
