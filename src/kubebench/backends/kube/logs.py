"""The logs of one run's pods, streamed from the moment each container runs.

Reading a log once the job has ended loses what is gone by then: the kubelet rotates container logs
at 10 MiB (the log API serves only the current file), and an operator, a deadline, a preemption or
a lost node deletes pods. So every container of every pod of the run (init containers, sidecars,
each restart) is followed (``follow=true``) into ``output/pods/<pod>.<uid>.<container>.<restart>.log``
(a pod an operator created again under the same name is another pod)
from the moment the watch shows it running. When the run ends, what no stream holds whole is read
once (the current instance, and the ``previous`` one of a restarted container), and each replica's
main container is moved to ``output/<replica-type>-<index>.log``: its newest pod, and the instance
that failed when one did. A log that cannot be read is a warning, never the run's outcome.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...errors import BackendError
from . import status as st

if TYPE_CHECKING:
    from .api import Api

log = logging.getLogger("kubebench")
#: Seconds to wait for the streams of containers that have ended to deliver their last bytes.
DRAIN_SECONDS = 15.0


@dataclass(eq=False)
class Stream:
    """One container instance followed into a file."""

    pod: str
    uid: str
    container: str
    instance: int
    path: Path
    done: threading.Event = field(default_factory=threading.Event)
    complete: bool = False  # the server ended the stream: the instance ended and all was read
    error: str = ""
    response: Any = None
    opened: float = 0.0  # when its request went out (epoch seconds)


class RunLogs:
    """Follows the containers of one run's pods (see the module's docstring)."""

    def __init__(self, api: Api, namespace: str, output: Path, main: frozenset[str],
                 name_of: Callable[[dict[str, Any]], str] = st.replica_name) -> None:
        self.api, self.namespace, self.output, self.main = api, namespace, output, main
        #: ``<replica-type>-<index>`` of a pod, the name of its replica's log.
        self.name_of = name_of
        self.folder = output / "pods"
        # made now, before any pod runs: the output folder is open to the pods (open_to_pods), and a
        # pod must not get to put a link there first that would lead the runner's writes elsewhere
        self.folder.mkdir(parents=True, exist_ok=True)
        self._streams: dict[tuple[str, str, int], Stream] = {}
        self._lock = threading.Lock()
        self._closed = False

    def observe(self, pod: dict[str, Any]) -> None:
        """Start following every container instance of ``pod`` that runs (or ran) and is not followed yet."""
        name, uid = pod["metadata"]["name"], _uid(pod)
        for status in _statuses(pod):
            state = status.get("state") or {}
            if "running" not in state and "terminated" not in state:
                continue
            key = (uid, status["name"], int(status.get("restartCount") or 0))
            with self._lock:
                if self._closed or key in self._streams:
                    continue
                stream = self._streams[key] = Stream(name, *key, self._path(name, *key))
            threading.Thread(target=self._follow, args=(stream,), daemon=True,
                             name=f"kubebench-log-{name}-{status['name']}").start()

    def _path(self, pod: str, uid: str, container: str, instance: int) -> Path:
        return self.folder / f"{pod}.{uid[:6]}.{container}.{instance}.log"

    def _follow(self, stream: Stream) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            stream.opened = time.time()
            stream.response = self.api.follow_log(self.namespace, stream.pod, stream.container)
            with open(stream.path, "wb") as f:
                for chunk in stream.response.stream(1 << 16):
                    f.write(chunk)
                    f.flush()
            stream.complete = not self._closed
        except Exception as e:  # noqa: BLE001  a broken stream: the plain read at the end takes over
            stream.error = str(e) or e.__class__.__name__
        finally:
            response, stream.response = stream.response, None
            if response is not None:
                with contextlib.suppress(Exception):
                    response.release_conn()
            stream.done.set()

    def snapshot(self, pods: list[dict[str, Any]]) -> None:
        """Read now, before the pods are deleted, every started container no stream is following."""
        for pod in pods:
            for status in _statuses(pod):
                key = (_uid(pod), status["name"], int(status.get("restartCount") or 0))
                stream = self._streams.get(key)
                if st.started({"status": {"containerStatuses": [status]}}) and (stream is None or stream.error):
                    self._read(pod["metadata"]["name"], *key, previous=False, warnings=[])

    def finish(self, pods: list[dict[str, Any]], wait_all: bool) -> list[str]:
        """Let the streams end (those of containers seen ended; all of them with ``wait_all``: the
        job succeeded or was deleted, so every container ends), read what they missed, name each
        replica's log; returns warnings. An init container still running is not waited for: it waits
        for a peer (training-operator's ``init-pytorch`` for its master) that has ended, and would
        hold every run ``DRAIN_SECONDS``; what it wrote so far is read all the same."""
        ended = {(_uid(p), s["name"], int(s.get("restartCount") or 0))
                 for p in pods for s in _statuses(p) if "terminated" in (s.get("state") or {})}
        waiting = {(_uid(p), s["name"]) for p in pods for s in ((p.get("status") or {}).get("initContainerStatuses") or [])
                   if "terminated" not in (s.get("state") or {})}
        deadline = time.monotonic() + DRAIN_SECONDS
        for key, stream in list(self._streams.items()):
            if key in ended or key[2] < _restarts(pods, key[0], key[1]) or (wait_all and key[:2] not in waiting):
                stream.done.wait(max(0.0, deadline - time.monotonic()))
        self.close()
        warnings: list[str] = []
        for pod in pods:
            self._complete(pod, warnings)
        self._name_replicas(pods)
        with contextlib.suppress(OSError):
            self.folder.rmdir()  # only when empty: nothing beside the replicas' own logs
        return warnings

    def _complete(self, pod: dict[str, Any], warnings: list[str]) -> None:
        name, uid = pod["metadata"]["name"], _uid(pod)
        for status in _statuses(pod):
            if not st.started({"status": {"containerStatuses": [status]}}):
                continue
            current = int(status.get("restartCount") or 0)
            for instance, previous in ((current, False), (current - 1, True)):
                if instance < 0:
                    continue
                stream = self._streams.get((uid, status["name"], instance))
                if stream is not None and stream.complete and not (previous and _late(stream, status)):
                    continue
                if not self._read(name, uid, status["name"], instance, previous, warnings) and stream is not None \
                        and stream.path.exists():
                    warnings.append(f"the log of {name} ({status['name']}) may end early: {stream.error or 'stream cut'}")

    def _read(self, pod: str, uid: str, container: str, instance: int, previous: bool, warnings: list[str]) -> bool:
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self._path(pod, uid, container, instance).with_suffix(".read")
        try:
            if not self.api.copy_log(self.namespace, pod, container, partial, previous=previous):
                return False
        except (BackendError, OSError) as e:
            warnings.append(f"could not read the log of {pod} ({container}): {e}")
            return False
        target = self._path(pod, uid, container, instance)
        stream = self._streams.get((uid, container, instance))
        late = previous and stream is not None and stream.complete  # it may have followed the next instance
        if target.exists() and target.stat().st_size > partial.stat().st_size and not late:
            partial.unlink()  # the stream holds more (the read lost the head to log rotation)
        else:
            partial.replace(target)
        return True

    def _name_replicas(self, pods: list[dict[str, Any]]) -> None:
        newest: dict[str, dict[str, Any]] = {}
        for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
            newest[self.name_of(pod)] = pod  # a replica's later pod replaces its earlier ones
        for replica, pod in newest.items():
            status = self._main(pod)
            if status is None:
                continue
            source = self._path(pod["metadata"]["name"], _uid(pod), status["name"], _instance(status))
            if source.exists():
                source.replace(self.output / f"{replica}.log")

    def _main(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        ours = [s for s in statuses if s.get("name") in self.main]
        return (ours or statuses or [None])[0]

    def close(self) -> None:
        """Stop following (what the streams wrote stays)."""
        with self._lock:
            self._closed = True
            streams = list(self._streams.values())
        for stream in streams:
            response = stream.response
            if response is not None:
                with contextlib.suppress(Exception):
                    getattr(response, "shutdown", response.close)()
        for stream in streams:
            stream.done.wait(5)


def _late(stream: Stream, status: dict[str, Any]) -> bool:
    """Whether the stream of an earlier instance may have followed the current one instead: its request
    went out once the current instance had started (to the second its ``startedAt`` gives). A kubelet
    restarts a failed container at once the first time, and the log API streams the instance it
    finds when the request arrives."""
    state = status.get("state") or {}
    # the current instance: running, ended, or (waiting to restart) the one that ended last
    current = state.get("running") or state.get("terminated") or (status.get("lastState") or {}).get("terminated") or {}
    started = str(current.get("startedAt") or "")
    try:
        when = datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return False
    return stream.opened >= when - 1.0


def _statuses(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    return (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])


def _uid(pod: dict[str, Any]) -> str:
    return pod["metadata"].get("uid") or pod["metadata"]["name"]


def _restarts(pods: list[dict[str, Any]], uid: str, container: str) -> int:
    for p in pods:
        if _uid(p) == uid:
            for status in _statuses(p):
                if status["name"] == container:
                    return int(status.get("restartCount") or 0)
    return 0


def _instance(status: dict[str, Any]) -> int:
    """The instance of a container whose log is the replica's: the one that failed, when it was
    restarted after failing; else the current one."""
    current = int(status.get("restartCount") or 0)
    last = (status.get("lastState") or {}).get("terminated") or {}
    ended = (status.get("state") or {}).get("terminated") or {}
    if current and last.get("exitCode") and not ended.get("exitCode"):
        return current - 1
    return current
