"""The API calls of the controller and the runner's status writer, through the backend's ``Api``
(its retries, backoff and error messages): Benchmarks, their status (JSON patches fenced by the
Benchmark's uid), and the objects the controller makes."""

from __future__ import annotations

import json
from typing import Any, cast

from ..backends.kube.api import CONFIG_MAPS, JOBS, Api, Resource, raw
from . import GROUP, KIND, PLURAL, VERSION

BENCHMARKS = Resource(GROUP, VERSION, PLURAL, KIND)
CRON_JOBS = Resource("batch", "v1", "cronjobs", "CronJob")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
JSON_PATCH = "application/json-patch+json"


def resource_of(obj: dict) -> Resource:
    """The resource of an object the controller makes."""
    return {"ConfigMap": CONFIG_MAPS, "Job": JOBS, "CronJob": CRON_JOBS}[obj["kind"]]


def create(api: Api, obj: dict) -> dict | None:
    """Create ``obj``; None when its name is taken (it was made before: the names are deterministic)."""
    return api.create(resource_of(obj), obj["metadata"]["namespace"], obj)


def get(api: Api, res: Resource, namespace: str, name: str) -> dict | None:
    """Read an object (a ConfigMap through the core API); None if there is none."""
    if res == CONFIG_MAPS:
        return api.call(f"read ConfigMap {namespace}/{name}", lambda timeout: json.loads(raw(
            api.core.read_namespaced_config_map(name, namespace, _preload_content=False, _request_timeout=timeout)).data),
            expect=(404,))
    return api.get(res, namespace, name)


def patch(api: Api, res: Resource, namespace: str, name: str, body: Any) -> dict | None:
    """Merge-patch an object; None if it is gone."""
    return cast("dict | None", api.call(f"patch {res.kind} {namespace}/{name}", lambda timeout: api.custom.patch_namespaced_custom_object(
        res.group, res.version, namespace, res.plural, name, body, _request_timeout=timeout), expect=(404,)))


def replace(api: Api, res: Resource, namespace: str, name: str, body: dict) -> dict | None:
    """Replace an object (PUT, with its resourceVersion); None on a conflict (409) or if it is gone."""
    return cast("dict | None", api.call(f"replace {res.kind} {namespace}/{name}", lambda timeout: api.custom.replace_namespaced_custom_object(
        res.group, res.version, namespace, res.plural, name, body, _request_timeout=timeout), expect=(404, 409)))


def patch_status(api: Api, cr: dict, fields: dict[str, Any]) -> dict | None:
    """Set ``fields`` of the Benchmark's status (None values remove them) through ``/status``, fenced
    by its uid: a Benchmark deleted and made again under the same name is not written to (422).
    None when it is gone or was replaced."""
    meta = cr["metadata"]
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/uid", "value": meta["uid"]}]
    status = cr.get("status")
    if not status:
        ops.append({"op": "add", "path": "/status", "value": {k: v for k, v in fields.items() if v is not None}})
    else:
        for key, value in fields.items():
            if value is not None:
                ops.append({"op": "add", "path": f"/status/{key}", "value": value})
            elif key in status:
                ops.append({"op": "remove", "path": f"/status/{key}"})
    return cast("dict | None", api.call(f"patch the status of Benchmark {meta['namespace']}/{meta['name']}",
                                        lambda timeout: api.custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], ops, _content_type=JSON_PATCH,
        _request_timeout=timeout), expect=(404, 422)))


def delete_benchmark(api: Api, cr: dict) -> None:
    """Delete the Benchmark (its time to live is over), only if it is still the one read (its uid)."""
    meta = cr["metadata"]
    api.delete(BENCHMARKS, meta["namespace"], meta["name"], "Background", uid=meta["uid"])
