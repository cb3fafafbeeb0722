"""Render one run: fill the trial's parameters into the job (shorthand or template) and add the
``KUBEBENCH_*`` environment and id labels to every replica.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..plan.plan import Run, digest
from ..rules import AUTO_PROCESSES
from ..spec.model import JOB_KINDS, OBJECT_NAME, JobSpec, LoadedSpec, env_name
from . import gang, kinds
from .pods import JobShape, gpus
from .serving import ServerShape
from .templating import render_string, render_template_file


@dataclass(frozen=True)
class RenderedJob:
    """A run's job, ready for a backend: the manifest plus the values it was made from."""

    run_id: str
    name: str
    manifest: dict[str, Any]
    #: Working directory of local processes: the spec's folder, or its `job.working_dir`.
    workdir: Path

    @property
    def kind(self) -> str:
        """The manifest's kind (PyTorchJob, TFJob, …)."""
        return str(self.manifest["kind"])


#: Job fields added after the first release: they count in the fingerprint only when set, so that
#: experiments planned before they existed keep their ids and still resume.
_LATER_FIELDS = ("node_selector", "tolerations", "mpi_api_version", "server", "runtime", "gang", "topology",
                 "processes_per_replica")


def job_fingerprint(loaded: LoadedSpec) -> str:
    """Hash of what defines the job (the shorthand or the template's text): resuming needs it equal."""
    job = loaded.spec.job
    unset = {f for f in _LATER_FIELDS if getattr(job, f) == JobSpec.model_fields[f].get_default(call_default_factory=True)}
    return digest(job.model_dump(exclude=unset), loaded.template_text)


def job_name(run: Run) -> str:
    """A DNS-1123 name for the run's job object."""
    return f"kb-{run.id}"


def labels(experiment_id: str, run: Run) -> dict[str, str]:
    """Labels put on every object of a run, so that it can be found by experiment, trial or run."""
    return {
        kinds.LABEL_PREFIX + "experiment": experiment_id[:63],
        kinds.LABEL_PREFIX + "trial": run.trial.id,
        kinds.LABEL_PREFIX + "run": run.id,
    }


def template_context(loaded: LoadedSpec, run: Run, experiment_id: str, env: dict[str, str]) -> dict[str, Any]:
    """Names a template may use: each parameter, ``params`` and ``kubebench`` (ids, paths, env)."""
    info = {
        "experiment_id": experiment_id,
        "trial_id": run.trial.id,
        "run_id": run.id,
        "repeat": run.repeat,
        "name": job_name(run),
        "benchmark": loaded.spec.name,
        "timeout": loaded.spec.timeout,
        "env": env,
    }
    return {**run.trial.params, "params": dict(run.trial.params), "kubebench": info}


def render_run(loaded: LoadedSpec, run: Run, experiment_id: str, env: dict[str, str]) -> RenderedJob:
    """The manifest of ``run``, with ``env`` (the KUBEBENCH_* variables) in every container."""
    context = template_context(loaded, run, experiment_id, env)
    name, run_labels = job_name(run), labels(experiment_id, run)
    job = loaded.spec.job
    if job.template:
        manifest = render_template_file(loaded.base_dir / job.template, context, loaded.template_text or "")
        manifest.setdefault("metadata", {}).setdefault("name", name)
        kinds.ensure_deadline(manifest, loaded.spec.timeout)
    else:
        shape = resolve_shorthand(job, context, run)
        manifest = kinds.build_manifest(shape, name, run_labels, loaded.spec.timeout)
    gang.apply(manifest, *resolve_gang(job, context, run), experiment_id)
    kinds.inject(manifest, env, run_labels)
    check_startable(manifest, f"{job.template}" if job.template else "job")
    workdir = loaded.base_dir / (job.working_dir or ".")
    return RenderedJob(run.id, str(manifest["metadata"]["name"]), manifest, workdir)


