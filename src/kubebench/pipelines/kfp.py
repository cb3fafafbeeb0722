"""Kubeflow Pipelines v2: kubebench's components as pipeline IR (``PipelineSpec``, schema 2.1.0), written
without the kfp SDK (it pins an old Kubernetes client), and the executor's side of a step.

- ``kubebench-run``: runs a spec (``kubebench kfp run --executor-input {{$}}``); inputs ``spec`` (a path in
  the container: the image's or a mounted ConfigMap's), ``experiment_id`` (pass
  ``dsl.PIPELINE_JOB_ID_PLACEHOLDER``: a retried run resumes it, and no two runs share a cache key),
  ``labels`` and ``params`` (dicts), ``backend``, ``repeats``; outputs ``experiment`` and ``metrics``
  (``system.Metrics``: the best trial's median and CI of each declared metric, the run counts);
- ``kubebench-check``: the gate (``kubebench check``), failing its task on a significant regression;
  output ``verdict``;
- ``kubebench-benchmark``: a pipeline of the two, caching off, the experiment id from the pipeline
  run, the store's Secret and the runs' claim given to both pods (the ``kubernetes`` platform spec
  that kfp-kubernetes writes).

The launcher (kubeflow/pipelines ``backend/src/v2/component/launcher_v2.go``) substitutes ``{{$}}``
in the arguments with the executor input as JSON; after the command exits 0 it reads the file named
by ``outputs.outputFile`` with protojson (unknown fields are an error) as an ``ExecutorOutput``: its
``parameterValues`` win over output-parameter files, and the first artifact's ``metadata`` of each
output is merged into that output's artifact (numbers become MLMD doubles, which the UI shows as
scalar metrics). A missing file is an empty output.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..errors import SpecError

SCHEMA_VERSION = "2.1.0"
METRICS_TYPE = {"schemaTitle": "system.Metrics", "schemaVersion": "0.0.1"}
#: The executor input (``{{$}}``) and the placeholder of the pipeline run's id (resolved by the
#: driver only as a task input's constant, not inside a container's arguments).
EXECUTOR_INPUT = "{{$}}"
JOB_ID = "{{$.pipeline_job_uuid}}"
#: Inputs of each component: name → (parameterType, default; None: required).
RUN_INPUTS: dict[str, tuple[str, Any]] = {
    "spec": ("STRING", None), "experiment_id": ("STRING", None), "labels": ("STRUCT", {}), "params": ("STRUCT", {}),
    "backend": ("STRING", "kubernetes"), "repeats": ("NUMBER_INTEGER", 0)}
CHECK_INPUTS: dict[str, tuple[str, Any]] = {
    "experiment": ("STRING", None), "labels": ("STRUCT", {}), "metrics": ("LIST", []), "threshold": ("NUMBER_DOUBLE", -1.0),
    "alpha": ("NUMBER_DOUBLE", 0.05), "correction": ("STRING", "holm"), "window": ("NUMBER_INTEGER", 10),
    "first_ok": ("BOOLEAN", True)}


@dataclass(frozen=True)
class Container:
    """What the step's pod runs and is given."""

    image: str
    #: the store's URL (``--store``) when no Secret gives KUBEBENCH_STORE. Not an ``env``: the kfp SDK
    #: fails to reuse a loaded component with one (2.17.3: ``build_container_spec_for_task`` takes
    #: the env it loaded, a list, for a dict)
    store: str | None = None


