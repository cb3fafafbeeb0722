"""kubebench as a pipeline step: ``kubebench deploy kfp-component | argo-template | tekton-task`` print
the steps, and ``kubebench kfp run | check`` are what the Kubeflow Pipelines components run
(docs/pipelines.md)."""

from __future__ import annotations

import json
import sys
import tempfile
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from . import StorageOpt, StoreOpt, app, expected_errors
from .deploy import deploy_app

kfp_app = typer.Typer(help="The Kubeflow Pipelines steps (run by the components of `kubebench deploy kfp-component`).",
                      no_args_is_help=True, rich_markup_mode=None)
app.add_typer(kfp_app, name="kfp")

ImageOpt = Annotated[Optional[str], typer.Option("--image", help="kubebench's image (the Dockerfile's `runner` target).")]
NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", help="kubebench's namespace (deploy manifests): its store and claim.")]
SecretOpt = Annotated[Optional[str], typer.Option(
    "--store-secret", metavar="NAME", help="A Secret whose key `url` is the store's URL (default: kubebench-store, "
                                           "the Secret of deploy manifests).")]
ExecutorInputOpt = Annotated[str, typer.Option(
    "--executor-input", metavar="JSON", help="The executor input the KFP launcher passes ({{$}}).", show_default=False)]


def _options(image: Optional[str], namespace: str, store_secret: Optional[str]):
    from ..deploy import DEFAULT_IMAGE, STORE_SECRET
    from ..pipelines.steps import StepOptions

    return StepOptions(image or DEFAULT_IMAGE, namespace, store_secret or STORE_SECRET)


def _print(*docs: dict[str, Any], header: str = "") -> None:
    from ..attempts import dump_yaml

    sys.stdout.write(header + "---\n".join(dump_yaml(doc) for doc in docs))


class KfpStep(str, Enum):
    run = "run"
    check = "check"
    pipeline = "pipeline"


@deploy_app.command("kfp-component")
@expected_errors
def kfp_component(
    step: Annotated[KfpStep, typer.Option("--step", help="run: the run component; check: the gate; pipeline: both, "
                                                         "caching off, with the claim and the store's Secret.")] = KfpStep.run,
    image: ImageOpt = None,
    namespace: NamespaceOpt = "kubebench",
    store_secret: SecretOpt = None,
) -> None:
    """Print a Kubeflow Pipelines v2 component (pipeline IR YAML, for components.load_component_from_file)."""
    from ..deploy import HOME_MOUNT
    from ..pipelines import kfp
    from ..pipelines.steps import POD_ANNOTATIONS, POD_LABELS

    o = _options(image, namespace, store_secret)
    container = kfp.Container(o.image)  # the store's URL comes from its Secret (the platform spec), never a value
    if step is KfpStep.pipeline:
        docs = [kfp.pipeline(container), kfp.platform(o.store_secret, o.claim, HOME_MOUNT, POD_LABELS, POD_ANNOTATIONS)]
    else:
        docs = [kfp.component(step.value, container)]
    name = docs[0]["pipelineInfo"]["name"]
    _print(*docs, header=f"# PIPELINE DEFINITION\n# Name: {name}\n# Description: {docs[0]['pipelineInfo']['description']}\n")


@deploy_app.command("argo-template")
@expected_errors
def argo_template(image: ImageOpt = None, namespace: NamespaceOpt = "kubebench", store_secret: SecretOpt = None) -> None:
    """Print an Argo WorkflowTemplate: kubebench run, then kubebench check (argo submit --from workflowtemplate/kubebench)."""
    from ..pipelines.argo import workflow_template

    _print(workflow_template(_options(image, namespace, store_secret)))


@deploy_app.command("tekton-task")
@expected_errors
def tekton_task(image: ImageOpt = None, namespace: NamespaceOpt = "kubebench", store_secret: SecretOpt = None) -> None:
    """Print a Tekton Task: kubebench run, then kubebench check; results experiment-id, primary-median, verdict."""
    from ..pipelines.tekton import task

    _print(task(_options(image, namespace, store_secret)))


