"""A ``kind: Serving`` job on this machine: server replicas started first, each on a free port, the
load generator started once every server answers its readiness path, and the servers stopped when
the load generator is done (their logs stay in ``output/server-<i>.log``).

The job fails when a server exits before the load generator is done, when the servers are not ready
within ``startupTimeoutSeconds`` (the reason says what the readiness check last saw), or when a
load generator fails.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BackendError
from ..render.kinds import ReplicaGroup
from ..render.serving import HOST_VAR, LOAD, PORT_VAR, SERVER, URL_VAR, expand_vars
from .base import JobStatus
from .processes import (
    LOCALHOST,
    LocalDriver,
    LocalJob,
    ReplicaLaunch,
    container_env,
    ended,
    free_port,
    local_argv,
    main_container,
    start_error,
)
from .reasons import exit_code, exit_reason

if TYPE_CHECKING:
    from ..paths import RunPaths
    from ..render.job import RenderedJob


@dataclass(eq=False)
class ServingJob(LocalJob):
    """A running Serving job: servers, then (once ready) the load generator's replicas."""

    loads: list[ReplicaLaunch] = field(default_factory=list)
    ready_urls: list[str] = field(default_factory=list)
    ready_by: float = 0.0
    startup_timeout: float = 0.0
    loading: bool = False
    last_probe: str = ""
    #: Where the load generator's replicas log, and run from, once they start.
    output: Path = Path()
    workdir: Path = Path()


class ServingJobs(LocalDriver[ServingJob]):
    """``kind: Serving``: servers now, the load generator once they are ready."""

    def submit(self, job: RenderedJob, paths: RunPaths) -> ServingJob:
        """Start the servers of the job; the load generator starts from ``status`` once they are ready."""
        handle = self.track(ServingJob(self, run_folder=str(paths.run), run_id=paths.run_id,
                                       output=Path(paths.output), workdir=job.workdir))
        try:
            servers, handle.loads, handle.ready_urls, timeout = plan_serving(job.manifest)
            handle.startup_timeout, handle.ready_by = timeout, time.monotonic() + timeout
            for launch in servers:
                self.start(handle, launch, handle.output, handle.workdir)
        except OSError as e:
            self.cancel(handle)
            raise start_error(e, "the server") from e
        except BaseException:
            self.cancel(handle)
            raise
        return handle

    def status(self, handle: ServingJob) -> JobStatus:
        """Starting (waiting for readiness), running the load, or done as the load generator ends."""
        for launch, process in handle.processes:
            code = process.poll()
            if launch.type == SERVER and code is not None:
                return JobStatus("failed", exit_code(code),
                                 f"{launch.name} {exit_reason(code)} before the load generator was done")
        if not handle.loading:
            return self._starting(handle)
        return ended(handle, frozenset({LOAD}))

    def _starting(self, handle: ServingJob) -> JobStatus:
        if all(_ready(url, handle) for url in handle.ready_urls):
            for launch in handle.loads:
                self.start(handle, launch, handle.output, handle.workdir)
            handle.loading = True
            return JobStatus("running")
        if time.monotonic() > handle.ready_by:
            return JobStatus("failed", None, f"the server was not ready after {handle.startup_timeout:g}s "
                                             f"({handle.last_probe or 'no answer'})")
        return JobStatus("running")


def _ready(url: str, job: ServingJob) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            ok = response.status == 200
            job.last_probe = f"GET {url}: {response.status}"
            return ok
    except urllib.error.HTTPError as e:
        job.last_probe = f"GET {url}: {e.code}"
    except (OSError, ValueError) as e:
        job.last_probe = f"GET {url}: {getattr(e, 'reason', None) or e}"
    return False


def plan_serving(manifest: dict) -> tuple[list[ReplicaLaunch], list[ReplicaLaunch], list[str], float]:
    """Server launches (each on a free port), load launches (told the servers' URLs), the readiness
    URLs and the startup timeout of a Serving manifest."""
    spec = manifest.get("spec") or {}
    server, load = spec.get(SERVER) or {}, spec.get(LOAD) or {}
    servers, urls, ready = [], [], []
    for index in range(int(server.get("replicas", 1))):
        container = _main_container_of(server, SERVER)
        port = free_port()
        env = {**container_env(container), PORT_VAR: str(port), HOST_VAR: LOCALHOST,
               "KUBEBENCH_REPLICA_TYPE": SERVER, "KUBEBENCH_REPLICA_INDEX": str(index)}
        servers.append(ReplicaLaunch(SERVER, index, _argv(container, env, SERVER, index), env))
        urls.append(f"http://{LOCALHOST}:{port}{server.get('apiPath', '/v1')}")
        ready.append(f"http://{LOCALHOST}:{port}{server.get('readinessPath', '/health')}")
    loads = []
    for index in range(int(load.get("replicas", 1))):
        container = _main_container_of(load, LOAD)
        env = {**container_env(container), URL_VAR: ",".join(urls),
               "KUBEBENCH_REPLICA_TYPE": LOAD, "KUBEBENCH_REPLICA_INDEX": str(index), "JOB_COMPLETION_INDEX": str(index)}
        loads.append(ReplicaLaunch(LOAD, index, _argv(container, env, LOAD, index), env))
    return servers, loads, ready, float(server.get("startupTimeoutSeconds", 600))


def _main_container_of(role: dict, name: str) -> dict:
    return main_container(ReplicaGroup(name, 1, role.get("template") or {}))


def _argv(container: dict, env: dict[str, str], role: str, index: int) -> tuple[str, ...]:
    argv = tuple(container.get("command") or ()) + tuple(container.get("args") or ())
    if not argv:
        raise BackendError(f"{role}-{index}: no command; the local backend cannot run an image's entrypoint")
    return local_argv(expand_vars(argv, env))
