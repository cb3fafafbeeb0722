"""How ``kubebench serve`` starts: a busy port is one clear error before any URL (review B14), and
Prometheus' ``/metrics`` answers at ``/metrics`` itself, without a redirect."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def test_metrics_answer_at_metrics_without_a_redirect(web_client, web_home) -> None:
    answer = web_client.get("/metrics", follow_redirects=False)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    assert f'kubebench_runs{{experiment="{web_home.failed}",name="web-broken",state="failed"}} 1.0' in answer.text
    # a scraper configured with the old address still gets there
    assert web_client.get("/metrics/").status_code == 200


def test_serve_on_a_busy_port_says_so_once_and_exits_3(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "kubebench", "serve", "--port", str(port)],
                              capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""  # no dashboard URL for a server that never listened
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0] == (f"error: cannot listen on 127.0.0.1:{port}: the port is in use "
                        "(another `kubebench serve`?): choose another with --port")