def _definitions(inputs: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    params = {}
    for name, (kind, default) in inputs.items():
        params[name] = {"parameterType": kind} if default is None else \
            {"parameterType": kind, "defaultValue": default, "isOptional": True}
    return {"parameters": params}


def _component(step: str, inputs: dict[str, tuple[str, Any]], outputs: dict[str, Any]) -> dict[str, Any]:
    return {"executorLabel": f"exec-kubebench-{step}", "inputDefinitions": _definitions(inputs),
            "outputDefinitions": outputs}


_RUN_OUTPUTS = {"artifacts": {"metrics": {"artifactType": METRICS_TYPE}},
                "parameters": {"experiment": {"parameterType": "STRING"}}}
_CHECK_OUTPUTS = {"parameters": {"verdict": {"parameterType": "STRING"}}}


def _executor(step: str, container: Container) -> dict[str, Any]:
    store = ["--store", container.store] if container.store else []
    return {"container": {"image": container.image, "command": ["kubebench"],
                          "args": ["kfp", step, "--executor-input", EXECUTOR_INPUT, *store]}}


def _task(step: str, inputs: dict[str, Any], after: list[str] | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"cachingOptions": {}, "componentRef": {"name": f"comp-kubebench-{step}"},
                            "inputs": {"parameters": inputs}, "taskInfo": {"name": f"kubebench-{step}"}}
    if after:
        task["dependentTasks"] = after
    return task


def _from_root(names: Any) -> dict[str, Any]:
    return {name: {"componentInputParameter": name} for name in names}


def _root_outputs(step: str, outputs: dict[str, Any]) -> dict[str, Any]:
    dag: dict[str, Any] = {}
    if "artifacts" in outputs:
        dag["artifacts"] = {n: {"artifactSelectors": [{"outputArtifactKey": n, "producerSubtask": f"kubebench-{step}"}]}
                            for n in outputs["artifacts"]}
    dag["parameters"] = {n: {"valueFromParameter": {"outputParameterKey": n, "producerSubtask": f"kubebench-{step}"}}
                         for n in outputs["parameters"]}
    return dag


def component(step: str, container: Container) -> dict[str, Any]:
    """The component ``kubebench-run`` or ``kubebench-check`` (``step``) as a one-task pipeline (the
    form ``kfp.components.load_component_from_file`` loads; submitted alone, its task is uncached)."""
    inputs, outputs = (RUN_INPUTS, _RUN_OUTPUTS) if step == "run" else (CHECK_INPUTS, _CHECK_OUTPUTS)
    return _tree({
        "components": {f"comp-kubebench-{step}": _component(step, inputs, outputs)},
        "deploymentSpec": {"executors": {f"exec-kubebench-{step}": _executor(step, container)}},
        "pipelineInfo": {"name": f"kubebench-{step}", "description": _DESCRIPTIONS[step]},
        "root": {"dag": {"outputs": _root_outputs(step, outputs), "tasks": {f"kubebench-{step}": _task(step, _from_root(inputs))}},
                 "inputDefinitions": _definitions(inputs), "outputDefinitions": outputs},
        "schemaVersion": SCHEMA_VERSION, "sdkVersion": f"kubebench-{__version__}",
    })


_DESCRIPTIONS = {
    "run": "Run a kubebench spec; its metrics as system.Metrics, the experiment id as `experiment`.",
    "check": "kubebench check: fail on a significant regression of the experiment against its series.",
    "benchmark": "Run a kubebench spec, then gate on a significant regression (kubebench check).",
}


def pipeline(container: Container) -> dict[str, Any]:
    """``kubebench-benchmark``: run, then the gate on the run's experiment; caching off, the experiment
    id from the pipeline run."""
    run_inputs = {k: v for k, v in RUN_INPUTS.items() if k != "experiment_id"}
    check_inputs = {f"gate_{k}": v for k, v in CHECK_INPUTS.items() if k != "experiment"}
    run_args = _from_root(run_inputs) | {"experiment_id": {"runtimeValue": {"constant": JOB_ID}}}
    check_args: dict[str, Any] = {k.removeprefix("gate_"): {"componentInputParameter": k} for k in check_inputs}
    check_args["experiment"] = {"taskOutputParameter": {"producerTask": "kubebench-run", "outputParameterKey": "experiment"}}
    return _tree({
        "components": {"comp-kubebench-run": _component("run", RUN_INPUTS, _RUN_OUTPUTS),
                       "comp-kubebench-check": _component("check", CHECK_INPUTS, _CHECK_OUTPUTS)},
        "deploymentSpec": {"executors": {f"exec-kubebench-{s}": _executor(s, container) for s in ("run", "check")}},
        "pipelineInfo": {"name": "kubebench-benchmark", "description": _DESCRIPTIONS["benchmark"]},
        "root": {"dag": {"outputs": _root_outputs("run", _RUN_OUTPUTS),
                         "tasks": {"kubebench-run": _task("run", run_args),
                                   "kubebench-check": _task("check", check_args, ["kubebench-run"])}},
                 "inputDefinitions": _definitions(run_inputs | check_inputs), "outputDefinitions": _RUN_OUTPUTS},
        "schemaVersion": SCHEMA_VERSION, "sdkVersion": f"kubebench-{__version__}",
    })


def platform(secret: str | None, claim: str, mount: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    """The ``kubernetes`` platform spec of both executors (as kfp-kubernetes' ``use_secret_as_env``,
    ``mount_pvc``, ``add_pod_label`` and ``add_pod_annotation`` write it)."""
    # the deprecated ``constant`` and ``secretName`` too, as kfp-kubernetes writes them (older backends read those)
    config: dict[str, Any] = {"pvcMount": [{"constant": claim, "mountPath": mount,
                                            "pvcNameParameter": {"runtimeValue": {"constant": claim}}}],
                              "podMetadata": {"labels": dict(labels), "annotations": dict(annotations)}}
    if secret:
        config["secretAsEnv"] = [{"secretName": secret, "keyToEnv": [{"secretKey": "url", "envVar": "KUBEBENCH_STORE"}],
                                  "secretNameParameter": {"runtimeValue": {"constant": secret}}}]
    executors = {f"exec-kubebench-{s}": config for s in ("run", "check")}
    return _tree({"platforms": {"kubernetes": {"deploymentSpec": {"executors": executors}}}})


def _tree(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with no part shared (YAML would write a shared part once, with an anchor and aliases)."""
    return json.loads(json.dumps(doc))


# --- the executor's side -----------------------------------------------------------------------


#: What a value of each parameter type is, in the executor input's JSON.
_TYPES = {"STRING": lambda v: isinstance(v, str), "BOOLEAN": lambda v: isinstance(v, bool),
          "NUMBER_INTEGER": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and float(v).is_integer(),
          "NUMBER_DOUBLE": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "STRUCT": lambda v: isinstance(v, dict), "LIST": lambda v: isinstance(v, list)}


@dataclass(frozen=True)
class ExecutorInput:
    """What the launcher passes as ``{{$}}``: the inputs' values and where the outputs go."""

    parameters: dict[str, Any]
    output_file: str
    #: output artifact name → (artifact name, uri) of its first artifact
    artifacts: dict[str, tuple[str, str]] = field(default_factory=dict)


def read_executor_input(text: str, inputs: dict[str, tuple[str, Any]]) -> ExecutorInput:
    """The executor input (JSON), the component's defaults filled in; a SpecError for a bad one."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise SpecError(f"--executor-input: not JSON ({e}); the component passes {EXECUTOR_INPUT}") from None
    if not isinstance(data, dict) or not isinstance(data.get("outputs"), dict) or not data["outputs"].get("outputFile"):
        raise SpecError("--executor-input: no outputs.outputFile: expected the launcher's executor input ({{$}})")
    given = (data.get("inputs") or {}).get("parameterValues") or {}
    values = {}
    for name, (kind, default) in inputs.items():
        if given.get(name) is None and default is None:
            raise SpecError(f"--executor-input: input {name!r} is required")
        value = values[name] = given[name] if given.get(name) is not None else default
        if not _TYPES[kind](value):
            raise SpecError(f"--executor-input: input {name!r} must be {kind}, got {json.dumps(value)[:80]}")
    artifacts = {}
    for name, listed in ((data["outputs"].get("artifacts") or {}).items()):
        first = (listed.get("artifacts") or [{}])[0]
        artifacts[name] = (str(first.get("name") or name), str(first.get("uri") or ""))
    return ExecutorInput(values, str(data["outputs"]["outputFile"]), artifacts)


def executor_output(given: ExecutorInput, parameters: dict[str, str], metrics: dict[str, float] | None = None) -> dict[str, Any]:
    """The ``ExecutorOutput`` (JSON form) of a step: output parameters and, for ``metrics``, the
    ``system.Metrics`` artifact's metadata (finite numbers only: JSON has no NaN)."""
    out: dict[str, Any] = {"parameterValues": dict(parameters)}
    if metrics is not None and "metrics" in given.artifacts:
        name, uri = given.artifacts["metrics"]
        artifact: dict[str, Any] = {"name": name, "metadata": {k: v for k, v in metrics.items() if math.isfinite(v)}}
        if uri:
            artifact["uri"] = uri
        out["artifacts"] = {"metrics": {"artifacts": [artifact]}}
    return out
