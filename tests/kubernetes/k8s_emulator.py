"""A small Kubernetes API server for tests, on loopback, for the subset of the API kubebench uses.

It follows the API conventions the official client relies on: 201 with the object on create;
``Status`` objects with 404 / 409 / 410 / 422 codes; a resourceVersion on every object and list;
``labelSelector`` on lists and watches; ``?watch=true`` as a chunked stream of JSON events from a
resourceVersion (ADDED for what exists when none is given; ERROR 410 once it has expired;
BOOKMARK events on request); the ``status`` subresource; delete with propagation (the garbage
collector removes the pods a job owns); pod logs. Custom resources are validated against their
CRD's schema when a validator is given (422 Invalid), as a server with strict field validation.

Test hooks: ``faults`` injects 429 / 500 / 503 answers and connection resets at random (before or
after the request took effect) and cuts watch streams; ``requests`` logs every request; the
``store`` is the cluster's state, which an in-process controller (the operator stand-in) reads,
writes and subscribes to as controllers do through their informers.
"""

from __future__ import annotations

import io
import json
import random
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from k8s_store import KINDS, PODS, ApiError, Key, Store, matches, merge_patch

__all__ = ["KINDS", "PODS", "ApiError", "Emulator", "Faults", "Request", "Store", "matches"]

@dataclass
class Faults:
    """Random failures: a share ``rate`` of requests fails with one of ``kinds``; watches get cut."""

    rate: float = 0.0
    kinds: tuple = (429, 500, 503, "reset-before", "reset-after")
    watch_cut: float = 0.0  # chance that a watch stream is cut after a moment
    seed: int = 0
    methods: tuple = ()  # only requests of these methods (all when empty)
    limit: int | None = None  # at most this many faults
    injected: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def pick(self, method: str, path: str) -> Any:
        """The fault for this request, or None."""
        with self._lock:
            if self.methods and method not in self.methods or self.limit is not None and len(self.injected) >= self.limit:
                return None
            if self._random.random() >= self.rate:
                return None
            fault = self._random.choice(self.kinds)
            self.injected.append((method, path, fault))
            return fault

    def cut_after(self) -> float | None:
        """Seconds after which to cut a new watch stream, or None."""
        with self._lock:
            return self._random.uniform(0.05, 0.5) if self._random.random() < self.watch_cut else None


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, str]
    code: int
    fault: Any = None

    @property
    def watch(self) -> bool:
        """Whether it was a watch."""
        return self.query.get("watch") in ("true", "1")


