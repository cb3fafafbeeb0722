"""Before jobs run on a cluster: can they run there at all?

:func:`check` is what every ``kubebench run`` does first, cheaply (the client configured, the API
server reachable, the namespace there, every job kind served): one clear error instead of a failed
run per job. :func:`doctor` checks all the rest (``kubebench doctor``): what kubebench's identity may
do (a SelfSubjectAccessReview per verb it uses), the claim bound and reachable from a pod (which
reads a file kubebench wrote where it sees the claim), the Kueue queue, and whether the cluster's
Kubernetes version has every field the jobs set (:mod:`kubebench.render.versions`).
"""

from __future__ import annotations

import copy
import logging
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...errors import BackendError, KubebenchError, PreflightError
from ...render import versions
from ..base import Check
from . import kueue, objects, runtimes
from .api import JOBS, SERVICES, Api, Resource

if TYPE_CHECKING:
    from .config import KubernetesConfig

JOB_VERBS = ("create", "get", "list", "watch", "delete")
#: A Serving job's Service is created, read (a retried create) and deleted, never watched.
SERVICE_VERBS = ("create", "get", "delete")
#: The ConfigMap of the spec's folder is made (after deleting one left by a killed runner) and deleted.
SPEC_MAP_VERBS = ("create", "delete")
#: What kubebench does besides its job kinds: (verb, group, resource, needed for).
OTHER_VERBS = (
    ("get", "", "pods", "following a job's pods"), ("list", "", "pods", "following a job's pods"),
    ("watch", "", "pods", "following a job's pods"), ("get", "", "pods/log", "copying the pods' logs"),
)
#: Not needed to run, but something is lost without them: (verb, group, resource, what).
OPTIONAL_VERBS = (
    ("list", "", "events", "why a pod does not start (events) goes unreported"),
    ("get", "", "nodes", "provenance lacks the nodes' GPU product and instance type"),
)
#: The same, with a queue: (verb, group, resource, what).
QUEUE_VERBS = (("list", "kueue.x-k8s.io", "workloads",
                "a job Kueue can never admit waits until backend.queue_timeout instead of failing with Kueue's reason"),)
PROBE_SECONDS = 180.0
log = logging.getLogger("kubebench")


def connect(api_of: Callable[[], Api], config: KubernetesConfig) -> Api:
    """The API client, or a PreflightError saying which cluster could not be configured or reached."""
    try:
        api = api_of()
        if api.served("", "v1") is None:
            raise BackendError(f"{api.host} serves no Kubernetes API")
    except PreflightError:
        raise
    except KubebenchError as e:
        where = config.kubeconfig or "$KUBECONFIG or ~/.kube/config, or in-cluster"
        cause = str(e).rstrip(". ")  # its own full stop, then ours: "found.. Set" (review 2026-12-02 #31)
        raise PreflightError(f"no Kubernetes cluster to run on ({where}): {cause}. Set backend.kubeconfig (and "
                             "backend.context), or run kubebench inside the cluster") from e
    return api


def server_version(api: Api) -> versions.Version | None:
    """The API server's Kubernetes version; None when it does not say."""
    return versions.of_server(api.version())


def check(api: Api, namespace: str, manifests: list[dict[str, Any]], resources: list[Resource],
          version: versions.Version | None) -> None:
    """The cheap checks every run starts with (see the module's docstring); ``resources``: the kinds
    of object the jobs create (as their kinds' drivers say); ``version``: the cluster's Kubernetes
    version, which must have every field the jobs set."""
    versions.require(manifests, version)
    if api.namespace_exists(namespace) is False:
        raise PreflightError(f"namespace {namespace!r} does not exist on the cluster at {api.host}: "
                             f"kubectl create namespace {namespace}, or set backend.namespace")
    for resource in resources:
        why = objects.not_served(api, resource)
        if why:
            raise PreflightError(why)
    for why in filter(None, (runtimes.missing(api, namespace, m) for m in _trainjobs(manifests))):
        raise PreflightError(why)


def check_queue(api: Api, queue: str, manifests: list[dict[str, Any]]) -> None:
    """With a queue: say which integrations the cluster's Kueue manages (from its configuration, where
    kubebench may read it) and refuse a kind it does not manage; where it cannot tell, every job is
    checked as it is created (see :mod:`.kueue`)."""
    managed = kueue.frameworks(api)
    if managed is None:
        log.info("Kueue's configuration (%s/%s) cannot be read: each job is checked to be suspended by Kueue as "
                 "it is created", kueue.CONFIG_NAMESPACE, kueue.CONFIG_MAP)
        return
    log.info("Kueue manages %s", ", ".join(managed))
    for manifest in manifests:
        framework = kueue.framework_of(manifest)
        if framework is not None and framework not in managed:
            raise PreflightError(kueue.not_managed(str(manifest.get("kind")), framework, queue))