def resolve_gang(job: JobSpec, context: dict[str, Any], run: Run) -> tuple[gang.GangShape | None, dict[str, str] | None]:
    """``job.gang`` and ``job.topology`` with the trial's parameters filled in, types checked."""
    trial = ", ".join(f"{k}={v}" for k, v in run.trial.params.items()) or "no parameters"

    def text(value: Any, where: str) -> str | None:
        return None if value is None else render_string(str(value), context, f"job.{where} (trial {trial})")

    topology = None
    if job.topology is not None:
        where = "required" if job.topology.required is not None else "preferred"
        topology = {where: str(text(getattr(job.topology, where), f"topology.{where}"))}
    if job.gang is None:
        return None, topology
    g = job.gang
    found = text(g.min_available, "gang.min_available")
    try:
        members = None if found is None else int(found)
    except ValueError as e:
        raise SpecError(f"job.gang.min_available (trial {trial}): {found!r} is not a whole number") from e
    if members is not None and members < 1:
        raise SpecError(f"job.gang.min_available (trial {trial}): must be at least 1, got {members}")
    timeout = None if g.schedule_timeout is None else max(1, int(-(-g.schedule_timeout // 1)))
    return gang.GangShape(g.scheduler, members, text(g.queue, "gang.queue"), text(g.priority_class, "gang.priority_class"),
                          timeout), topology


def resolve_shorthand(job: JobSpec, context: dict[str, Any], run: Run) -> JobShape:
    """Fill the parameters into every string of the shorthand and check the resulting types."""
    trial = (", ".join(f"{k}={v}" for k, v in run.trial.params.items()) or "no parameters").replace("\0", "\\0")

    def fill(value: Any, where: str) -> Any:
        if isinstance(value, str):
            return render_string(value, context, f"job.{where} (trial {trial})")
        if isinstance(value, list):
            return [fill(v, f"{where}[{i}]") for i, v in enumerate(value)]
        if isinstance(value, dict):
            return {k: fill(v, f"{where}.{k}") for k, v in value.items()}
        return value

    data = {k: fill(v, k) for k, v in job.model_dump(exclude={"template", "working_dir", "gang", "topology"}).items()}
    for field in ("command", "env"):
        for path in _with_nul(data[field], (field,)):
            raise SpecError(f"job.{_field_path(path)} (trial {trial}): the value rendered for this trial holds a NUL "
                            "character, which no command line or environment can hold")
    try:
        workers = int(data["workers"])
    except ValueError as e:
        raise SpecError(f"job.workers (trial {trial}): {data['workers']!r} is not a whole number") from e
    if workers < 1:
        raise SpecError(f"job.workers (trial {trial}): must be at least 1, got {workers}")
    if data["kind"] not in JOB_KINDS:
        raise SpecError(f"job.kind (trial {trial}): unknown job kind {data['kind']!r}; valid: {', '.join(JOB_KINDS)}")
    resources = tuple((k, _text(v)) for k, v in data["resources"].items())
    runtime = _runtime(data["runtime"], trial)
    return JobShape(
        kind=data["kind"],
        workers=workers,
        image=data["image"],
        command=tuple(data["command"]),
        env=tuple((k, _text(v)) for k, v in data["env"].items()),
        resources=resources,
        node_selector=tuple((k, _text(v)) for k, v in data["node_selector"].items()),
        tolerations=tuple(data["tolerations"]),
        mpi_api_version=data["mpi_api_version"],
        server=_server_shape(data["server"], trial) if data.get("server") else None,
        runtime=runtime,
        processes=_processes(str(data["processes_per_replica"]), data["kind"], resources, runtime, trial),
    )


def _processes(value: str, kind: str, resources: tuple[tuple[str, str], ...], runtime: str, trial: str) -> int:
    """``job.processes_per_replica`` for a trial: ``auto`` is the GPUs a replica requests (else 1);
    only the kinds that start ranks per pod take more than one (see ``kinds.takes_processes``)."""
    many = kinds.takes_processes(kind, runtime)
    if value == AUTO_PROCESSES:
        return max(1, gpus(resources)) if many else 1
    if not value.isdigit() or int(value) < 1:
        raise SpecError(f"job.processes_per_replica (trial {trial}): {value!r} is not a number of processes "
                        "(at least 1) or 'auto'")
    if int(value) > 1 and not many:
        what = f"kind: {kind}" + (f" on runtime {runtime!r}" if kind == "TrainJob" else "")
        raise SpecError(f"job.processes_per_replica (trial {trial}): {what} runs one process per replica; "
                        "several per replica are started for PyTorchJob, MPIJob and TrainJob on a torch runtime")
    return int(value)


def _runtime(name: str, trial: str) -> str:
    """``job.runtime`` as rendered for a trial: a Kubernetes object name."""
    if not re.fullmatch(OBJECT_NAME, name) or len(name) > 253:
        raise SpecError(f"job.runtime (trial {trial}): {name!r} is not the name of a (Cluster)TrainingRuntime "
                        "(lower-case letters, digits, '-' and '.')")
    return name


def _server_shape(data: dict[str, Any], trial: str) -> ServerShape:
    """The ``server:`` of a Serving job with its parameters filled in, types checked."""
    numbers = {}
    for field in ("replicas", "port"):
        try:
            numbers[field] = int(data[field])
        except ValueError as e:
            raise SpecError(f"job.server.{field} (trial {trial}): {data[field]!r} is not a whole number") from e
    if numbers["replicas"] < 1 or not 0 < numbers["port"] < 65536:
        raise SpecError(f"job.server (trial {trial}): replicas must be at least 1 and port in 1..65535")
    return ServerShape(
        image=data["image"], command=tuple(data["command"]), replicas=numbers["replicas"], port=numbers["port"],
        readiness=data["readiness"], api_path=data["api_path"], startup_timeout=float(data["startup_timeout"]),
        env=tuple((k, _text(v)) for k, v in data["env"].items()),
        resources=tuple((k, _text(v)) for k, v in data["resources"].items()),
    )


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)



def check_startable(manifest: dict[str, Any], where: str) -> None:
    """A SpecError unless every process of the manifest can be started: no string holds a NUL
    character, and every environment variable has a name (without ``=``)."""
    if "\\u0000" not in json.dumps(manifest, default=str):  # the usual case, in C
        nul = []
    else:
        nul = _with_nul(manifest, ())
    for path in nul:
        raise SpecError(f"{where}: the rendered job holds a NUL character at {_field_path(path)}")
    for group in kinds.replica_groups(manifest):
        spec = group.template.get("spec") or {}
        for container in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            for entry in container.get("env") or []:
                try:
                    env_name(str(entry.get("name", "")))
                except ValueError as e:
                    raise SpecError(f"{where}: container {container.get('name')!r}: {e}") from None


def _with_nul(value: Any, path: tuple[object, ...]) -> list[tuple[object, ...]]:
    if isinstance(value, str):
        return [path] if "\0" in value else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in ([path + (k,)] if "\0" in str(k) else _with_nul(v, path + (k,)))]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in _with_nul(v, path + (i,))]
    return []


def _field_path(path: tuple[object, ...]) -> str:
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return text.replace("\0", "\\0")
