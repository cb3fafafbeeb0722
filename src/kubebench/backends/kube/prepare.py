"""What the Kubernetes backend adds to every rendered manifest, whatever its kind (the kind's own
additions and refusals are its driver's ``prepare``), and where the run's folders are in the pods."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from ...errors import SpecError, StorageError
from ...paths import RunPaths
from ...render import kinds, versions
from .api import resource_of
from .config import KubernetesConfig

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: The folders a job's pods write into: output, result, and the data folder (datasets made on first use).
#: Sticky, as /tmp is: a pod of another user cannot replace the logs the runner writes there.
POD_WRITABLE = 0o1777


def prepare(manifest: dict[str, Any], paths: RunPaths, config: KubernetesConfig, namespace: str,
            config_map: str | None, version: versions.Version | None) -> dict[str, Any]:
    """Mount the claim and a ``/dev/shm`` into every pod (and the ConfigMap ``config_map`` of the
    spec's folder, as their working directory); one replica per pod (LOCAL_WORLD_SIZE); the security
    contexts of ``backend.pod_security_context`` / ``container_security_context`` where a pod or
    container sets none; set namespace and service account; refuse a field the cluster's Kubernetes
    ``version`` lacks.
    In place; returns ``manifest``."""
    resource_of(manifest)  # refuses kinds that do not exist on Kubernetes (Process)
    meta = manifest.setdefault("metadata", {})
    given = meta.setdefault("namespace", namespace)
    if given != namespace:
        raise SpecError(f"the job's namespace {given!r} is not the backend's ({namespace!r})")
    kinds.valid_labels(manifest)
    versions.require([manifest], version)
    storage = config.storage
    kinds.mount_claim(manifest, storage.volume, storage.claim, storage.mount_path, _folders(storage, paths))
    kinds.mount_shm(manifest, config.shm_size)
    if config_map:  # the pods' working directory: the spec's folder
        kinds.mount_config_map(manifest, "kubebench-spec", config_map, config.spec_mount)
    # In Istio-injected namespaces (Kubeflow profiles) a classic sidecar outlives the job's container.
    kinds.set_template_annotations(manifest, {"sidecar.istio.io/inject": "false"})
    kinds.add_env_default(manifest, {"LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0"})
    kinds.set_security(manifest, config.pod_security_context, config.container_security_context)
    if config.service_account:
        kinds.set_pod_defaults(manifest, {"serviceAccountName": config.service_account})
    return manifest


def queue(manifest: dict[str, Any], config: KubernetesConfig) -> None:
    """Label the job with the Kueue queue of ``backend.queue`` (once its kind's driver accepted it)."""
    if config.queue:
        manifest.setdefault("metadata", {}).setdefault("labels", {}).setdefault(QUEUE_LABEL, config.queue)


def claim_root(config: KubernetesConfig, local: RunPaths) -> Path:
    """Where kubebench sees the claim: ``storage.local_path``, else the experiments' parent folder."""
    storage = config.storage
    return Path(storage.local_path) if storage.local_path else Path(local.experiments_root).parent


def job_paths(local: RunPaths, config: KubernetesConfig) -> RunPaths:
    """The run's folders inside the pods: the same place on the claim, under its mount path."""
    root, mount = claim_root(config, local), PurePosixPath(config.storage.mount_path)
    return RunPaths(_on_claim(local.experiments_root, root, mount), _on_claim(local.data_root, root, mount),
                    local.experiment_id, local.run_id)


def open_to_pods(paths: RunPaths) -> None:
    """Let the job's containers write the run's folders whatever user they run as, as they write an
    ``emptyDir``. The runner (non-root) creates them 0755; a container running as root on an NFS claim
    with ``root_squash`` (the default of EFS, Filestore and NFS provisioners) is "nobody" there, and an
    ``fsGroup`` does not help, since the kubelet does not change the ownership of NFS volumes.
    The data folder is shared by experiments: it is opened only by its owner."""
    for folder in (paths.output, paths.result, paths.data_root):
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
            if folder != paths.data_root or os.stat(folder).st_uid == os.getuid():
                os.chmod(folder, POD_WRITABLE)
        except OSError as e:
            raise StorageError(f"cannot open {folder} to the job's pods: {e.strerror or e}") from e


def _folders(storage: Any, paths: RunPaths) -> tuple[tuple[str, str, bool], ...]:
    """The run's folder and the data folder (workloads make their datasets there on first use) as
    subPaths of the claim."""
    if not storage.isolate:
        return ()
    mount = PurePosixPath(storage.mount_path)
    return tuple((str(path), str(PurePosixPath(path).relative_to(mount)), read_only)
                 for path, read_only in ((paths.run, False), (paths.data_root, False)))


def _on_claim(path: Any, root: Path, mount: PurePosixPath) -> PurePosixPath:
    try:
        relative = Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        raise SpecError(f"{path} is not on the shared storage ({root}, mounted at {mount} in the pods): set "
                        "backend.storage.local_path to where kubebench sees the claim, or move the folder onto it") from None
    return mount.joinpath(*relative.parts)
