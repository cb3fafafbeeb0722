"""What the API emulator serves beyond fixed kinds, as kube-apiserver (1.31+) does:

- **CustomResourceDefinitions** (``apiextensions.k8s.io/v1``): creating one serves its kind at each
  served version (``apiextensions-apiserver/pkg/apiserver/customresource_handler.go``), objects are
  checked against that version's structural schema (pruned or refused as built-in kinds are, see
  :mod:`.crdschema`), and the CRD gets ``Established`` and ``NamesAccepted`` conditions;
- **the status subresource** of a custom resource, when its CRD declares it
  (``pkg/registry/customresource/strategy.go``, ``status_strategy.go``): a create drops ``status``, an
  update of the object keeps the old ``status``, an update of ``/status`` changes nothing but it;
  ``metadata.generation`` is 1 on create and is bumped by any change other than ``metadata`` (and
  ``status``, with the subresource); without the subresource ``/status`` is 404 and status is data;
  a custom resource cannot be updated without a ``metadata.resourceVersion`` (``AllowUnconditionalUpdate``
  is false for custom resources);
- **discovery**: ``/api`` (``APIVersions``), ``/apis`` (``APIGroupList`` with each group's preferred
  version, by Kubernetes' version priority), ``/apis/<group>/<version>`` with verbs, short names,
  categories and the ``<plural>/status`` subresources (``apiserver/pkg/endpoints/discovery``);
- **PATCH** by ``Content-Type`` (``apiserver/pkg/endpoints/handlers/patch.go``): a JSON merge patch
  (RFC 7386), a JSON patch (RFC 6902, ``test`` operations included: a failed one is 422), a strategic
  merge patch refused with 415 for custom resources; server-side apply is not emulated (415);
- **Leases** (``coordination.k8s.io/v1``) are a kind like any other (leader election writes them with
  optimistic concurrency: a PUT with a stale ``resourceVersion`` is 409).
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from .crdschema import field_check, validator
from .store import ApiError, Key, Store, merge_patch

CRDS: Key = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
LEASES: Key = ("coordination.k8s.io", "v1", "leases")
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
MERGE, JSON_PATCH, STRATEGIC, APPLY = ("application/merge-patch+json", "application/json-patch+json",
                                       "application/strategic-merge-patch+json", "application/apply-patch+yaml")


@dataclass(frozen=True)
class CustomKind:
    """A kind served from a CRD."""

    crd: str
    status: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple = field(default=())


def register(store: Store) -> None:
    """Serve CRDs and Leases from ``store``, and every CRD created in it from then on."""
    store.kinds[CRDS] = "CustomResourceDefinition"
    store.kinds[LEASES] = "Lease"
    store.kinds[("", "v1", "secrets")] = "Secret"
    store.cluster_scoped.add(CRDS)
    store.on_created.append(lambda key, obj: install(store, obj) if key == CRDS else None)


def install(store: Store, crd: dict) -> None:
    """Serve the kind of ``crd`` (at every served version), as the apiextensions server does once
    the CRD is Established; its status says so."""
    spec, names = crd["spec"], crd["spec"]["names"]
    if crd["metadata"]["name"] != f"{names['plural']}.{spec['group']}":
        raise ApiError(422, "Invalid", f'CustomResourceDefinition "{crd["metadata"]["name"]}" is invalid: '
                                       "metadata.name: must be spec.names.plural+\".\"+spec.group")
    for version in spec["versions"]:
        if not version.get("served"):
            continue
        key = (spec["group"], version["name"], names["plural"])
        store.kinds[key] = names["kind"]
        if spec.get("scope") == "Cluster":
            store.cluster_scoped.add(key)
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {"type": "object",
                                                                         "x-kubernetes-preserve-unknown-fields": True}
        check = validator(schema)
        store.checkers[key] = lambda doc, check=check: field_check(check, doc)
        store.custom[key] = CustomKind(crd["metadata"]["name"], "status" in (version.get("subresources") or {}),
                                       names.get("singular") or names["kind"].lower(), tuple(names.get("shortNames") or ()),
                                       tuple(names.get("categories") or ()), tuple(version.get("additionalPrinterColumns") or ()))
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"acceptedNames": names, "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
              "conditions": [{"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now}
                             for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                             ("Established", "InitialNamesAccepted", "the initial names have been accepted"))]}
    store.update(CRDS, "", crd["metadata"]["name"], lambda o: {**o, "status": status}, status=True)


def patched(current: dict, body: Any, content_type: str, custom: bool) -> dict:
    """``current`` with a PATCH body applied, by its Content-Type."""
    kind = (content_type or "").split(";")[0].strip()
    if kind == MERGE or (kind == STRATEGIC and not custom):
        # Strategic merge patches of built-in kinds are taken as merge patches (their list merge keys
        # are not emulated: kubebench sends merge and JSON patches only).
        return merge_patch(current, body)
    if kind == JSON_PATCH:
        try:
            return jsonpatch.apply_patch(copy.deepcopy(current), body)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError) as e:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {e}") from e
    what = "strategic merge patch is not supported for custom resources" if kind == STRATEGIC \
        else f"the body of the request was in an unknown format - accepted media types include: {MERGE}, {JSON_PATCH}"
    raise ApiError(415, "UnsupportedMediaType", what)


def generation_changed(store: Store, key: Key, old: dict, new: dict) -> bool:
    """Whether an update bumps ``metadata.generation``: for custom resources any change but
    ``metadata`` (and ``status`` under the subresource), for built-in kinds a change of ``spec``."""
    if key not in store.custom:
        return new.get("spec") != old.get("spec")
    skip = {"metadata", "status"} if store.custom[key].status else {"metadata"}
    return {k: v for k, v in new.items() if k not in skip} != {k: v for k, v in old.items() if k not in skip}


def has_status(store: Store, key: Key) -> bool:
    """Whether ``key`` serves a status subresource (every built-in kind with a status does)."""
    return store.custom[key].status if key in store.custom else True


def _version_priority(version: str) -> tuple:
    """Kubernetes' version order (``apimachinery/pkg/version/helpers.go``): GA, then beta, then alpha,
    higher numbers first, then anything else by name."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), version)