class Emulator:
    """The API server: ``start()`` it, point a kubeconfig at ``url``, ``stop()`` it."""

    def __init__(self, validators: dict[Key, Callable[[dict], list[str]]] | None = None) -> None:
        self.store = Store(validators)
        self.faults = Faults()
        self.requests: list[Request] = []
        self.errors: list[Exception] = []
        self.logs: dict[tuple[str, str], Path] = {}  # (namespace, pod) → its container log
        self.refuse: dict[tuple[str, str], ApiError] = {}  # (method, plural) → an error to answer always
        self.stopping = threading.Event()
        self.watch_epoch = 0  # drop_watches() bumps it: open watches then break
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.emulator = self  # type: ignore[attr-defined]
        self._connections: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        """Where the server listens."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "Emulator":
        """Serve in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection (watches included)."""
        self.stopping.set()
        with self.store.cond:
            self.store.cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        for conn in list(self._connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)

    def drop_watches(self) -> None:
        """Break every open watch stream (a connection reset), as an API server restart does."""
        with self.store.cond:
            self.watch_epoch += 1
            self.store.cond.notify_all()

    def kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        """Write a kubeconfig pointing at this server and return its path."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "emulator",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "test-token"}}],
            "contexts": [{"name": "emulator", "context": {"cluster": "emulator", "user": "tester", "namespace": namespace}}],
        }
        path.write_text(json.dumps(config))
        return path

    def count(self, method: str | None = None, contains: str = "", watch: bool | None = None) -> int:
        """How many requests matched."""
        return sum(1 for r in list(self.requests) if (method is None or r.method == method)
                   and contains in r.path and (watch is None or r.watch == watch))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, as a real server sends them

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.server.emulator._connections.add(self.connection)  # type: ignore[attr-defined]

    def finish(self) -> None:
        self.server.emulator._connections.discard(self.connection)  # type: ignore[attr-defined]
        try:
            super().finish()
        except OSError:
            pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        emu: Emulator = self.server.emulator  # type: ignore[attr-defined]
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"null") if length else None
        fault = emu.faults.pick(method, url.path)
        if fault == "reset-before":
            emu.requests.append(Request(method, url.path, query, 0, fault))
            return self._reset()
        if isinstance(fault, int):
            error = ApiError(fault, "TooManyRequests" if fault == 429 else "InternalError",
                             "injected fault: please try again")
            emu.requests.append(Request(method, url.path, query, fault, fault))
            return self._send(fault, error.status(), {"Retry-After": "0"} if fault == 429 else {})
        try:
            route = _route(url.path)
            refused = emu.refuse.get((method, route[0][2]))
            if refused:
                raise refused
            if method == "GET" and query.get("watch") in ("true", "1"):
                emu.requests.append(Request(method, url.path, query, 200, fault))
                return self._watch(emu, route, query)
            code, payload = _handle(emu, method, route, query, body)
        except ApiError as e:
            code, payload = e.code, e.status()
        except Exception as e:  # noqa: BLE001  a bug of the emulator: answer 500 and keep it for the test
            emu.errors.append(e)
            code, payload = 500, ApiError(500, "InternalError", f"emulator error: {e!r}").status()
        emu.requests.append(Request(method, url.path, query, code if fault != "reset-after" else 0, fault))
        if fault == "reset-after":  # it took effect, but the answer is lost
            return self._reset()
        self._send(code, payload)

    def _send(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain" if isinstance(payload, bytes) else "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _reset(self) -> None:
        # SO_LINGER 0: closing sends a TCP RST, as a dropped connection does.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.rfile.close()
        self.wfile.close()
        self.connection.close()
        self.rfile, self.wfile = io.BytesIO(), io.BytesIO()  # what the handler still flushes and closes

    def _watch(self, emu: Emulator, route: tuple, query: dict[str, str]) -> None:
        (key, namespace, _, _), selector = route, query.get("labelSelector", "")
        deadline = time.monotonic() + min(float(query.get("timeoutSeconds", 1800)), 1800)
        cut = emu.faults.cut_after()
        cut_at = time.monotonic() + cut if cut is not None else None
        epoch = emu.watch_epoch
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            since = self._watch_start(emu, key, namespace, selector, query.get("resourceVersion"))
            while since is not None and not emu.stopping.is_set() and time.monotonic() < deadline:
                if (cut_at is not None and time.monotonic() >= cut_at) or emu.watch_epoch != epoch:
                    return self._reset()
                since = self._watch_events(emu, key, namespace, selector, since)
                if since is None:
                    break
                with emu.store.cond:
                    if emu.store.rv <= since and not emu.stopping.is_set() and emu.watch_epoch == epoch:
                        emu.store.cond.wait(min(0.2, max(0.0, deadline - time.monotonic())))
            if since is not None and query.get("allowWatchBookmarks") == "true":
                self._chunk({"type": "BOOKMARK", "object": {"kind": KINDS[key], "apiVersion": _gv(key),
                                                            "metadata": {"resourceVersion": str(emu.store.rv)}}})
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            self.close_connection = True

    def _watch_start(self, emu: Emulator, key: Key, namespace: str, selector: str, rv: str | None) -> int | None:
        if rv and rv != "0":
            return int(rv)
        items, list_rv = emu.store.list(key, namespace, selector)
        for obj in items:
            self._chunk({"type": "ADDED", "object": obj})
        return int(list_rv)

    def _watch_events(self, emu: Emulator, key: Key, namespace: str, selector: str, since: int) -> int | None:
        try:
            events, reached = emu.store.events_after(since, key, namespace, selector)
        except ApiError as e:
            self._chunk({"type": "ERROR", "object": e.status()})
            return None
        for kind, obj in events:
            self._chunk({"type": kind, "object": obj})
        return reached

    def _chunk(self, event: dict) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _gv(key: Key) -> str:
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def _route(path: str) -> tuple[Key, str, str | None, str | None]:
    """(resource, namespace, name, subresource) of an API path."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    key = (group, version, rest[0] if rest else "")
    if key not in KINDS or len(rest) > 3:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return key, namespace, (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)


def _handle(emu: Emulator, method: str, route: tuple, query: dict, body: Any) -> tuple[int, Any]:
    key, namespace, name, sub = route
    store = emu.store
    if name is None:
        if method == "GET":
            items, rv = store.list(key, namespace, query.get("labelSelector", ""))
            return 200, {"kind": KINDS[key] + "List", "apiVersion": _gv(key), "metadata": {"resourceVersion": rv},
                         "items": items}
        if method == "POST":
            return 201, store.create(key, namespace, body or {})
    elif sub == "log" and key == PODS and method == "GET":
        return _log(emu, namespace, name, query)
    elif sub in (None, "status"):
        if method == "GET":
            return 200, store.get(key, namespace, name)
        if method == "PUT":
            return 200, store.update(key, namespace, name, lambda _: body, status=sub == "status")
        if method == "PATCH":
            return 200, store.update(key, namespace, name, lambda cur: merge_patch(cur, body), status=sub == "status")
        if method == "DELETE":
            propagation = (body or {}).get("propagationPolicy") or query.get("propagationPolicy") or "Background"
            return 200, store.delete(key, namespace, name, propagation)
    raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {key[2]}/{sub or ''}")


def _log(emu: Emulator, namespace: str, name: str, query: dict) -> tuple[int, bytes]:
    pod = emu.store.get(PODS, namespace, name)
    source = emu.logs.get((namespace, name))
    if source is None or not source.exists():
        container = query.get("container") or pod["spec"]["containers"][0]["name"]
        raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
    return 200, source.read_bytes()
