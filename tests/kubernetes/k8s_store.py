"""The state of the emulated cluster: objects by resource, namespace and name, with resourceVersions,
an event history for watches, label selectors, the status subresource and garbage collection of
owned objects. The API emulator serves it over HTTP; the operator stand-in reads and writes it
directly, as a controller inside the cluster would.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
import uuid
from collections import deque
from typing import Any, Callable

Key = tuple[str, str, str]  # group, version, plural
KINDS: dict[Key, str] = {
    ("", "v1", "pods"): "Pod",
    ("", "v1", "persistentvolumeclaims"): "PersistentVolumeClaim",
    ("", "v1", "configmaps"): "ConfigMap",
    ("", "v1", "serviceaccounts"): "ServiceAccount",
    ("", "v1", "namespaces"): "Namespace",
    ("batch", "v1", "jobs"): "Job",
    ("kubeflow.org", "v1", "pytorchjobs"): "PyTorchJob",
    ("kubeflow.org", "v1", "tfjobs"): "TFJob",
    ("kubeflow.org", "v1", "mpijobs"): "MPIJob",
    ("kubeflow.org", "v2beta1", "mpijobs"): "MPIJob",
    ("trainer.kubeflow.org", "v1alpha1", "trainjobs"): "TrainJob",
    ("rbac.authorization.k8s.io", "v1", "roles"): "Role",
    ("rbac.authorization.k8s.io", "v1", "rolebindings"): "RoleBinding",
}
PODS: Key = ("", "v1", "pods")
CLUSTER_SCOPED = {("", "v1", "namespaces")}
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class ApiError(Exception):
    """An error answer: a ``Status`` object with its HTTP code."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details or {}

    def status(self) -> dict:
        """The ``Status`` object of the answer."""
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": self.message,
                "reason": self.reason, "details": self.details, "code": self.code}