def _trainjobs(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One TrainJob per runtime it names."""
    return list({runtimes.named(m): m for m in manifests if m.get("kind") == "TrainJob"}.values())


def doctor(api: Api, config: KubernetesConfig, namespace: str, manifests: list[dict[str, Any]],
           resources: list[Resource], local_root: Path, probe_image: str, ships_spec: bool = False) -> list[Check]:
    """Every check, each a :class:`Check` (a failed one does not stop the others); ``ships_spec``:
    the runner makes the ConfigMap of the spec's folder itself."""
    checks = [Check("cluster", "ok", f"API server at {api.host}"), _version(api, config, manifests)]
    found = api.namespace_exists(namespace)
    checks.append(Check("namespace", "ok" if found else "warn" if found is None else "fail",
                        namespace if found else "cannot tell (may not read namespaces)" if found is None
                        else f"{namespace!r} does not exist"))
    for resource in resources:
        why = objects.not_served(api, resource)
        checks.append(Check(f"{resource.kind} ({resource.api_version})", "fail" if why else "ok", why or "served"))
    checks += _access(api, config, namespace, resources, ships_spec)
    checks.append(_claim(api, config, namespace))
    checks.append(_probe(api, config, namespace, local_root, probe_image))
    for manifest in _trainjobs(manifests):
        why = runtimes.missing(api, namespace, manifest)
        checks.append(Check(f"TrainJob runtime {runtimes.named(manifest)}", "fail" if why else "ok", why or "found"))
    if config.queue:
        checks += _queue(api, config.queue, namespace, manifests)
    return checks


def _queue(api: Api, queue: str, namespace: str, manifests: list[dict[str, Any]]) -> list[Check]:
    """The LocalQueue (at the newest Kueue version served), and the integrations Kueue manages."""
    local_queues = kueue.resource(api, "localqueues", "LocalQueue")
    found = api.get(local_queues, namespace, queue) if local_queues else None
    checks = [Check("Kueue queue", "ok" if found else "fail",
                    f"{queue} ({local_queues.api_version})" if found and local_queues
                    else f"LocalQueue {namespace}/{queue} not found (is Kueue installed?)")]
    managed = kueue.frameworks(api)
    if managed is None:
        checks.append(Check("Kueue integrations", "warn", f"cannot read Kueue's configuration ({kueue.CONFIG_NAMESPACE}/"
                            f"{kueue.CONFIG_MAP}): each job is checked to be suspended by Kueue as it is created"))
        return checks
    kinds = {str(m.get("kind")): kueue.framework_of(m) for m in manifests if kueue.framework_of(m)}
    missing = [kueue.not_managed(kind, framework, queue) for kind, framework in kinds.items()
               if framework and framework not in managed]
    checks.append(Check("Kueue integrations", "fail" if missing else "ok",
                        "; ".join(missing) if missing else f"manages {', '.join(managed)}"))
    return checks


def _version(api: Api, config: KubernetesConfig, manifests: list[dict[str, Any]]) -> Check:
    """The cluster's Kubernetes version: supported, and with every field the jobs set."""
    found = server_version(api)
    if found is None:
        return Check("Kubernetes version", "warn", "cannot tell (the API server does not say its version)")
    shown = versions.show(found)
    pinned = versions.parse(config.kubernetes_version) if config.kubernetes_version else None
    missing = versions.too_new(manifests, found)
    if missing:
        return Check("Kubernetes version", "fail", f"{shown}: " + "; ".join(missing))
    if pinned is not None and pinned != found:
        return Check("Kubernetes version", "warn", f"{shown}, but backend.kubernetes_version is {versions.show(pinned)}")
    if found < versions.OLDEST:
        return Check("Kubernetes version", "warn", f"{shown}: older than {versions.show(versions.OLDEST)}, "
                                                   "the oldest the Kubeflow operators (and kubebench) support")
    return Check("Kubernetes version", "ok", shown)


def _access(api: Api, config: KubernetesConfig, namespace: str, resources: list[Resource],
            ships_spec: bool) -> list[Check]:
    """A SelfSubjectAccessReview for every verb kubebench uses."""
    needed = [(verb, r.group, r.plural, f"running {r.kind}s") for r in resources
              for verb in (SERVICE_VERBS if r == SERVICES else JOB_VERBS)]
    needed += list(OTHER_VERBS)
    if config.keep_jobs:
        needed.append(("delete", "", "pods", "stopping the pods of kept jobs"))
    if ships_spec:
        needed += [(verb, "", "configmaps", "giving the pods the spec's folder") for verb in SPEC_MAP_VERBS]
    checks, refused = [], []
    for verb, group, resource, why in needed:
        if not api.allowed(namespace, verb, group, resource):
            refused.append(f"{verb} {resource}{'.' + group if group else ''} ({why})")
    checks.append(Check("permissions", "fail" if refused else "ok",
                        "not allowed: " + "; ".join(refused) if refused else f"{len(needed)} verbs allowed"))
    optional = OPTIONAL_VERBS + (QUEUE_VERBS if config.queue else ())
    for verb, group, resource, lost in optional:
        if not api.allowed(namespace, verb, group, resource):
            checks.append(Check(f"permission to {verb} {resource}", "warn", lost))
    return checks


def _claim(api: Api, config: KubernetesConfig, namespace: str) -> Check:
    claim = api.claim(namespace, config.storage.claim)
    if claim is None:
        return Check("claim", "fail", f"PersistentVolumeClaim {namespace}/{config.storage.claim} not found")
    phase = (claim.get("status") or {}).get("phase", "Pending")
    modes = (claim.get("spec") or {}).get("accessModes") or []
    if phase != "Bound":
        return Check("claim", "warn", f"{config.storage.claim} is {phase} (bound when a pod first mounts it?)")
    if "ReadWriteMany" not in modes:
        return Check("claim", "warn", f"{config.storage.claim} is {', '.join(modes)}: pods on other nodes cannot mount "
                                      "it (a job's replicas, or runs reading what a data prepare Job wrote): all must "
                                      "run on one node")
    return Check("claim", "ok", f"{config.storage.claim} bound, ReadWriteMany")


def _probe(api: Api, config: KubernetesConfig, namespace: str, local_root: Path, image: str) -> Check:
    """A pod mounting the claim reads a file kubebench wrote where it sees the claim: the two are one."""
    token = uuid.uuid4().hex[:12]
    sentinel = local_root / f".kubebench-doctor-{token}"
    try:
        sentinel.write_text(token)
    except OSError as e:
        return Check("claim from a pod", "fail", f"cannot write {sentinel}: {e}")
    job = probe_job(config, token, sentinel.name, image)
    name = job["metadata"]["name"]
    try:
        api.create(JOBS, namespace, job)
        return _probe_result(api, namespace, name, token, sentinel, local_root)
    except BackendError as e:
        return Check("claim from a pod", "fail", str(e))
    finally:
        sentinel.unlink(missing_ok=True)
        try:
            api.delete(JOBS, namespace, name, "Background")
        except BackendError:
            pass


def probe_job(config: KubernetesConfig, token: str, file_name: str, image: str) -> dict[str, Any]:
    """The Job of the claim probe: one pod mounting the claim that prints ``file_name`` from it."""
    mount = config.storage.mount_path.rstrip("/")
    container: dict[str, Any] = {"name": "probe", "image": image, "command": ["cat", f"{mount}/{file_name}"],
                                 "volumeMounts": [{"name": config.storage.volume, "mountPath": mount}]}
    if config.container_security_context:
        container["securityContext"] = copy.deepcopy(config.container_security_context)
    labels = {"kubebench.io/doctor": token}
    security = {"securityContext": copy.deepcopy(config.pod_security_context)} if config.pod_security_context else {}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"kb-doctor-{token}", "labels": labels},
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": int(PROBE_SECONDS), "ttlSecondsAfterFinished": 600,
                     "template": {"metadata": {"labels": dict(labels), "annotations": {"sidecar.istio.io/inject": "false"}},
                                  "spec": {"restartPolicy": "Never", "containers": [container], **security, "volumes": [
                                      {"name": config.storage.volume,
                                       "persistentVolumeClaim": {"claimName": config.storage.claim}}]}}}}


def _probe_result(api: Api, namespace: str, name: str, token: str, sentinel: Path, local_root: Path) -> Check:
    deadline = time.monotonic() + PROBE_SECONDS
    while time.monotonic() < deadline:
        found = api.get(JOBS, namespace, name) or {}
        done = {c.get("type") for c in (found.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}
        if "Complete" in done:
            return Check("claim from a pod", "ok", f"a pod read what kubebench wrote in {local_root}")
        if "Failed" in done:
            return Check("claim from a pod", "fail",
                         f"a pod could not read {sentinel.name} on the claim: {local_root} (where kubebench "
                         "writes the runs' folders) is not the claim; set backend.storage.local_path to where "
                         "kubebench sees it, or run kubebench in a pod that mounts it")
        time.sleep(1.0)
    return Check("claim from a pod", "fail", f"the probe pod did not finish in {PROBE_SECONDS:g} s (see kubectl "
                                             f"describe job {name} -n {namespace})")
