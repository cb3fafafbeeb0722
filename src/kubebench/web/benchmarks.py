"""``/api/benchmarks``: the Benchmark resources of the dashboard's namespace, with their state and a
link to their experiment, when the dashboard can reach a cluster (in a pod: its own namespace; else
the kubeconfig's). Without a cluster the answer says so; the page then shows nothing of it."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter

from ..errors import KubebenchError

router = APIRouter(prefix="/api", tags=["api"])
CACHE_SECONDS = 5.0
_cache: dict[str, Any] = {}
_lock = threading.Lock()


def _configured() -> bool:
    return "KUBERNETES_SERVICE_HOST" in os.environ or bool(os.environ.get("KUBECONFIG")) \
        or Path("~/.kube/config").expanduser().is_file()


def _row(cr: dict) -> dict[str, Any]:
    status = cr.get("status") or {}
    primary, gate = status.get("primary") or {}, status.get("gate") or {}
    experiment = status.get("experimentId")
    return {"name": cr["metadata"]["name"], "state": status.get("state") or "Pending", "progress": status.get("progress") or "",
            "primary": primary.get("median") or "", "unit": primary.get("unit") or "", "metric": primary.get("metric") or "",
            "verdict": gate.get("verdict") or "", "experiment_id": experiment,
            "link": f"/experiments/{experiment}" if experiment else None,
            "created": cr["metadata"].get("creationTimestamp")}


def listing() -> dict[str, Any]:
    """The Benchmarks of the namespace (cached a few seconds: every open page asks)."""
    with _lock:
        if _cache and time.monotonic() - _cache["at"] < CACHE_SECONDS:
            return _cache["answer"]
    answer = _fetch()
    with _lock:
        _cache.update(at=time.monotonic(), answer=answer)
    return answer


def _fetch() -> dict[str, Any]:
    if not _configured():
        return {"available": False, "namespace": None, "reason": "no cluster configured", "items": []}
    from ..backends.kube.api import Api, current_namespace
    from ..backends.kube.config import KubernetesConfig
    from ..operator.kube import BENCHMARKS

    config = KubernetesConfig(api_retries=2, request_timeout=5.0)
    namespace = current_namespace(config)
    try:
        api = Api(config)
        try:
            items = (api.list(BENCHMARKS, namespace, "") or {}).get("items") or []
        finally:
            api.close()
    except KubebenchError as e:
        return {"available": False, "namespace": namespace, "reason": str(e)[:300], "items": []}
    rows = sorted((_row(cr) for cr in items), key=lambda r: r["created"] or "", reverse=True)
    return {"available": True, "namespace": namespace, "reason": "", "items": rows}


@router.get("/benchmarks")
def benchmarks() -> dict:
    """The Benchmark resources of the dashboard's namespace: state, progress, primary metric, verdict, link."""
    return listing()
