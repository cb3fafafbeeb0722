"""The spec's folder as a ConfigMap of the experiment, for a runner that has none given
(``backend.spec_configmap``, set by ``kubebench deploy manifests``): job pods mount it as their working
directory, so that ``python runner.py`` beside the spec runs on a cluster as it does locally.

It is made once the experiment's lock is held, before any job (an earlier one of the same experiment,
left by a killed runner, is replaced), and deleted when the runner ends, unless jobs are kept.
"""

from __future__ import annotations

import hashlib
import logging

from ...errors import BackendError, PreflightError
from .api import CONFIG_MAPS, Api
from .handle import EXPERIMENT_LABEL

log = logging.getLogger("kubebench")
PREFIX = "kb-spec-"
MAX_NAME = 63


def name_of(experiment_id: str) -> str:
    """``kb-spec-<experiment id>``; a long id is cut and a digest of it added (at most 63 characters)."""
    name = PREFIX + experiment_id
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(experiment_id.encode()).hexdigest()[:8]
    return f"{PREFIX}{experiment_id[:MAX_NAME - len(PREFIX) - 9].rstrip('-.')}-{digest}"


def ship(api: Api, namespace: str, experiment_id: str, files: dict[str, str]) -> str:
    """Create the experiment's ConfigMap from ``files`` (replacing one of the same name); its name."""
    body = config_map(experiment_id, files)
    name = body["metadata"]["name"]
    try:
        for _ in range(3):
            if api.create(CONFIG_MAPS, namespace, body) is not None:
                return name
            # Left by an earlier runner of this experiment (killed): the folder may have changed since.
            api.delete(CONFIG_MAPS, namespace, name, "Background")
    except BackendError as e:
        hint = (" (the job pods get the spec's folder as this ConfigMap: allow kubebench to create and delete "
                "configmaps, or set backend.ship_spec: false)") if getattr(e, "http_status", None) == 403 else ""
        raise PreflightError(f"{e}{hint}") from e
    raise PreflightError(f"create ConfigMap {namespace}/{name}: the name stays taken by another object")


def config_map(experiment_id: str, files: dict[str, str]) -> dict:
    """The ConfigMap of the experiment's spec folder."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": dict(files),
            "metadata": {"name": name_of(experiment_id), "labels": {EXPERIMENT_LABEL: experiment_id}}}


def remove(api: Api, namespace: str, name: str) -> None:
    """Delete the ConfigMap; a failure is logged (it stays, labelled with its experiment)."""
    try:
        api.delete(CONFIG_MAPS, namespace, name, "Background")
    except BackendError as e:
        log.warning("%s; ConfigMap %s/%s stays (label %s)", e, namespace, name, EXPERIMENT_LABEL)
