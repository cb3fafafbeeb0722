"""The Kubernetes API as kubebench uses it, through the official ``kubernetes`` client.

Every call is retried on transient failures (HTTP 429 and 5xx, dropped or refused connections)
with exponential backoff and jitter, honouring ``Retry-After``; any other failure becomes a
:class:`~kubebench.errors.BackendError` naming the call, the object and the HTTP status. The
client is imported here only when a connection is made, so that loading a spec stays fast.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar, cast, overload

from ...errors import BackendError, InfrastructureError, SpecError

if TYPE_CHECKING:
    from .config import KubernetesConfig

T = TypeVar("T")
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
BACKOFF_FIRST, BACKOFF_MAX = 0.1, 5.0
#: Seconds a watch request stays open before the server ends it and it is opened again.
WATCH_SECONDS = 240
#: Seconds a followed log may stay silent before its stream is given up (the plain read at the
#: end of the run then takes over).
FOLLOW_SECONDS = 6 * 3600
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


@dataclass(frozen=True)
class Resource:
    """Where objects of one kind live in the API."""

    group: str
    version: str
    plural: str
    kind: str

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version


PODS = Resource("", "v1", "pods", "Pod")
EVENTS = Resource("", "v1", "events", "Event")
SERVICES = Resource("", "v1", "services", "Service")
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
JOBS = Resource("batch", "v1", "jobs", "Job")


def resource_of(manifest: dict[str, Any]) -> Resource:
    """The API resource of a manifest (``PyTorchJob`` of ``kubeflow.org/v1`` → ``pytorchjobs``)."""
    api_version, kind = str(manifest.get("apiVersion", "")), str(manifest.get("kind", ""))
    group, _, version = api_version.rpartition("/")
    if kind == "Process" or not group or not version:
        raise SpecError(f"job kind {kind!r} ({api_version or 'no apiVersion'}) cannot run on Kubernetes; "
                        "use PyTorchJob, TFJob, JAXJob, XGBoostJob, MPIJob, TrainJob or Job")
    # Every kind kubebench runs has the regular plural (pytorchjobs, jaxjobs, xgboostjobs, trainjobs, jobs …).
    return Resource(group, version, kind.lower() + "s", kind)


class Api:
    """A configured API client: the few calls kubebench makes, each retried and its errors explained."""

    def __init__(self, config: KubernetesConfig) -> None:
        from kubernetes import client

        self.config = config
        self.client = _api_client(config)
        self.host = self.client.configuration.host
        self.custom = client.CustomObjectsApi(self.client)
        self.core = client.CoreV1Api(self.client)

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()

    def create(self, res: Resource, namespace: str, body: dict) -> dict | None:
        """Create an object; None if its name is taken (HTTP 409).

        With ``fieldValidation=Strict``: a server whose CRD lacks a field kubebench sets (an older
        operator) refuses the object instead of pruning the field and running it without.
        """
        what = f"create {res.kind} {namespace}/{body['metadata']['name']}"
        if res in (SERVICES, CONFIG_MAPS, SECRETS):
            kind = {SERVICES: "service", CONFIG_MAPS: "config_map", SECRETS: "secret"}[res]
            create = getattr(self.core, f"create_namespaced_{kind}")
            return self.call(what, lambda timeout: json.loads(raw(create(
                namespace, cast(Any, body), field_validation="Strict", _preload_content=False, _request_timeout=timeout)).data),
                expect=(409,))
        # the client annotates custom objects as ``object``: they are the JSON objects the server sent
        return cast("dict | None", self.call(what, lambda timeout: self.custom.create_namespaced_custom_object(
            res.group, res.version, namespace, res.plural, body, field_validation="Strict",
            _request_timeout=timeout), expect=(409,)))

    def get(self, res: Resource, namespace: str, name: str) -> dict | None:
        """Read an object; None if there is none."""
        if res == SERVICES:
            return self.call(f"read {res.kind} {namespace}/{name}", lambda timeout: json.loads(raw(
                self.core.read_namespaced_service(name, namespace, _preload_content=False,
                                                  _request_timeout=timeout)).data), expect=(404,))
        return cast("dict | None", self.call(f"read {res.kind} {namespace}/{name}",
                                             lambda timeout: self.custom.get_namespaced_custom_object(
            res.group, res.version, namespace, res.plural, name, _request_timeout=timeout), expect=(404,)))

    def get_cluster(self, res: Resource, name: str) -> dict | None:
        """Read a cluster-scoped custom object (a ClusterTrainingRuntime); None if there is none."""
        return cast("dict | None", self.call(f"read {res.kind} {name}", lambda timeout: self.custom.get_cluster_custom_object(
            res.group, res.version, res.plural, name, _request_timeout=timeout), expect=(404,)))

    def delete(self, res: Resource, namespace: str, name: str, propagation: str, uid: str | None = None) -> bool:
        """Delete an object and, by ``propagation``, its pods; False if it was already gone (or, with
        ``uid``, is no longer the object of that uid: a custom object deleted only if it still is)."""
        def delete(timeout: float) -> Any:
            if res == PODS:
                return self.core.delete_namespaced_pod(name, namespace, propagation_policy=propagation,
                                                       _preload_content=False, _request_timeout=timeout)
            if res == SERVICES:
                return self.core.delete_namespaced_service(name, namespace, propagation_policy=propagation,
                                                           _preload_content=False, _request_timeout=timeout)
            if res == CONFIG_MAPS:
                return self.core.delete_namespaced_config_map(name, namespace, propagation_policy=propagation,
                                                              _preload_content=False, _request_timeout=timeout)
            from kubernetes import client

            body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)) if uid else None
            return self.custom.delete_namespaced_custom_object(res.group, res.version, namespace, res.plural, name,
                                                               propagation_policy=propagation, body=body,
                                                               _request_timeout=timeout)

        return self.call(f"delete {res.kind} {namespace}/{name}", delete, expect=(404, 409) if uid else (404,)) is not None

    def list(self, res: Resource, namespace: str, selector: str) -> dict:
        """List objects matching a label selector (the raw ``…List`` object)."""
        def fetch(timeout: float) -> dict:
            response = self._collection(res, namespace, selector, _request_timeout=timeout)
            with closing_on_error(response):
                return json.loads(response.data)

        return self.call(f"list {res.plural} in {namespace} ({selector})", fetch)

    def watch(self, res: Resource, namespace: str, selector: str, resource_version: str) -> Any:
        """Open a watch from ``resource_version``: a streaming response of JSON lines (one event each)."""
        return self.call(f"watch {res.plural} in {namespace} ({selector})", lambda timeout: self._collection(
            res, namespace, selector, watch=True, resource_version=resource_version, allow_watch_bookmarks=True,
            timeout_seconds=WATCH_SECONDS, _request_timeout=(timeout, WATCH_SECONDS + timeout)))

    def copy_log(self, namespace: str, pod: str, container: str, dest: Path, previous: bool = False) -> bool:
        """Copy a container's log (its ``previous`` instance's) into ``dest``; False if it has none
        (not started, or gone)."""
        def fetch(timeout: float) -> bool:
            response = raw(self.core.read_namespaced_pod_log(
                pod, namespace, container=container, previous=previous, _preload_content=False,
                _request_timeout=timeout))
            with closing_on_error(response), open(dest, "wb") as f:
                for chunk in response.stream(1 << 16):
                    f.write(chunk)
            return True

        what = f"read the log of pod {namespace}/{pod}" + (f" ({container}, previous)" if previous else f" ({container})")
        return bool(self.call(what, fetch, expect=(400, 404)))

    def follow_log(self, namespace: str, pod: str, container: str) -> Any:
        """A streaming response of a container's log from its start, open until the container ends
        (one attempt: the caller reads what it can and falls back on a plain read)."""
        return self.core.read_namespaced_pod_log(pod, namespace, container=container, follow=True,
                                                 _preload_content=False,
                                                 _request_timeout=(self.config.request_timeout, FOLLOW_SECONDS))

    def events(self, namespace: str, uid: str) -> builtins.list[dict]:
        """The events about the object ``uid`` (why a pod cannot start, why a job has no pods)."""
        listing = self.call(f"list events in {namespace}", lambda timeout: json.loads(raw(self.core.list_namespaced_event(
            namespace, field_selector=f"involvedObject.uid={uid}", _preload_content=False,
            _request_timeout=timeout)).data), expect=(403, 404)) or {}
        return listing.get("items") or []

    def namespace_exists(self, name: str) -> bool | None:
        """Whether the namespace exists; None when kubebench may not read namespaces (a namespaced role)."""
        from kubernetes.client.exceptions import ApiException

        def fetch(timeout: float) -> bool | None:
            try:
                _ = raw(self.core.read_namespace(name, _preload_content=False, _request_timeout=timeout)).data  # read whole
            except ApiException as e:
                if e.status in (403, 404):
                    return None if e.status == 403 else False
                raise
            return True

        return self.call(f"read namespace {name}", fetch)

    def claim(self, namespace: str, name: str) -> dict | None:
        """A PersistentVolumeClaim; None if there is none."""
        return self.call(f"read persistentvolumeclaim {namespace}/{name}", lambda timeout: json.loads(
            raw(self.core.read_namespaced_persistent_volume_claim(name, namespace, _preload_content=False,
                                                                 _request_timeout=timeout)).data), expect=(404,))

    def config_map(self, namespace: str, name: str) -> dict | None:
        """A ConfigMap (another component's configuration); None if there is none or kubebench may not read it."""
        return self.call(f"read configmap {namespace}/{name}", lambda timeout: json.loads(raw(
            self.core.read_namespaced_config_map(name, namespace, _preload_content=False,
                                                 _request_timeout=timeout)).data), expect=(403, 404))

    def node(self, name: str) -> dict | None:
        """A node (labels, nodeInfo); None if it is gone or kubebench may not read nodes."""
        return self.call(f"read node {name}", lambda timeout: json.loads(raw(self.core.read_node(
            name, _preload_content=False, _request_timeout=timeout)).data), expect=(403, 404))

    def served(self, group: str, version: str) -> builtins.list[str] | None:
        """The resources (plurals) the server serves at ``group/version``; None if it serves none there."""
        def fetch(timeout: float) -> builtins.list[str]:
            if group:
                response = raw(self.custom.get_api_resources(group, version, _preload_content=False,
                                                             _request_timeout=timeout))
            else:
                response = raw(self.core.get_api_resources(_preload_content=False, _request_timeout=timeout))
            return [r["name"] for r in json.loads(response.data).get("resources") or []]

        return self.call(f"discover {group or 'core'}/{version}", fetch, expect=(404,))

    def version(self) -> dict | None:
        """The API server's ``/version`` (``gitVersion``, ``major``, ``minor`` …); None when refused."""
        from kubernetes import client

        api = client.VersionApi(self.client)
        return self.call("read the API server's version", lambda timeout: json.loads(raw(api.get_code(
            _preload_content=False, _request_timeout=timeout)).data), expect=(403, 404))

    def allowed(self, namespace: str, verb: str, group: str, resource: str) -> bool:
        """Whether kubebench's identity may ``verb`` ``resource`` (``pods/log`` for a subresource)."""
        from kubernetes import client

        plural, _, sub = resource.partition("/")
        review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(namespace=namespace, verb=verb, group=group,
                                                            resource=plural, subresource=sub or None)))
        api = client.AuthorizationV1Api(self.client)
        answer = self.call(f"review access to {verb} {resource}", lambda timeout: api.create_self_subject_access_review(
            review, _request_timeout=timeout))
        return bool(answer and answer.status and answer.status.allowed)

    def _collection(self, res: Resource, namespace: str, selector: str, **kwargs: Any) -> Any:
        if res == PODS:
            return self.core.list_namespaced_pod(namespace, label_selector=selector, _preload_content=False, **kwargs)
        return self.custom.list_namespaced_custom_object(
            res.group, res.version, namespace, res.plural, label_selector=selector, _preload_content=False, **kwargs)

    @overload
    def call(self, what: str, fn: Callable[[float], T]) -> T: ...
    @overload
    def call(self, what: str, fn: Callable[[float], T], expect: tuple[int, ...]) -> T | None: ...

    def call(self, what: str, fn: Callable[[float], T], expect: tuple[int, ...] = ()) -> T | None:
        """``fn(timeout)``, retried on transient failures; None when it answers a status in ``expect``."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        attempts = self.config.api_retries
        for attempt in range(1, attempts + 1):
            try:
                return fn(self.config.request_timeout)
            except ApiException as e:
                if e.status in expect:
                    return None
                if e.status not in RETRY_STATUS or attempt == attempts:
                    raise api_error(what, e) from e
                delay = _retry_after(e) or backoff(attempt)
            except (HTTPError, OSError) as e:
                if attempt == attempts:
                    raise InfrastructureError(f"{what}: cannot reach the API server at {self.host}: {e}") from e
                delay = backoff(attempt)
            time.sleep(delay)
        raise AssertionError("unreachable")


def backoff(attempt: int) -> float:
    """Seconds before retry ``attempt`` (1, 2, …): exponential, capped, with jitter."""
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


def _retry_after(e: Any) -> float | None:
    try:
        value = (e.headers or {}).get("Retry-After")
        return None if value is None else min(30.0, float(value))
    except (TypeError, ValueError):
        return None


def raw(response: object) -> Any:
    """What a call made with ``_preload_content=False`` returns: the urllib3 response, whatever the
    client's annotation says (it names what a preloaded call returns: a model, or ``str``)."""
    return response


