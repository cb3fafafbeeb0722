"""A small Kubernetes API server for tests, on loopback, for the subset of the API kubebench uses.

It follows the API conventions the official client relies on: 201 with the object on create;
``Status`` objects with 400 / 403 / 404 / 409 / 410 / 422 codes; a resourceVersion on every object
and list; ``labelSelector`` and ``fieldSelector`` on lists and watches; ``?watch=true`` as a chunked
stream of JSON events from a resourceVersion (ADDED for what exists when none is given; ERROR 410
once it has expired; BOOKMARK events on request); the ``status`` subresource; deletion with
propagation and an asynchronous garbage collector (see :mod:`.store`); pod logs per container,
``previous`` instance and ``follow`` streams, of which a plain read returns only what the kubelet
has not rotated away (``log_rotate_bytes``, 10 MiB by default as ``containerLogMaxSize``).

As a real server of ``kubernetes_version`` does (1.31 by default; ``GET /version`` says it): a core
object is checked as that version checks it (:mod:`.core_schemas`), a custom resource against its
schema when a checker is given; unknown
fields pruned under the default ``fieldValidation=Warn`` (with a ``Warning`` header), refused with
400 under ``Strict``; invalid values and labels are 422; creating in a namespace that does not exist
is 404; with a ``policy`` (RBAC) every request is checked per verb and resource (403), and
SelfSubjectAccessReviews are answered from it; API discovery (``/apis/<group>/<version>``) lists
what is served, and a group version in ``unserved`` is not.

Test hooks: ``faults`` injects 429 / 500 / 503 answers and connection resets at random (before or
after the request took effect) and cuts watch streams; ``gone_watches`` answers that many watch
requests with HTTP 410 (not an ERROR event); ``requests`` logs every request; the ``store`` is the
cluster's state, which an in-process controller (the operator stand-in) reads, writes and subscribes
to as controllers do through their informers.
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

from . import apiext, core_schemas
from .store import KINDS, PODS, ApiError, Checker, Key, Store, matches

__all__ = ["KINDS", "PODS", "ApiError", "ContainerLog", "Emulator", "Faults", "Request", "Store", "matches"]
NAMESPACES: Key = ("", "v1", "namespaces")
ACCESS_REVIEWS = ("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
USER = "system:serviceaccount:bench:kubebench"

@dataclass
class Faults:
    """Random failures: a share ``rate`` of requests fails with one of ``kinds``; watches get cut."""

    rate: float = 0.0
    kinds: tuple = (429, 500, 503, "reset-before", "reset-after")
    watch_cut: float = 0.0  # chance that a watch stream is cut after a moment
    seed: int = 0
    methods: tuple = ()  # only requests of these methods (all when empty)
    path: str = ""  # only requests whose path holds this
    limit: int | None = None  # at most this many faults
    injected: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def pick(self, method: str, path: str) -> Any:
        """The fault for this request, or None."""
        with self._lock:
            if self.methods and method not in self.methods or self.limit is not None and len(self.injected) >= self.limit \
                    or self.path not in path:
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


@dataclass
class ContainerLog:
    """The log files of one container of a pod, one per instance (restart), as the kubelet keeps them."""

    instances: list[Path] = field(default_factory=list)
    #: Set once the last instance has ended (its stream then ends once read to the end).
    ended: threading.Event = field(default_factory=threading.Event)


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

    def __init__(self, checkers: dict[Key, Checker] | None = None,
                 prune: Callable[[dict, list[str]], dict] | None = None, kubernetes_version: str = core_schemas.OLDEST) -> None:
        #: The Kubernetes minor version this server is: its ``/version`` and how it checks core objects.
        self.kubernetes_version = kubernetes_version
        self.store = Store({**core_schemas.checkers(lambda: self.kubernetes_version), **(checkers or {})}, prune=prune)
        apiext.register(self.store)  # CRDs (and the kinds they define) and Leases
        self.faults = Faults()
        self.requests: list[Request] = []
        self.errors: list[Exception] = []
        self.logs: dict[tuple[str, str, str], ContainerLog] = {}  # (namespace, pod, container) → its log
        self.log_rotate_bytes = 10 * 2**20
        self.refuse: dict[tuple[str, str], ApiError] = {}  # (method, plural) → an error to answer always
        #: An error to answer every ``follow=true`` log request with (a kubelet, or a proxy on the
        #: way, that cannot stream); plain log reads still work.
        self.refuse_follow: ApiError | None = None
        #: Seconds a ``follow=true`` log request takes to reach the kubelet (it streams the container's
        #: instance of that later moment: after a fast restart, the next one).
        self.follow_delay = 0.0
        #: RBAC: (verb, group, resource) allowed; None allows everything.
        self.policy: set[tuple[str, str, str]] | None = None
        self.unserved: set[tuple[str, str]] = set()  # (group, version) not served
        self.gone_watches = 0  # answer the next watch requests with HTTP 410
        #: Watches from a resourceVersion below this are answered HTTP 410 (as with --watch-cache=false
        #: once etcd has compacted past it).
        self.compacted = 0
        self.stopping = threading.Event()
        self.watch_epoch = 0  # drop_watches() bumps it: open watches then break
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.emulator = self  # type: ignore[attr-defined]
        self._connections: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._gc = threading.Thread(target=self._collect_garbage, daemon=True, name="emulator-gc")

    @property
    def url(self) -> str:
        """Where the server listens."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "Emulator":
        """Serve in a background thread (and collect garbage in another)."""
        self._thread.start()
        self._gc.start()
        return self

    def _collect_garbage(self) -> None:
        while not self.stopping.wait(0.02):
            try:
                self.store.collect_garbage()
            except Exception as e:  # noqa: BLE001  a bug of the emulator: keep it for the test
                self.errors.append(e)

    def namespace(self, name: str) -> None:
        """Create the namespace ``name``."""
        self.store.create(NAMESPACES, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def allow(self, *rules: tuple[str, str, str]) -> None:
        """Turn RBAC on, allowing exactly ``(verb, group, resource)`` (``resource`` may be ``pods/log``)."""
        self.policy = set(rules)

    def allowed(self, verb: str, group: str, resource: str) -> bool:
        """Whether the policy lets the test's user do ``verb`` on ``resource``."""
        return self.policy is None or (verb, group, resource) in self.policy

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
        self._gc.join(timeout=5)

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
        headers: dict[str, str] = {}
        try:
            discovered = _discovery(emu, url.path) if method == "GET" else None
            if discovered is not None:
                code, payload = 200, discovered
            else:
                route = _route(emu, url.path)
                _authorize(emu, method, route, query)
                refused = emu.refuse.get((method, route[0][2]))
                if refused:
                    raise refused
                if method == "GET" and query.get("watch") in ("true", "1"):
                    since = int(query.get("resourceVersion") or 0)
                    if emu.gone_watches > 0 or 0 < since < emu.compacted:
                        emu.gone_watches = max(0, emu.gone_watches - 1)
                        raise ApiError(410, "Expired", f"too old resource version: {since} ({emu.compacted})")
                    emu.requests.append(Request(method, url.path, query, 200, fault))
                    return self._watch(emu, route, query)
                if route[3] == "log" and query.get("follow") == "true":
                    if emu.refuse_follow is not None:
                        raise emu.refuse_follow
                    emu.requests.append(Request(method, url.path, query, 200, fault))
                    return self._follow(emu, route, query)
                code, payload = _handle(emu, method, route, query, body, headers, self.headers.get("Content-Type", ""))
        except ApiError as e:
            code, payload = e.code, e.status()
        except Exception as e:  # noqa: BLE001  a bug of the emulator: answer 500 and keep it for the test
            emu.errors.append(e)
            code, payload = 500, ApiError(500, "InternalError", f"emulator error: {e!r}").status()
        emu.requests.append(Request(method, url.path, query, code if fault != "reset-after" else 0, fault))
        if fault == "reset-after":  # it took effect, but the answer is lost
            return self._reset()
        self._send(code, payload, headers)

    def _follow(self, emu: Emulator, route: tuple, query: dict[str, str]) -> None:
        """A ``follow`` log stream: from the start of the current (unrotated) file, then whatever the
        container writes, across rotations, until it ends and all was sent (or its pod goes)."""
        (_, namespace, name, _) = route
        if emu.follow_delay:
            time.sleep(emu.follow_delay)
        log, instance = _container_log(emu, namespace, name, query)
        path = log.instances[instance]
        offset = _rotated(path, emu.log_rotate_bytes)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while not emu.stopping.is_set():
                ended = log.ended.is_set() or instance < len(log.instances) - 1
                with open(path, "rb") as f:
                    f.seek(offset)
                    data = f.read(1 << 16)
                if data:
                    offset += len(data)
                    self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                    continue
                if ended or emu.store.find(PODS, namespace, name) is None:
                    break
                time.sleep(0.02)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            self.close_connection = True

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
                self._chunk({"type": "BOOKMARK", "object": {"kind": emu.store.kinds[key], "apiVersion": _gv(key),
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


def _discovery(emu: Emulator, path: str) -> dict | None:
    """``/api``, ``/apis``, ``/apis/<group>/<version>`` and ``/api/v1``: what is served there (see
    :mod:`.apiext`); ``/version``: the server's version; None for other paths."""
    parts = [p for p in path.split("/") if p]
    if parts == ["version"]:
        return core_schemas.version_info(emu.kubernetes_version)
    if parts == ["api"]:
        return apiext.api_versions()
    if parts == ["apis"]:
        return apiext.api_groups(emu.store, emu.unserved)
    if parts[:1] == ["apis"] and len(parts) == 3:
        group, version = parts[1], parts[2]
    elif parts == ["api", "v1"]:
        group, version = "", "v1"
    else:
        return None
    served = apiext.resources(emu.store, group, version) if (group, version) not in emu.unserved else []
    if not served:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": _gv((group, version, "")), "resources": served}


def _route(emu: Emulator, path: str) -> tuple[Key, str, str | None, str | None]:
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
    if (key not in emu.store.kinds and key != ACCESS_REVIEWS) or len(rest) > 3 or (group, version) in emu.unserved:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return key, namespace, (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)


def _verb(method: str, route: tuple, query: dict) -> str:
    name = route[2]
    if method == "GET":
        return "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list")
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


def _authorize(emu: Emulator, method: str, route: tuple, query: dict) -> None:
    """RBAC: 403 unless the policy allows this verb on this resource (or subresource)."""
    (key, namespace, _, sub) = route
    if key == ACCESS_REVIEWS:
        return  # every user may ask what it may do
    verb, resource = _verb(method, route, query), key[2] + (f"/{sub}" if sub else "")  # status too: benchmarks/status
    if not emu.allowed(verb, key[0], resource):
        scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        raise ApiError(403, "Forbidden", f'{key[2]}{"." + key[0] if key[0] else ""} is forbidden: User "{USER}" '
                                         f'cannot {verb} resource "{resource}" in API group "{key[0]}"{scope}',
                       {"kind": key[2]})


def _access_review(emu: Emulator, body: dict) -> dict:
    attrs = (body.get("spec") or {}).get("resourceAttributes") or {}
    resource = attrs.get("resource", "") + (f"/{attrs['subresource']}" if attrs.get("subresource") else "")
    allowed = emu.allowed(attrs.get("verb", ""), attrs.get("group", ""), resource)
    return {**body, "status": {"allowed": allowed, **({} if allowed else {"reason": "no RBAC rule allows it"})}}


def _handle(emu: Emulator, method: str, route: tuple, query: dict, body: Any,
            headers: dict[str, str], content_type: str = "") -> tuple[int, Any]:
    key, namespace, name, sub = route
    store = emu.store
    if key == ACCESS_REVIEWS and method == "POST":
        return 201, _access_review(emu, body or {})
    if name is None:
        if method == "GET":
            items, rv = store.list(key, namespace, query.get("labelSelector", ""), query.get("fieldSelector", ""))
            return 200, {"kind": store.kinds[key] + "List", "apiVersion": _gv(key), "metadata": {"resourceVersion": rv},
                         "items": items}
        if method == "POST":
            if namespace and store.find(NAMESPACES, "", namespace) is None:
                raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found', {"name": namespace, "kind": "namespaces"})
            warnings: list[str] = []
            created = store.create(key, namespace, body or {}, query.get("fieldValidation", "Warn"), warnings)
            if warnings:
                headers["Warning"] = ", ".join(f'299 - "{w}"' for w in warnings)
            return 201, created
    elif sub == "log" and key == PODS and method == "GET":
        return _log(emu, namespace, name, query)
    elif sub is None or sub == "status" and apiext.has_status(store, key):
        if method == "GET":
            return 200, store.get(key, namespace, name)
        if method == "PUT":
            if key in store.custom and not ((body or {}).get("metadata") or {}).get("resourceVersion"):
                raise ApiError(422, "Invalid", f'{store.kinds[key]}.{key[0]} "{name}" is invalid: metadata.resourceVersion: '
                                               "Invalid value: 0x0: must be specified for an update")
            return 200, store.update(key, namespace, name, lambda _: body, status=sub == "status")
        if method == "PATCH":
            custom = key in store.custom
            return 200, store.update(key, namespace, name, lambda cur: apiext.patched(cur, body, content_type, custom),
                                     status=sub == "status")
        if method == "DELETE":
            propagation = (body or {}).get("propagationPolicy") or query.get("propagationPolicy")
            return 200, store.delete(key, namespace, name, propagation)
    raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on {key[2]}/{sub or ''}")


def _container_log(emu: Emulator, namespace: str, name: str, query: dict) -> tuple[ContainerLog, int]:
    """The log of the container (its instance) a log request names; 400 as the kubelet answers."""
    pod = emu.store.get(PODS, namespace, name)
    containers = [c["name"] for c in (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]]
    container = query.get("container") or pod["spec"]["containers"][0]["name"]
    if "container" not in query and len(pod["spec"]["containers"]) > 1:
        raise ApiError(400, "BadRequest", f"a container name must be specified for pod {name}, "
                                          f"choose one of: {[c['name'] for c in pod['spec']['containers']]}")
    if container not in containers:
        raise ApiError(400, "BadRequest", f"container {container} is not valid for pod {name}")
    log = emu.logs.get((namespace, name, container))
    previous = query.get("previous") == "true"
    if previous and (log is None or len(log.instances) < 2):
        raise ApiError(400, "BadRequest", f'previous terminated container "{container}" in pod "{name}" not found')
    if log is None or not log.instances or not log.instances[-1].exists():
        raise ApiError(400, "BadRequest", f'container "{container}" in pod "{name}" is waiting to start: ContainerCreating')
    return log, len(log.instances) - (2 if previous else 1)


def _rotated(path: Path, rotate: int) -> int:
    """Where the kubelet's current log file starts: the bytes before it were rotated away."""
    size = path.stat().st_size
    return (size // rotate) * rotate if rotate and size >= rotate else 0


def _log(emu: Emulator, namespace: str, name: str, query: dict) -> tuple[int, bytes]:
    log, instance = _container_log(emu, namespace, name, query)
    path = log.instances[instance]
    with open(path, "rb") as f:
        f.seek(_rotated(path, emu.log_rotate_bytes))
        return 200, f.read()
