"""A cache of the objects of one kind in one namespace that match one label selector, fed by a
single list + watch in a background thread, as client-go's informers do.

One informer serves every job of an experiment, so the API calls spent on tracking jobs grow with
the number of watches (re-opened every few minutes), not with jobs × polls. A watch that breaks
is re-opened from the last resourceVersion seen; one whose version expired (HTTP 410, as an ERROR
event or as the answer to the watch request itself, as client-go's reflector handles both) re-lists.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ...errors import BackendError
from .api import Api, Resource, backoff, json_lines

#: HTTP statuses after which retrying cannot help (the watch is refused, not interrupted).
_LASTING = frozenset({400, 401, 403, 404, 405, 422})


class _Expired(Exception):
    """The watch's resourceVersion is too old (410 Gone): list again."""


class Informer:
    """Objects by name, kept current by a watch; ``on_change(obj)`` is called after each change of
    ``obj``, and ``on_change(None)`` after a change of everything (a new list, a lasting error)."""

    def __init__(self, api: Api, resource: Resource, namespace: str, selector: str,
                 on_change: Callable[[dict | None], None]) -> None:
        self.api, self.resource, self.namespace, self.selector = api, resource, namespace, selector
        self.on_change = on_change
        #: A failure that retrying will not mend (e.g. 403: not allowed to watch); None while healthy.
        self.error: BackendError | None = None
        self.synced = threading.Event()
        self._objects: dict[str, dict] = {}
        self._deleted: dict[str, str] = {}  # name → uid of objects seen deleted
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"kubebench-watch-{resource.plural}-{namespace}")

    def start(self) -> "Informer":
        """Start listing and watching in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the watch (unblocking a read in progress) and wait for the thread."""
        self._stopped.set()
        response = self._response
        if response is not None:
            try:
                getattr(response, "shutdown", response.close)()
            except Exception:  # noqa: BLE001  already finished or released
                pass
        self._thread.join(timeout=10)

    def get(self, name: str) -> dict | None:
        """The object as last seen, or None."""
        with self._lock:
            return self._objects.get(name)

    def deleted(self, name: str, uid: str | None) -> bool:
        """Whether the object ``name`` with ``uid`` was seen deleted."""
        with self._lock:
            return uid is not None and self._deleted.get(name) == uid

    def names(self) -> list[str]:
        """The names of every object in the cache."""
        with self._lock:
            return list(self._objects)

    def matching(self, label: str, value: str) -> list[dict]:
        """Objects whose label ``label`` is ``value``."""
        with self._lock:
            return [o for o in self._objects.values() if _labels(o).get(label) == value]

    def forget(self, names: list[str]) -> None:
        """Drop objects kubebench is done with (until the watch reports them again)."""
        with self._lock:
            for name in names:
                self._objects.pop(name, None)
                self._deleted.pop(name, None)

    def _run(self) -> None:
        version, failures = None, 0
        while not self._stopped.is_set():
            try:
                if version is None:
                    version = self._relist()
                version = self._watch(version)
                failures = 0
            except _Expired:
                version = None
            except BackendError as e:
                failures += 1
                if getattr(e, "http_status", None) == 410:  # the watch request itself: its version is gone
                    version = None
                    continue
                if getattr(e, "http_status", None) in _LASTING:
                    self.error = e
                    self.on_change(None)
                self._stopped.wait(backoff(failures))
            except Exception:  # noqa: BLE001  the stream broke mid-way: watch again from `version`
                failures += 1
                self._stopped.wait(backoff(failures))

    def _relist(self) -> str:
        listing = self.api.list(self.resource, self.namespace, self.selector) or {}
        items = {o["metadata"]["name"]: o for o in listing.get("items") or []}
        with self._lock:
            for name, old in self._objects.items():
                if name not in items:
                    self._deleted[name] = old["metadata"].get("uid", "")
            self._objects = items
        self.error = None
        self.synced.set()
        self.on_change(None)
        return str(listing.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, version: str) -> str:
        response = self.api.watch(self.resource, self.namespace, self.selector, version)
        self._response = response
        try:
            if self._stopped.is_set():
                return version
            self.error = None
            for event in json_lines(response):
                version = self._apply(event) or version
                self.on_change(event.get("object"))
        finally:
            self._response = None
            response.close()  # ended by the server, or cut: either way not reused
            response.release_conn()
        return version

    def _apply(self, event: dict) -> str | None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired
            raise BackendError(f"watch {self.resource.plural} in {self.namespace}: {obj.get('message', obj)}")
        meta = obj.get("metadata") or {}
        with self._lock:
            if kind in ("ADDED", "MODIFIED"):
                self._objects[meta["name"]] = obj
                self._deleted.pop(meta["name"], None)
            elif kind == "DELETED":
                self._objects.pop(meta.get("name", ""), None)
                self._deleted[meta.get("name", "")] = meta.get("uid", "")
        return meta.get("resourceVersion")


def _labels(obj: dict) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}