def api_error(what: str, e: Any) -> BackendError:
    """A BackendError for a failed call: the call and object, the HTTP status and the server's message.

    An error the server gave as passing (429, 5xx) is an :class:`InfrastructureError`: it lasted
    through every retry of the call, yet a later attempt of the run may still get through; a
    refusal (403, 422 …) will not change by trying again.
    """
    message = ""
    try:
        message = json.loads(e.body or "{}").get("message", "")
    except (ValueError, AttributeError):
        message = str(e.body or "")[:300]
    kind = InfrastructureError if e.status in RETRY_STATUS else BackendError
    error = kind(f"{what}: HTTP {e.status} {e.reason}" + (f": {message}" if message else ""))
    error.http_status = e.status  # type: ignore[attr-defined]  # lets a watch tell lasting from passing failures
    return error


def current_namespace(config: KubernetesConfig) -> str:
    """The configured namespace, else the pod's own (in a cluster), else the kubeconfig context's, else default."""
    if config.namespace:
        return config.namespace
    if not config.kubeconfig and "KUBERNETES_SERVICE_HOST" in os.environ and SERVICE_ACCOUNT_NAMESPACE.is_file():
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    from kubernetes import config as kube_config

    try:
        contexts, active = kube_config.list_kube_config_contexts(config_file=_kubeconfig_path(config))
    except (kube_config.ConfigException, OSError, ValueError, TypeError):
        return "default"
    chosen = next((c for c in contexts if c.get("name") == config.context), None) if config.context else active
    return ((chosen or {}).get("context") or {}).get("namespace") or "default"