def api_versions() -> dict:
    """``GET /api``."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_groups(store: Store, unserved: set[tuple[str, str]]) -> dict:
    """``GET /apis``: every group with its versions, the preferred one first."""
    by_group: dict[str, set[str]] = {}
    for group, version, _ in store.kinds:
        if group and (group, version) not in unserved:
            by_group.setdefault(group, set()).add(version)
    groups = []
    for group in sorted(by_group):
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in sorted(by_group[group], key=_version_priority)]
        groups.append({"name": group, "versions": versions, "preferredVersion": versions[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def resources(store: Store, group: str, version: str) -> list[dict]:
    """The ``resources`` of ``/apis/<group>/<version>``: each kind, then its status subresource."""
    out = []
    for key, kind in store.kinds.items():
        if key[:2] != (group, version):
            continue
        custom = store.custom.get(key)
        entry = {"name": key[2], "singularName": custom.singular if custom else kind.lower(), "kind": kind,
                 "namespaced": key not in store.cluster_scoped, "verbs": list(VERBS)}
        if custom and custom.short_names:
            entry["shortNames"] = list(custom.short_names)
        if custom and custom.categories:
            entry["categories"] = list(custom.categories)
        out.append(entry)
        if has_status(store, key) and key not in (CRDS, LEASES) and kind not in ("Namespace", "Event", "ConfigMap",
                                                                                   "ServiceAccount", "Role", "RoleBinding",
                                                                                   "ClusterRole", "ClusterRoleBinding"):
            out.append({"name": f"{key[2]}/status", "singularName": "", "kind": kind,
                        "namespaced": key not in store.cluster_scoped, "verbs": ["get", "patch", "update"]})
    return out