def _exit_code(command: Callable[..., None], **arguments: Any) -> int:
    """Run a command function; its exit code."""
    try:
        command(**arguments)
    except typer.Exit as e:
        return e.exit_code
    return 0


def _write_output(path: str, output: dict[str, Any]) -> None:
    from ..errors import SpecError

    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(output), encoding="utf-8")
    except OSError as e:
        raise SpecError(f"cannot write the executor output {path}: {e}") from e


def _texts(value: dict[str, Any], what: str) -> list[str]:
    """A STRUCT input as KEY=VALUE items: labels as text, parameters as JSON (``--set`` reads YAML)."""
    return [f"{k}={v if isinstance(v, str) and what == 'labels' else json.dumps(v)}" for k, v in value.items()]


@kfp_app.command("run")
@expected_errors
def kfp_run(executor_input: ExecutorInputOpt, store: StoreOpt = None, storage: StorageOpt = None) -> None:
    """Run the spec of the inputs (kubebench run), then write its metrics and experiment id as the step's outputs."""
    from .. import ids
    from ..pipelines.kfp import RUN_INPUTS, executor_output, read_executor_input
    from ..pipelines.outputs import run_outputs
    from . import open_store_of
    from .run import run

    given = read_executor_input(executor_input, RUN_INPUTS)
    values = given.parameters
    experiment_id = ids.check(str(values["experiment_id"]), "--executor-input: input experiment_id")
    code = _exit_code(run, spec=Path(str(values["spec"])), set_=_texts(values["params"], "params") or None,
                      experiment_id=experiment_id, repeats=int(values["repeats"]) or None,
                      backend=str(values["backend"]) or None, label=_texts(values["labels"], "labels") or None,
                      store=store, storage=storage)
    db = open_store_of(store)
    if _exists(db, experiment_id):  # else a spec error before it was planned: nothing to report
        outputs = run_outputs(db, experiment_id)
        _write_output(given.output_file, executor_output(given, {"experiment": experiment_id}, outputs.metrics))
    raise typer.Exit(code)


def _exists(db, experiment_id: str) -> bool:
    from ..errors import KubebenchError

    try:
        db.experiment(experiment_id)
    except KubebenchError:
        return False
    return True


@kfp_app.command("check")
@expected_errors
def kfp_check(executor_input: ExecutorInputOpt, store: StoreOpt = None) -> None:
    """Check the experiment of the inputs against its series (kubebench check); exit 1 on a significant regression."""
    from ..errors import SpecError
    from ..pipelines.kfp import CHECK_INPUTS, executor_output, read_executor_input
    from .check import CorrectionChoice, check

    given = read_executor_input(executor_input, CHECK_INPUTS)
    v = given.parameters
    if v["correction"] not in [c.value for c in CorrectionChoice]:
        raise SpecError(f"--executor-input: input 'correction' must be holm or bh, got {v['correction']!r}")
    with tempfile.TemporaryDirectory(prefix="kubebench-check-") as folder:
        code = _exit_code(check, targets=[str(v["experiment"])], metric=[str(m) for m in v["metrics"]] or None,
                          correction=CorrectionChoice(str(v["correction"])), alpha=float(v["alpha"]),
                          threshold=float(v["threshold"]) if float(v["threshold"]) >= 0 else None,
                          window=int(v["window"]), junit=None, summary=None, label=_texts(v["labels"], "labels") or None,
                          first_ok=bool(v["first_ok"]), outputs=Path(folder), store=store)
        verdict = Path(folder, "verdict")
        if verdict.is_file():
            _write_output(given.output_file, executor_output(given, {"verdict": verdict.read_text(encoding="utf-8")}))
    raise typer.Exit(code)