def _not_found(key: Key, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{key[2]}.{key[0] or "core"} "{name}" not found', {"name": name, "kind": key[2]})


def matches(selector: str, labels: dict[str, str]) -> bool:
    """Whether ``labels`` satisfy a label selector (=, ==, !=, in, notin, exists, !exists)."""
    for term in (t.strip() for t in re.split(r",(?![^()]*\))", selector or "") if t.strip()):
        if m := re.fullmatch(r"(\S+)\s+(in|notin)\s+\((.*)\)", term):
            values = {v.strip() for v in m.group(3).split(",")}
            if (labels.get(m.group(1)) in values) != (m.group(2) == "in"):
                return False
        elif "!=" in term:
            k, v = (s.strip() for s in term.split("!=", 1))
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = (s.strip() for s in term.replace("==", "=").split("=", 1))
            if labels.get(k) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class Store:
    """Objects by (resource, namespace, name), with a resourceVersion counter and an event history."""

    def __init__(self, validators: dict[Key, Callable[[dict], list[str]]] | None = None, history: int = 20_000) -> None:
        self.validators = validators or {}
        self.cond = threading.Condition(threading.RLock())
        self.objects: dict[tuple[Key, str, str], dict] = {}
        self.events: deque[tuple[int, Key, str, str, dict]] = deque(maxlen=history)
        self.listeners: list[Callable[[str, Key, dict], None]] = []
        self._rv = itertools.count(1000)
        self.rv = 999

    def _bump(self) -> str:
        self.rv = next(self._rv)
        return str(self.rv)

    def _emit(self, key: Key, namespace: str, kind: str, obj: dict) -> None:
        self.events.append((self.rv, key, namespace, kind, obj))
        self.cond.notify_all()
        for listener in list(self.listeners):
            listener(kind, key, json.loads(json.dumps(obj)))

    def create(self, key: Key, namespace: str, obj: dict) -> dict:
        """Add a new object (ADDED); 409 if its name is taken, 422 if it is invalid."""
        obj = json.loads(json.dumps(obj))
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or ""
        if not _NAME.match(name) or len(name) > 253:
            raise ApiError(422, "Invalid", f"{KINDS[key]} {name!r} is invalid: metadata.name: Invalid value")
        group_version = f"{key[0]}/{key[1]}" if key[0] else key[1]
        if obj.get("kind") != KINDS[key] or obj.get("apiVersion") != group_version:
            raise ApiError(400, "BadRequest", f"the object is a {obj.get('kind')} of {obj.get('apiVersion')}, "
                                              f"not a {KINDS[key]} of {group_version}")
        errors = self.validators[key](obj) if key in self.validators else []
        if errors:
            causes = [{"reason": "FieldValueInvalid", "message": e} for e in errors]
            raise ApiError(422, "Invalid", f'{KINDS[key]}.{key[0]} "{name}" is invalid: {"; ".join(errors[:3])}',
                           {"name": name, "kind": KINDS[key], "causes": causes})
        with self.cond:
            if (key, namespace, name) in self.objects:
                raise ApiError(409, "AlreadyExists", f'{key[2]} "{name}" already exists', {"name": name})
            if key != PODS:
                obj.pop("status", None)  # the status subresource: status is not set on create
            meta.update(namespace=namespace, uid=str(uuid.uuid4()), generation=1,
                        creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            meta["resourceVersion"] = self._bump()
            self.objects[(key, namespace, name)] = obj
            self._emit(key, namespace, "ADDED", obj)
            return json.loads(json.dumps(obj))

    def get(self, key: Key, namespace: str, name: str) -> dict:
        """An object; 404 if there is none."""
        with self.cond:
            obj = self.objects.get((key, namespace, name))
            if obj is None:
                raise _not_found(key, name)
            return json.loads(json.dumps(obj))

    def list(self, key: Key, namespace: str, selector: str = "") -> tuple[list[dict], str]:
        """Objects matching ``selector`` and the list's resourceVersion."""
        with self.cond:
            items = [json.loads(json.dumps(o)) for (k, ns, _), o in self.objects.items()
                     if k == key and ns == namespace and matches(selector, o["metadata"].get("labels") or {})]
            return items, str(self.rv)

    def update(self, key: Key, namespace: str, name: str, change: Callable[[dict], dict], status: bool = False) -> dict:
        """Replace an object by ``change(current)``; only its status with ``status``, else all but it."""
        with self.cond:
            current = self.get(key, namespace, name)
            new = change(json.loads(json.dumps(current)))
            wanted = (new.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {key[2]} "{name}": '
                                                "the object has been modified; please apply your changes to the latest version")
            if status:
                current["status"] = new.get("status") or {}
            else:
                if new.get("spec") != current.get("spec"):
                    current["metadata"]["generation"] += 1
                new["status"], new["metadata"] = current.get("status"), {**current["metadata"], **(new.get("metadata") or {})}
                current = new
            current["metadata"]["resourceVersion"] = self._bump()
            self.objects[(key, namespace, name)] = current
            self._emit(key, namespace, "MODIFIED", current)
            return json.loads(json.dumps(current))

    def delete(self, key: Key, namespace: str, name: str, propagation: str = "Background") -> dict:
        """Delete an object (DELETED) and, unless orphaned, the objects it owns."""
        with self.cond:
            obj = self.get(key, namespace, name)
            uid = obj["metadata"]["uid"]
            if propagation != "Orphan":
                owned = [(k, ns, n) for (k, ns, n), o in self.objects.items()
                         if ns == namespace and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])]
                for k, ns, n in owned:
                    self.delete(k, ns, n, propagation)
            del self.objects[(key, namespace, name)]
            obj["metadata"]["resourceVersion"] = self._bump()
            self._emit(key, namespace, "DELETED", obj)
            return obj

    def events_after(self, rv: int, key: Key, namespace: str, selector: str) -> tuple[list[tuple[str, dict]], int]:
        """Events since ``rv`` for one resource and selector, and the version they reach; 410 once
        ``rv`` is older than the history kept."""
        with self.cond:
            if self.events and rv < self.events[0][0] - 1 and len(self.events) == self.events.maxlen:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.events[0][0]})")
            events = [(kind, obj) for r, k, ns, kind, obj in self.events
                      if r > rv and k == key and ns == namespace and matches(selector, obj["metadata"].get("labels") or {})]
            return events, max(rv, self.rv)
