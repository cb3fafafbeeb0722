"""The kubelet's probes, for the stand-in: startup, readiness and liveness probes (``httpGet`` and
``tcpSocket``) run against the pod's IP while its container runs, one worker per container instance
and probe, as ``pkg/kubelet/prober/worker.go`` does:

- the first probe runs as soon as the container runs (after ``initialDelaySeconds``), then one
  every ``periodSeconds``; a result counts once it repeats ``failureThreshold`` (or
  ``successThreshold``) times in a row;
- until the startup probe has succeeded the container is not ``started`` and the other probes do
  not run; its success runs the readiness probe at once (the prober manager's manual trigger);
- a container is ``ready`` once started and its readiness probe succeeded (at once without one);
- a startup or liveness probe failing ``failureThreshold`` times kills the container (``Killing``:
  "Container <name> failed startup probe, will be restarted"), which its restart policy restarts;
- every failure is a Warning event ``Unhealthy`` on the pod: "Readiness probe failed: HTTP probe
  failed with statuscode: 404", or the Go HTTP client's error ("Get \\"http://…\\": dial tcp …:
  connect: connection refused"); the same message again only counts up on a cluster, so it is
  recorded once in a row here.

An HTTP probe succeeds on a status from 200 to 399. ``exec`` and ``grpc`` probes are not run here.
"""

from __future__ import annotations

import http.client
import signal
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .kubelet import Box, Kubelet, PodSim

KINDS = (("startup", "startupProbe", "Startup"), ("readiness", "readinessProbe", "Readiness"),
         ("liveness", "livenessProbe", "Liveness"))


def started(box: Box) -> bool:
    """The container runs and its startup probe (if any) has succeeded."""
    return box.state == "running" and (not box.spec.get("startupProbe") or box.probe_started)


def ready(box: Box) -> bool:
    """The container has started and its readiness probe (if any) has succeeded."""
    return started(box) and (not box.spec.get("readinessProbe") or box.probe_ready)


def has_probes(spec: dict[str, Any]) -> bool:
    return any(spec.get(field) for _, field, _ in KINDS)


class Prober:
    """Runs the probes of one container instance in a thread (see the module's docstring)."""

    def __init__(self, kubelet: Kubelet, pod: PodSim, box: Box) -> None:
        self.kubelet, self.pod, self.box = kubelet, pod, box
        self.instance = len(box.log.instances)
        self.specs = {kind: box.spec[field] for kind, field, _ in KINDS if box.spec.get(field)}
        self.runs: dict[str, tuple[bool | None, int]] = {}  # kind → (last result, times in a row)
        self.due = {kind: 0.0 for kind in self.specs}
        self.last_event: dict[str, str] = {}
        self.trigger = threading.Event()

    def start(self) -> "Prober":
        threading.Thread(target=self._run, daemon=True, name=f"prober-{self.pod.name}-{self.box.name}").start()
        return self

    def alive(self) -> bool:
        return (self.box.state == "running" and len(self.box.log.instances) == self.instance
                and self.pod.stage == "running" and not self.kubelet.s._stopped.is_set())

    def _run(self) -> None:
        while self.alive():
            now = time.monotonic()
            for kind in [k for k, due in self.due.items() if due <= now]:
                self.due[kind] = now + float(self.specs[kind].get("periodSeconds", 10))
                if not self._probe(kind) or not self.alive():
                    return
            wait = min(self.due.values()) - time.monotonic()
            if self.trigger.wait(max(0.0, min(wait, 0.05))):
                self.trigger.clear()
                self.due["readiness"] = 0.0

    def _probe(self, kind: str) -> bool:
        """One probe of ``kind`` if it is to run now; False once the container is being killed."""
        spec, box = self.specs[kind], self.box
        if time.monotonic() - box.started < float(spec.get("initialDelaySeconds", 0)):
            return True
        if (kind == "startup") == started(box):  # startup runs only before, the others only after
            return True
        ok, output = probe(spec, self.pod.ip, box.spec)
        last, count = self.runs.get(kind, (None, 0))
        count = count + 1 if last == ok else 1
        self.runs[kind] = (ok, count)
        if not ok:
            self._unhealthy(kind, output)
        threshold = int(spec.get("successThreshold" if ok else "failureThreshold", 1 if ok else 3))
        if count < threshold:
            return True
        if kind == "startup" and ok and not box.probe_started:
            box.probe_started = self.pod.dirty = True
            self.trigger.set()
        elif kind == "readiness" and box.probe_ready != ok:
            box.probe_ready, self.pod.dirty = ok, True
        elif kind in ("startup", "liveness") and not ok:
            self._kill(kind)
            return False
        return True

    def _unhealthy(self, kind: str, output: str) -> None:
        title = next(t for k, _, t in KINDS if k == kind)
        message = f"{title} probe failed: {output}"
        if self.last_event.get(kind) != message:
            self.last_event[kind] = message
            self.kubelet.s.event(self.pod, "Unhealthy", message, source="kubelet")

    def _kill(self, kind: str) -> None:
        """Stop the container as the kubelet does for a failed startup or liveness probe."""
        restarted = ", will be restarted" if self.pod.restart_policy != "Never" else ""
        self.kubelet.s.event(self.pod, "Killing", f"Container {self.box.name} failed {kind} probe{restarted}",
                             source="kubelet")
        process = self.box.process
        if process is None:
            return
        from .kubelet import _signal

        _signal(process, signal.SIGTERM)
        grace = min(float(self.pod.spec.get("terminationGracePeriodSeconds", 30)), self.kubelet.max_grace)
        deadline = time.monotonic() + grace
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        _signal(process, signal.SIGKILL)


def probe(spec: dict[str, Any], pod_ip: str, container: dict[str, Any]) -> tuple[bool, str]:
    """Run one ``httpGet`` or ``tcpSocket`` probe against the pod: (success, what it saw)."""
    timeout = float(spec.get("timeoutSeconds", 1))
    if "httpGet" in spec:
        get = spec["httpGet"]
        host, port = get.get("host") or pod_ip, _port(get.get("port"), container)
        url = f"{str(get.get('scheme', 'HTTP')).lower()}://{host}:{port}{get.get('path', '/')}"
        try:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
            try:
                conn.request("GET", get.get("path", "/"), headers={"User-Agent": "kube-probe/1.31"})
                code = conn.getresponse().status
            finally:
                conn.close()
        except (OSError, http.client.HTTPException) as e:
            return False, f'Get "{url}": {_dial_error(host, port, e)}'
        return (True, "") if 200 <= code < 400 else (False, f"HTTP probe failed with statuscode: {code}")
    if "tcpSocket" in spec:
        host, port = spec["tcpSocket"].get("host") or pod_ip, _port(spec["tcpSocket"].get("port"), container)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as e:
            return False, _dial_error(host, port, e)
        return True, ""
    return False, "probe type not run by the stand-in (exec, grpc)"


def _dial_error(host: str, port: int, error: Exception) -> str:
    if isinstance(error, ConnectionRefusedError):
        return f"dial tcp {host}:{port}: connect: connection refused"
    if isinstance(error, (socket.timeout, TimeoutError)):
        return "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    if isinstance(error, http.client.HTTPException):
        return f"net/http: {error.__class__.__name__}: {error}"
    return f"dial tcp {host}:{port}: {getattr(error, 'strerror', None) or error}"


def _port(port: Any, container: dict[str, Any]) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    return next(int(p["containerPort"]) for p in container.get("ports") or [] if p.get("name") == port)