def _kubeconfig_path(config: KubernetesConfig) -> str:
    # $KUBECONFIG is read now: the client reads it once, when it is first imported.
    return os.path.expanduser(config.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config")


def _api_client(config: KubernetesConfig) -> Any:
    from kubernetes import client, config as kube_config

    configuration = client.Configuration()
    try:
        if config.kubeconfig or "KUBERNETES_SERVICE_HOST" not in os.environ:
            kube_config.load_kube_config(config_file=_kubeconfig_path(config), context=config.context,
                                         client_configuration=configuration)
        else:
            kube_config.load_incluster_config(client_configuration=configuration)
    except (kube_config.ConfigException, OSError, ValueError, TypeError) as e:
        raise BackendError(f"cannot configure the Kubernetes client: {e}") from e
    configuration.retries = False  # kubebench retries itself, with backoff, and counts the attempts
    configuration.connection_pool_maxsize = 128  # one per run in flight, plus the watches
    return client.ApiClient(configuration)


@contextlib.contextmanager
def closing_on_error(response: Any) -> Iterator[Any]:
    """Give a streamed response's connection back to the pool once read to the end, or close it
    when reading stopped half-way (a half-read connection must not serve another request)."""
    try:
        yield response
    except BaseException:
        response.close()
        raise
    finally:
        response.release_conn()


def json_lines(response: Any) -> Iterator[dict]:
    """The events of a watch response, one JSON object per line, as they arrive."""
    pending = b""
    for chunk in response.stream(1 << 16):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.strip():
                yield json.loads(line)
    if pending.strip():
        yield json.loads(pending)
