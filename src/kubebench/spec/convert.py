"""``kubebench convert kubebenchjob FILE``: an original Kubebench ``KubebenchJob`` (kubeflow/kubebench
v0.4–v0.5 ``v1alpha1``, v0.6 ``v1alpha2``) as a kubebench spec (pure).

Each field of the original's types (``controller/pkg/apis/kubebenchjob/{v1alpha1,v1alpha2}/types.go``)
is mapped or refused: what has a meaning here becomes a spec key, what kubebench does itself is noted
(the workflow agent, the managed volumes' mounts), and what has no equivalent is refused with the
field's path, all of them at once. The main job's manifest becomes a Jinja template beside the spec
(Argo's ``{{inputs.parameters.X}}`` and ``{{workflow.parameters.X}}`` become ``{{ X }}``); a v1alpha1
job's manifest came from a ksonnet prototype, which no longer renders: give its rendered manifest
(``ks show``) with ``manifest``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..errors import SpecError
from .model import JOB_KINDS

TEMPLATE = "job.yaml.j2"
_ARGO = re.compile(r"\{\{\s*(?:inputs|workflow)\.parameters\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")


@dataclass
class Converted:
    """The spec, the files beside it (its job template), and what was noted on the way."""

    spec: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def convert(doc: object, manifest: str | None = None) -> Converted:
    """The kubebench spec of a KubebenchJob (``manifest``: a v1alpha1 job's rendered manifest)."""
    if not isinstance(doc, dict) or doc.get("kind") != "KubebenchJob":
        raise SpecError("not a KubebenchJob: expected kind: KubebenchJob")
    version = str(doc.get("apiVersion", "")).rpartition("/")[2]
    out = Converted(spec={"apiVersion": "kubebench/v1", "kind": "Benchmark",
                          "name": (doc.get("metadata") or {}).get("name") or "kubebenchjob"})
    backend: dict[str, Any] = {"kind": "kubernetes"}
    spec = doc.get("spec") or {}
    if version == "v1alpha2":
        _v1alpha2(spec, out, backend)
    elif version in ("v1alpha1", "v1"):
        _v1alpha1(spec, out, backend, manifest)
    else:
        raise SpecError(f"KubebenchJob version {doc.get('apiVersion')!r}: expected kubeflow.org/v1alpha1 or v1alpha2")
    out.spec["backend"] = backend
    if out.refused:
        raise SpecError("cannot convert this KubebenchJob:\n" + "\n".join(f"  {r}" for r in out.refused))
    return out


def _main_job(out: Converted, text: str, where: str) -> None:
    try:
        manifest = yaml.safe_load(_ARGO.sub("0", text))
    except yaml.YAMLError as e:
        out.refused.append(f"{where}: not a YAML manifest: {e}")
        return
    kind = (manifest or {}).get("kind") if isinstance(manifest, dict) else None
    if kind not in JOB_KINDS:
        out.refused.append(f"{where}: kind {kind!r} is not a job kubebench runs ({', '.join(JOB_KINDS[1:])})")
        return
    out.files[TEMPLATE] = _ARGO.sub(lambda m: "{{ " + m.group(1).replace("-", "_") + " }}", text)
    out.spec["job"] = {"kind": kind, "template": TEMPLATE}


def _claim(volume: dict[str, Any] | None, out: Converted, backend: dict[str, Any], where: str) -> None:
    if not volume:
        return
    claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
    if claim:
        backend["storage"] = {"claim": claim}
        out.notes.append(f"{where}: its claim {claim!r} is backend.storage.claim (mounted into every replica)")
    else:
        out.notes.append(f"{where}: not a claim (e.g. emptyDir): kubebench keeps the runs on backend.storage's claim")


def _v1alpha1(spec: dict[str, Any], out: Converted, backend: dict[str, Any], manifest: str | None) -> None:
    known = {"serviceAccount", "volumeSpecs", "secretSpecs", "jobSpecs", "reportSpecs"}
    out.refused += [f"spec.{k}: not a field of KubebenchJob v1alpha1" for k in spec if k not in known]
    if spec.get("serviceAccount"):
        backend["service_account"] = spec["serviceAccount"]
    volumes = spec.get("volumeSpecs") or {}
    _claim(volumes.get("experimentVolume"), out, backend, "spec.volumeSpecs.experimentVolume")
    if volumes.get("configVolume"):
        out.notes.append("spec.volumeSpecs.configVolume: not needed: the spec's folder goes with the jobs as a ConfigMap")
    for name, value in (spec.get("secretSpecs") or {}).items():
        if value:
            out.refused.append(f"spec.secretSpecs.{name}: no equivalent: give the job's pods the Secret in the manifest")
    jobs = spec.get("jobSpecs") or {}
    if (jobs.get("preJob") or {}).get("container"):
        out.refused.append("spec.jobSpecs.preJob: no pre-job step: run it in the job's command (or an init container)")
    resource = (jobs.get("mainJob") or {}).get("resource") or {}
    if manifest is None:
        out.refused.append("spec.jobSpecs.mainJob.resource.manifestTemplate: a ksonnet prototype (ksonnet is end-of-life): "
                           "render it once (`ks show`) and give the manifest with --manifest FILE")
    else:
        _main_job(out, manifest, "--manifest")
    path = ((resource.get("manifestParameters") or {}).get("valueFrom") or {}).get("path")
    if path:
        out.notes.append(f"spec.jobSpecs.mainJob.resource.manifestParameters: run with --params {path.rsplit('/', 1)[-1]}")
    for cond in ("createSuccessCondition", "createFailureCondition", "runSuccessCondition", "runFailureCondition"):
        if resource.get(cond):
            out.notes.append(f"spec.jobSpecs.mainJob.resource.{cond}: kubebench judges a run by its job's own conditions")
    post = (jobs.get("postJob") or {}).get("container")
    if post:
        out.spec["postprocess"] = [_command(post, out, "spec.jobSpecs.postJob.container")]
    if (spec.get("reportSpecs") or {}).get("csv"):
        out.notes.append("spec.reportSpecs.csv: every run is in the store: `kubebench results ID -f csv -o report.csv`")


def _v1alpha2(spec: dict[str, Any], out: Converted, backend: dict[str, Any]) -> None:
    known = {"serviceAccountName", "arguments", "volumes", "managedVolumes", "workflowAgent", "tasks"}
    out.refused += [f"spec.{k}: not a field of KubebenchJob v1alpha2" for k in spec if k not in known]
    if spec.get("serviceAccountName"):
        backend["service_account"] = spec["serviceAccountName"]
    arguments = spec.get("arguments") or {}
    out.refused += [f"spec.arguments.{k}: Argo artifacts have no equivalent" for k in arguments if k != "parameters"]
    params = {p["name"].replace("-", "_"): p.get("value") for p in arguments.get("parameters") or []}
    if params:
        out.spec["parameters"] = params
    if spec.get("volumes"):
        out.notes.append("spec.volumes: give the job's own volumes in its manifest (kubebench mounts only the claim)")
    managed = spec.get("managedVolumes") or {}
    _claim(managed.get("experimentVolume"), out, backend, "spec.managedVolumes.experimentVolume")
    if managed.get("workflowVolume"):
        out.notes.append("spec.managedVolumes.workflowVolume: not needed: kubebench passes nothing between steps on a volume")
    if spec.get("workflowAgent"):
        out.notes.append("spec.workflowAgent: not needed: kubebench itself configures, launches and watches the job")
    _tasks(spec.get("tasks") or [], out)


def _tasks(tasks: list[dict[str, Any]], out: Converted) -> None:
    resources = [i for i, t in enumerate(tasks) if t.get("resource")]
    if len(resources) != 1:
        out.refused.append(f"spec.tasks: {len(resources)} resource tasks: kubebench runs one job per run "
                           "(sweep its parameters instead of listing copies)")
        return
    main = resources[0]
    post = []
    for i, task in enumerate(tasks):
        where = f"spec.tasks[{i}] ({task.get('name')})"
        for key in ("inputs", "outputs"):
            if task.get(key):
                out.refused.append(f"{where}.{key}: Argo {key} have no equivalent (a job writes its results to its run folder)")
        if i == main:
            _resource_task(task["resource"], out, where)
        elif task.get("container") and main in [tasks.index(t) for t in tasks if t.get("name") in (task.get("dependencies") or [])]:
            post.append(_command(task["container"], out, f"{where}.container"))
        else:
            out.refused.append(f"{where}: only a container task after the resource task has an equivalent (a post-processor)")
    if post:
        out.spec["postprocess"] = post


def _resource_task(resource: dict[str, Any], out: Converted, where: str) -> None:
    if resource.get("manifest"):
        _main_job(out, resource["manifest"], f"{where}.resource.manifest")
    elif (resource.get("manifestFrom") or {}).get("path"):
        out.refused.append(f"{where}.resource.manifestFrom.path: a file on the original's config volume: copy it beside "
                           f"the spec as {TEMPLATE} and set job.template")
    options = resource.get("options") or {}
    if options.get("autoWatch", {}).get("timeout"):
        out.spec["timeout"] = options["autoWatch"]["timeout"]
    if int(options.get("numCopies") or 1) > 1:
        out.spec["repeats"] = int(options["numCopies"])
    if options.get("autoDelete") is False:
        out.notes.append(f"{where}.resource.options.autoDelete: false: set backend.keep_jobs: true to keep finished jobs")
    if resource.get("volumeMounts"):
        out.notes.append(f"{where}.resource.volumeMounts: kubebench mounts the claim into every replica itself")


def _command(container: dict[str, Any], out: Converted, where: str) -> dict[str, Any]:
    command = [*(container.get("command") or []), *(container.get("args") or [])]
    if not command:
        out.refused.append(f"{where}: no command (an image's entry point cannot be a kubebench post-processor)")
    if container.get("image"):
        out.notes.append(f"{where}.image {container['image']!r}: the post-processor runs where kubebench runs (its image)")
    return {"kind": "command", "command": command}
