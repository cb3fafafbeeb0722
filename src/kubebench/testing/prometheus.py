"""Throwaway Prometheus and Pushgateway servers (Debian's ``prometheus``, ``prometheus-pushgateway``)
on free loopback ports, with temporary data folders; used by the tests and the monitoring benchmark.

    with PushgatewayServer() as gateway, PrometheusServer({"pushgateway": gateway.address}) as prom:
        prom.query('up{job="pushgateway"}')
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from .postgres import free_port


class ServerUnavailable(RuntimeError):
    """The server's binary is not installed (Debian: ``apt-get install prometheus prometheus-pushgateway``)."""


def find_binary(name: str, variable: str) -> str:
    """``$variable``, else ``name`` on PATH, else ServerUnavailable."""
    found = os.environ.get(variable) or shutil.which(name)
    if not found:
        raise ServerUnavailable(f"{name} is not installed; on Debian: apt-get install {name} (or set {variable})")
    return found


class _Server:
    """A server process on ``127.0.0.1:port`` in a temporary folder; ``stop()`` ends it and removes the folder."""

    name = ""
    variable = ""

    def __init__(self) -> None:
        self.binary = find_binary(self.name, self.variable)
        self.port = free_port()
        self.folder: Path | None = None
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:port``."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:port``."""
        return f"http://{self.address}"

    def arguments(self, folder: Path) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> "_Server":
        """Start the server and wait until ``/-/ready`` answers 200."""
        self.folder = Path(tempfile.mkdtemp(prefix=f"kubebench-{self.name}-"))
        atexit.register(self.stop)
        log = open(self.folder / "server.log", "wb")
        self.process = subprocess.Popen([self.binary, *self.arguments(self.folder)], stdout=log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=self.folder)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with code {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready in {timeout:g} s")

    def log(self) -> str:
        """The server's output (for failure messages)."""
        path = self.folder / "server.log" if self.folder else None
        return path.read_text(errors="replace") if path and path.exists() else ""

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and delete its folder; safe to call twice."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        folder, self.folder = self.folder, None
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PushgatewayServer(_Server):
    """A Pushgateway without persistence."""

    name = "prometheus-pushgateway"
    variable = "KUBEBENCH_PUSHGATEWAY"

    def arguments(self, folder: Path) -> list[str]:
        return [f"--web.listen-address={self.address}"]


class PrometheusServer(_Server):
    """A Prometheus scraping ``targets`` (job name → ``host:port``, labels as exposed) every ``interval``."""

    name = "prometheus"
    variable = "KUBEBENCH_PROMETHEUS"

    def __init__(self, targets: dict[str, str], interval: str = "1s") -> None:
        super().__init__()
        self.targets, self.interval = targets, interval

    def arguments(self, folder: Path) -> list[str]:
        jobs = [{"job_name": job, "honor_labels": True, "static_configs": [{"targets": [target]}]}
                for job, target in self.targets.items()]
        config = {"global": {"scrape_interval": self.interval, "evaluation_interval": self.interval},
                  "scrape_configs": jobs}
        (folder / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        return [f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address={self.address}", "--log.level=warn"]

    def start(self, timeout: float = 30.0) -> "PrometheusServer":
        """Start, then wait until every target has been scraped once: Prometheus answers ``/-/ready``
        about 5 s before its first scrape (its discovery updates are throttled to one per 5 s), and a
        short run served in that gap would never be seen."""
        super().start(timeout)
        deadline = time.monotonic() + timeout
        while len(self.query("up")) < len(self.targets):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus did not scrape its {len(self.targets)} targets in {timeout:g} s")
            time.sleep(0.1)
        return self

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """The ``result`` of an instant query."""
        params = {"query": expr} | ({"time": f"{at:.3f}"} if at is not None else {})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def wait_for(self, expr: str, timeout: float = 30.0) -> list[dict]:
        """Poll an instant query until it returns series; the series (or TimeoutError)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result:
                return result
            time.sleep(0.25)
        raise TimeoutError(f"Prometheus has no series for {expr!r} after {timeout:g} s")
