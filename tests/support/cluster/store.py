"""The state of the emulated cluster: objects by resource, namespace and name, with resourceVersions,
an event history for watches, label and field selectors, the status subresource, and deletion as
the API server and the garbage collector do it. The API emulator serves it over HTTP; the operator
stand-in reads and writes it directly, as a controller inside the cluster would.

Deletion (``delete``) follows the real semantics:

- ``Background`` removes the owner at once; the garbage collector (:meth:`Store.collect_garbage`,
  run by the emulator in a thread) deletes its dependents a moment later;
- ``Foreground`` marks the owner (``deletionTimestamp``, finalizer ``foregroundDeletion``); it goes
  once the collector has deleted its dependents;
- ``Orphan`` removes the owner and strips the dependents' ownerReferences; a batch/v1 Job deleted
  without a policy is orphaned, as the REST API does for that kind;
- a pod bound to a node whose kubelet runs (``kubelets``) only gets a ``deletionTimestamp``: it stays
  Terminating until that kubelet has stopped its containers and calls :meth:`Store.finalize`.
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
    ("", "v1", "nodes"): "Node",
    ("", "v1", "events"): "Event",
    ("", "v1", "services"): "Service",
    ("batch", "v1", "jobs"): "Job",
    ("batch", "v1", "cronjobs"): "CronJob",
    ("apps", "v1", "deployments"): "Deployment",
    ("apps", "v1", "statefulsets"): "StatefulSet",
    ("kubeflow.org", "v1", "pytorchjobs"): "PyTorchJob",
    ("kubeflow.org", "v1", "tfjobs"): "TFJob",
    ("kubeflow.org", "v1", "mpijobs"): "MPIJob",
    ("kubeflow.org", "v2beta1", "mpijobs"): "MPIJob",
    ("kubeflow.org", "v1", "jaxjobs"): "JAXJob",
    ("kubeflow.org", "v1", "xgboostjobs"): "XGBoostJob",
    ("trainer.kubeflow.org", "v1alpha1", "trainjobs"): "TrainJob",
    ("jobset.x-k8s.io", "v1alpha2", "jobsets"): "JobSet",
    ("kueue.x-k8s.io", "v1beta1", "localqueues"): "LocalQueue",
    ("kueue.x-k8s.io", "v1beta2", "localqueues"): "LocalQueue",
    ("kueue.x-k8s.io", "v1beta1", "workloads"): "Workload",
    ("kueue.x-k8s.io", "v1beta2", "workloads"): "Workload",
    ("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"): "ClusterTrainingRuntime",
    ("trainer.kubeflow.org", "v1alpha1", "trainingruntimes"): "TrainingRuntime",
    ("scheduling.volcano.sh", "v1beta1", "podgroups"): "PodGroup",
    ("scheduling.x-k8s.io", "v1alpha1", "podgroups"): "PodGroup",
    ("rbac.authorization.k8s.io", "v1", "roles"): "Role",
    ("rbac.authorization.k8s.io", "v1", "rolebindings"): "RoleBinding",
    ("rbac.authorization.k8s.io", "v1", "clusterroles"): "ClusterRole",
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"): "ClusterRoleBinding",
}
PODS: Key = ("", "v1", "pods")
JOBS: Key = ("batch", "v1", "jobs")
EVENTS: Key = ("", "v1", "events")
CLUSTER_SCOPED = {("", "v1", "namespaces"), ("", "v1", "nodes"), ("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"),
                  ("rbac.authorization.k8s.io", "v1", "clusterroles"), ("rbac.authorization.k8s.io", "v1", "clusterrolebindings")}
FOREGROUND = "foregroundDeletion"
_SERVER_OWNED = ("uid", "creationTimestamp", "generation", "namespace", "name")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
#: ``check(obj) -> (unknown field paths, invalid values)`` and ``prune(obj, paths) -> obj``, per resource.
Checker = Callable[[dict], tuple[list[str], list[str]]]


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


def fields_match(selector: str, obj: dict) -> bool:
    """Whether ``obj`` satisfies a field selector of ``path=value`` terms (``involvedObject.uid=…``)."""
    for term in (t.strip() for t in (selector or "").split(",") if t.strip()):
        path, _, value = term.replace("==", "=").partition("=")
        node: Any = obj
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if str(node if node is not None else "") != value:
            return False
    return True


def label_errors(labels: dict | None, where: str = "metadata.labels") -> list[str]:
    """The apiserver's ObjectMeta label validation (key: optional DNS prefix + name ≤ 63; value ≤ 63)."""
    errors = []
    for key, value in (labels or {}).items():
        prefix, _, name = key.rpartition("/")
        if len(name) > 63 or not _LABEL_NAME.match(name) or prefix and (len(prefix) > 253 or not _LABEL_PREFIX.match(prefix)):
            errors.append(f"{where}: Invalid value: {key!r}: name part must consist of alphanumeric characters, "
                          "'-', '_' or '.', and must start and end with an alphanumeric character")
        value = str(value)
        if len(value) > 63 or value and not _LABEL_NAME.match(value):
            errors.append(f"{where}: Invalid value: {value!r}: a valid label must be an empty string or consist of "
                          "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                          "character (regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
    return errors


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


def _copy(obj: Any) -> Any:
    return json.loads(json.dumps(obj))


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Store:
    """Objects by (resource, namespace, name), with a resourceVersion counter and an event history."""

    def __init__(self, checkers: dict[Key, Checker] | None = None, history: int = 20_000,
                 prune: Callable[[dict, list[str]], dict] | None = None) -> None:
        self.checkers = dict(checkers or {})
        #: The kinds served (custom resources are added when their CRD is created, see :mod:`.apiext`).
        self.kinds: dict[Key, str] = dict(KINDS)
        self.cluster_scoped: set[Key] = set(CLUSTER_SCOPED)
        self.custom: dict[Key, Any] = {}  # kinds served from a CRD: apiext.CustomKind
        #: Called with each object created (``hook(key, obj)``), inside the create.
        self.on_created: list[Callable[[Key, dict], None]] = []
        self.prune = prune or (lambda obj, paths: obj)
        self.cond = threading.Condition(threading.RLock())
        self.objects: dict[tuple[Key, str, str], dict] = {}
        self.events: deque[tuple[int, Key, str, str, dict]] = deque(maxlen=history)
        self.listeners: list[Callable[[str, Key, dict], None]] = []
        #: Mutating admission webhooks: ``hook(key, obj) -> obj`` on every create (Kueue's suspends jobs).
        self.admission: list[Callable[[Key, dict], dict]] = []
        #: Nodes whose kubelet finishes the deletion of their pods (see the module's docstring).
        self.kubelets: set[str] = set()
        #: Seconds the garbage collector waits before deleting the dependents of a deleted owner.
        self.gc_delay = 0.05
        #: Remove a deleted owner's dependents (and theirs), pods too without a grace period, within
        #: the DELETE itself: the fast end of a cluster, where the collector runs at once and each
        #: container exits at its SIGTERM. A log read after the DELETE then finds no pod (404).
        self.instant_cascade = False
        self._orphaned_at: dict[str, float] = {}
        self._rv = itertools.count(1000)
        self.rv = 999

    def _bump(self) -> str:
        self.rv = next(self._rv)
        return str(self.rv)

    def _emit(self, key: Key, namespace: str, kind: str, obj: dict) -> None:
        self.events.append((self.rv, key, namespace, kind, obj))
        self.cond.notify_all()
        for listener in list(self.listeners):
            listener(kind, key, _copy(obj))

    def create(self, key: Key, namespace: str, obj: dict, validation: str = "Ignore",
               warnings: list[str] | None = None) -> dict:
        """Add a new object (ADDED). ``validation`` is the request's fieldValidation: unknown fields
        are pruned (Ignore, Warn: noted in ``warnings``) or refused (Strict: 400); invalid values and
        labels are 422, a taken name 409."""
        obj = _copy(obj)
        meta = obj.setdefault("metadata", {})
        name = meta.get("name") or ""
        if not _NAME.match(name) or len(name) > 253:
            raise ApiError(422, "Invalid", f"{self.kinds[key]} {name!r} is invalid: metadata.name: Invalid value")
        group_version = f"{key[0]}/{key[1]}" if key[0] else key[1]
        if obj.get("kind") != self.kinds[key] or obj.get("apiVersion") != group_version:
            raise ApiError(400, "BadRequest", f"the object is a {obj.get('kind')} of {obj.get('apiVersion')}, "
                                              f"not a {self.kinds[key]} of {group_version}")
        for hook in self.admission:
            obj = hook(key, obj)
        if key == PODS:  # PodSecurity admission, for namespaces labelled to enforce it
            from .podsecurity import refusal

            space = self.objects.get((("", "v1", "namespaces"), "", namespace)) or {}
            refused = refusal(space.get("metadata", {}).get("labels") or {}, name, obj.get("spec") or {})
            if refused:
                raise ApiError(403, "Forbidden", refused)
        obj = self._checked(key, obj, validation, warnings)
        with self.cond:
            if (key, namespace, name) in self.objects:
                raise ApiError(409, "AlreadyExists", f'{key[2]} "{name}" already exists', {"name": name})
            # The status subresource: status is not taken from a create (a pod starts Pending).
            if key == PODS:
                obj["status"] = {"phase": "Pending"}
            elif self._has_status(key):
                obj.pop("status", None)
            meta.update(namespace=namespace, uid=str(uuid.uuid4()), generation=1, creationTimestamp=_now())
            meta["resourceVersion"] = self._bump()
            self.objects[(key, namespace, name)] = obj
            self._emit(key, namespace, "ADDED", obj)
            for created in self.on_created:
                created(key, obj)
            return _copy(obj)

    def _has_status(self, key: Key) -> bool:
        from .apiext import has_status

        return has_status(self, key)

    def _checked(self, key: Key, obj: dict, validation: str, warnings: list[str] | None) -> dict:
        name = obj["metadata"]["name"]
        unknown, errors = self.checkers[key](obj) if key in self.checkers else ([], [])
        template = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
        errors = label_errors(obj["metadata"].get("labels")) + errors
        if key in (JOBS, PODS):  # built-in pod templates are ObjectMeta too; a CR's are only a schema
            errors += label_errors(template.get("labels"), "spec.template.metadata.labels")
        if unknown and validation == "Strict":
            fields = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise ApiError(400, "BadRequest", f'{self.kinds[key]} in version "{key[1]}" cannot be handled as a '
                                              f"{self.kinds[key]}: strict decoding error: {fields}")
        if errors:
            causes = [{"reason": "FieldValueInvalid", "message": e} for e in errors]
            raise ApiError(422, "Invalid", f'{self.kinds[key]}.{key[0]} "{name}" is invalid: {"; ".join(errors[:3])}',
                           {"name": name, "kind": self.kinds[key], "causes": causes})
        if unknown and warnings is not None and validation == "Warn":
            warnings += [f'unknown field "{u}"' for u in unknown]
        return self.prune(obj, unknown) if unknown else obj

    def get(self, key: Key, namespace: str, name: str) -> dict:
        """An object; 404 if there is none."""
        with self.cond:
            obj = self.objects.get((key, namespace, name))
            if obj is None:
                raise _not_found(key, name)
            return _copy(obj)

    def find(self, key: Key, namespace: str, name: str) -> dict | None:
        """An object, or None."""
        with self.cond:
            obj = self.objects.get((key, namespace, name))
            return _copy(obj) if obj is not None else None

    def list(self, key: Key, namespace: str, selector: str = "", fields: str = "") -> tuple[list[dict], str]:
        """Objects matching ``selector`` (and the field selector ``fields``) and the list's resourceVersion."""
        with self.cond:
            items = [_copy(o) for (k, ns, _), o in self.objects.items()
                     if k == key and ns == namespace and matches(selector, o["metadata"].get("labels") or {})
                     and fields_match(fields, o)]
            return items, str(self.rv)

    def update(self, key: Key, namespace: str, name: str, change: Callable[[dict], dict], status: bool = False) -> dict:
        """Replace an object by ``change(current)``; only its status with ``status``, else all but it."""
        with self.cond:
            current = self.get(key, namespace, name)
            new = change(_copy(current))
            wanted = (new.get("metadata") or {}).get("resourceVersion")
            if wanted and wanted != current["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {key[2]} "{name}": '
                                                "the object has been modified; please apply your changes to the latest version")
            from .apiext import generation_changed

            if status:
                current["status"] = new.get("status") or {}
            else:
                if self._has_status(key):
                    new["status"] = current.get("status")
                # What the server owns stays its own, whatever the client sent back.
                owned = {k: current["metadata"][k] for k in _SERVER_OWNED if k in current["metadata"]}
                new["metadata"] = {**current["metadata"], **(new.get("metadata") or {}), **owned}
                if generation_changed(self, key, current, new):
                    new["metadata"]["generation"] += 1
                current = new
            if current.get("status") is None:
                current.pop("status", None)
            if key in self.custom:  # a custom resource is validated on every write (built-in kinds: on create)
                current = self._checked(key, current, "Ignore", None)
            current["metadata"]["resourceVersion"] = self._bump()
            self.objects[(key, namespace, name)] = current
            self._emit(key, namespace, "MODIFIED", current)
            return _copy(current)

    def delete(self, key: Key, namespace: str, name: str, propagation: str | None = None) -> dict:
        """Delete an object as the API server does (see the module's docstring); returns it as it
        was left (marked for deletion, or gone)."""
        with self.cond:
            obj = self.get(key, namespace, name)
            meta = obj["metadata"]
            if meta.get("deletionTimestamp"):
                return obj  # already going
            policy = propagation or ("Orphan" if key == JOBS else "Background")
            if policy == "Orphan":
                self._orphan(namespace, meta["uid"])
            elif self.instant_cascade:
                self._remove_dependents(namespace, meta["uid"])
            graceful = key == PODS and (obj.get("spec") or {}).get("nodeName") in self.kubelets
            if policy == "Foreground" or graceful or meta.get("finalizers"):
                return self._mark(key, namespace, name, policy == "Foreground")
            return self.finalize(key, namespace, name)

    def _mark(self, key: Key, namespace: str, name: str, foreground: bool) -> dict:
        def mark(o: dict) -> dict:
            o["metadata"]["deletionTimestamp"] = _now()
            o["metadata"]["deletionGracePeriodSeconds"] = (o.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            if foreground:
                o["metadata"]["finalizers"] = [*(o["metadata"].get("finalizers") or []), FOREGROUND]
            return o

        return self.update(key, namespace, name, mark)

    def _orphan(self, namespace: str, uid: str) -> None:
        for (k, ns, n), o in list(self.objects.items()):
            refs = o["metadata"].get("ownerReferences") or []
            if ns == namespace and any(r.get("uid") == uid for r in refs):
                kept = [r for r in refs if r.get("uid") != uid]
                self.update(k, ns, n, lambda x, kept=kept: {**x, "metadata": {**x["metadata"], "ownerReferences": kept}})

    def _remove_dependents(self, namespace: str, uid: str) -> None:
        for (k, ns, n), o in list(self.objects.items()):
            if ns == namespace and (k, ns, n) in self.objects \
                    and any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or []):
                self._remove_dependents(ns, o["metadata"]["uid"])
                self.finalize(k, ns, n)

    def finalize(self, key: Key, namespace: str, name: str) -> dict:
        """Remove an object for good (DELETED): its kubelet or the garbage collector is done with it."""
        with self.cond:
            obj = self.objects.pop((key, namespace, name), None)
            if obj is None:
                raise _not_found(key, name)
            obj["metadata"]["resourceVersion"] = self._bump()
            self._emit(key, namespace, "DELETED", obj)
            return obj

    def collect_garbage(self) -> None:
        """One pass of the garbage collector: delete the dependents of owners that are gone (after
        ``gc_delay``) or deleted in the foreground, and remove foreground owners left without any."""
        with self.cond:
            uids = {o["metadata"]["uid"]: (k, ns, n) for (k, ns, n), o in self.objects.items()}
            now, dependents = time.monotonic(), set()
            for (k, ns, n), o in list(self.objects.items()):
                for ref in o["metadata"].get("ownerReferences") or []:
                    owner = uids.get(ref.get("uid"))
                    if owner is None:
                        first = self._orphaned_at.setdefault(o["metadata"]["uid"], now)
                        if now - first >= self.gc_delay:
                            self._collect(k, ns, n, "Background")
                    else:
                        dependents.add(ref["uid"])
                        found = self.objects.get(owner)
                        if found and FOREGROUND in (found["metadata"].get("finalizers") or []):
                            self._collect(k, ns, n, "Background" if k == PODS else "Foreground")
            for uid, (k, ns, n) in uids.items():
                obj = self.objects.get((k, ns, n))
                if obj and FOREGROUND in (obj["metadata"].get("finalizers") or []) and uid not in dependents:
                    self.finalize(k, ns, n)

    def _collect(self, key: Key, namespace: str, name: str, policy: str) -> None:
        try:
            self.delete(key, namespace, name, policy)
        except ApiError:
            pass

    def events_after(self, rv: int, key: Key, namespace: str, selector: str) -> tuple[list[tuple[str, dict]], int]:
        """Events since ``rv`` for one resource and selector, and the version they reach; 410 once
        ``rv`` is older than the history kept."""
        with self.cond:
            if self.events and rv < self.events[0][0] - 1 and len(self.events) == self.events.maxlen:
                raise ApiError(410, "Expired", f"too old resource version: {rv} ({self.events[0][0]})")
            events = [(kind, obj) for r, k, ns, kind, obj in self.events
                      if r > rv and k == key and ns == namespace and matches(selector, obj["metadata"].get("labels") or {})]
            return events, max(rv, self.rv)

    def record_event(self, namespace: str, involved: dict, reason: str, message: str, kind: str = "Warning",
                     source: str = "", field_path: str = "", event_time: str = "") -> None:
        """An Event about ``involved`` (an object), as controllers and the kubelet write them: named
        ``<object>.<hex UnixNano>`` with whole-second timestamps (client-go ``tools/record``'s
        ``makeEvent``); with ``event_time`` (a MicroTime) as an events.k8s.io recorder writes it and the
        core API shows it: ``eventTime`` and ``reportingComponent``, no ``firstTimestamp``."""
        meta = involved.get("metadata") or {}
        stamp = time.time_ns()
        with self.cond:
            while (EVENTS, namespace, f"{meta.get('name', 'x')}.{stamp:x}") in self.objects:
                stamp += 1
        name = f"{meta.get('name', 'x')}.{stamp:x}"
        obj: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "type": kind, "reason": reason,
            "message": message, "source": {"component": source}, "count": 1,
            "involvedObject": {"kind": involved.get("kind"), "name": meta.get("name"), "namespace": namespace,
                               "uid": meta.get("uid"), "apiVersion": involved.get("apiVersion"),
                               **({"fieldPath": field_path} if field_path else {})}}
        if event_time:
            obj |= {"eventTime": event_time, "reportingComponent": source, "source": {}}
        else:
            obj |= {"firstTimestamp": _now(), "lastTimestamp": _now()}
        self.create(EVENTS, namespace, obj)
