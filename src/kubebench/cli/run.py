"""``kubebench run`` and ``kubebench render``."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import IdOpt, ParamsOpt, SetOpt, SpecArg, StorageOpt, StoreOpt, app, expected_errors, load_args, make_console

BackendOpt = Annotated[Optional[str], typer.Option(
    "--backend", metavar="NAME", help="Where jobs run: local or kubernetes (overrides the spec's backend kind).")]
RepeatsOpt = Annotated[Optional[int], typer.Option("--repeats", metavar="N", min=1, help="Runs per trial (overrides the spec).")]


@app.command()
@expected_errors
def run(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    experiment_id: IdOpt = None,
    repeats: RepeatsOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and do nothing.")] = False,
    store: StoreOpt = None,
    backend: BackendOpt = None,
    parallelism: Annotated[Optional[int], typer.Option(
        "--parallelism", metavar="N", min=1, help="Runs in flight at once (overrides the spec).")] = None,
    storage: StorageOpt = None,
    metrics_port: Annotated[Optional[int], typer.Option(
        "--metrics-port", metavar="PORT", min=1, max=65535, help="Serve Prometheus /metrics on 127.0.0.1:PORT while it runs.")] = None,
    label: Annotated[Optional[list[str]], typer.Option(
        "--label", metavar="KEY=VALUE", help="Label the experiment: key=value (e.g. version=1.4.2, commit=abc123); repeatable.")] = None,
    context: Annotated[Optional[str], typer.Option(
        "--context", metavar="NAME", help="Kube context (of the kubeconfig) to run in, for the kubernetes backend: one spec "
                                          "on several clusters, each labelled (--label cluster=NAME).")] = None,
    outputs: Annotated[Optional[Path], typer.Option(
        "--outputs", metavar="DIR", help="Write the experiment id, the primary metric and its median, and the failed "
                                         "runs, one file each, to DIR (a pipeline step's results: Tekton, Argo).")] = None,
    decide_against: Annotated[Optional[str], typer.Option(
        "--decide-against", metavar="BASE",
        help="Run each trial round by round and stop it as soon as it is regressed, improved or unchanged against "
             "BASE (an experiment id, SERIES@KEY=VALUE, or `series`: the series' current level), or inconclusive at "
             "the spec's repeats (its max); a sequential test whose error rates hold whatever round it stops at. "
             "Exit 1 when a trial regressed.")] = None,
    margin: Annotated[Optional[float], typer.Option(
        "--margin", metavar="FRACTION", min=0.001, max=0.5,
        help="With --decide-against: `unchanged` means the change's CI lies within ±FRACTION (default 0.03); a "
             "change that large is called unchanged at most 10% of the time.")] = None,
    benchmark_ref: Annotated[Optional[str], typer.Option(
        "--benchmark-ref", metavar="NS/NAME/UID", hidden=True,
        help="The Benchmark resource this runner runs for (set by `kubebench operator`): its status is kept current.")] = None,
) -> None:
    """Plan, run and record a benchmark, then print its results per trial.

    Exit status: 0 every run succeeded, 1 some run failed, 2 a spec or usage error, 130 interrupted.

    \b
    Examples:
      kubebench run examples/pytorch-cnn/benchmark.yaml
      kubebench run bench.yaml --set batch_size=[32,64] --repeats 5
      kubebench run bench.yaml --id my-exp     (again: resumes my-exp)
      kubebench run bench.yaml --decide-against series  (stops when decided)
    """
    # series_records, not series: no SQLAlchemy, a dry run never opens the store
    from ..runner import plan_experiment
    from ..settings import settings
    from ..store.series_records import parse_labels

    labels = parse_labels(label or ())
    loaded = with_overrides(load_args(spec, params, set_), backend, parallelism)
    if context is not None:
        loaded = in_context(loaded, context)
    config = settings(store, storage=storage)
    sequential = _sequential(loaded, repeats, decide_against, margin)
    experiment = plan_experiment(loaded, config, experiment_id, repeats, labels, sequential)
    console = make_console()
    if dry_run:
        from ..present.tables import plan_table
        from ..runner import make_backend, render_trials

        render_trials(experiment, make_backend(loaded))  # what `run` refuses, a dry run refuses too
        console.print(plan_table(experiment.plan))
        if sequential is not None:
            from ..present.text import cell

            console.print(cell(f"then, round by round, one more run of each trial not yet decided against "
                               f"{decide_against}, at most {sequential.max_runs} runs a trial"))
        return
    if decide_against is not None and sequential is not None:
        from ..analyse.against import read_against
        from ..runner import with_against
        from ..store.store import open_store

        against = read_against(open_store(config.store_url), decide_against, loaded.spec, experiment.plan, sequential)
        experiment = with_against(experiment, against)
    extra = ["--decide-against", decide_against] if decide_against else []
    resume = _resume_command(spec, params, set_, experiment.plan.experiment_id, extra)
    from .detectable import noise_note

    watch = noise_note(experiment, config.store_url, console)  # what its repeats can detect (#28)
    failed = _execute(experiment, config, console, metrics_port, benchmark_ref, resume, watch)
    if decide_against is not None and not failed:
        failed = _regressed(config, experiment.plan.experiment_id)
    if outputs is not None:
        from ..pipelines.outputs import run_outputs, write_files
        from ..store.store import open_store

        write_files(outputs, run_outputs(open_store(config.store_url), experiment.plan.experiment_id).files())
    raise typer.Exit(1 if failed else 0)


def _resume_command(spec, params, overrides, experiment_id: str, more: list[str] | None = None) -> str:
    """The command that resumes this experiment: the spec, its --params, --set (and ``more``) as given, and its id."""
    from ..present.listing import resume_command

    extra = [*(["--params", str(params)] if params else []), *(a for o in overrides or () for a in ("--set", o)),
             *(more or [])]
    return resume_command(str(spec), experiment_id, extra)


def _sequential(loaded, repeats: Optional[int], decide_against: Optional[str], margin: Optional[float]):
    """The sequential design of ``--decide-against`` (None without it)."""
    from ..errors import SpecError

    if decide_against is None:
        if margin is not None:
            raise SpecError("--margin goes with --decide-against (the margin of its `unchanged`)")
        return None
    from ..numerics.sequential import MARGIN
    from ..plan.adaptive import sequential_design

    return sequential_design(loaded.spec, repeats, MARGIN if margin is None else margin)


def _regressed(config, experiment_id: str) -> int:
    """How many trials a sequential decision found regressed (the exit status is then 1)."""
    from ..store.store import open_store

    return sum(d.verdict == "regressed" for d in open_store(config.store_url).decisions(experiment_id))


def _execute(experiment, config, console, metrics_port: Optional[int] = None, benchmark_ref: Optional[str] = None,
             resume: str = "", watch: Any = None) -> int:
    from ..cancel import Cancel, stop_signals
    from ..present.progress import RichProgress
    from ..runner import execute
    from ..store.store import open_store

    store = open_store(config.store_url)
    exp_id = experiment.plan.experiment_id
    server = None
    if metrics_port:
        from ..monitor.exposition import serve_metrics

        server = serve_metrics(store, metrics_port)
    cancel = Cancel()
    writer = None
    if benchmark_ref is not None:
        from ..operator.progress import StatusWriter

        writer = StatusWriter(benchmark_ref, store, exp_id)
    try:
        with stop_signals(cancel, exp_id), RichProgress(console) as shown:
            progress: Any = shown
            if writer is not None:
                from ..operator.progress import Both

                progress = Both(shown, writer)
            if watch is not None:
                progress = watch.beside(progress)
            execute(experiment, store, progress, cancel=cancel)
            if writer is not None:
                writer.finish()
    except KeyboardInterrupt:  # Ctrl-C, or Cancelled (SIGINT, SIGTERM through stop_signals)
        signum = cancel.signal or signal.SIGINT
        from ..present.text import cell

        err = make_console(stderr=True)
        err.print(f"interrupted ({signal.Signals(signum).name}): the runs in flight were cancelled; resume with:",
                  soft_wrap=True, markup=False)
        # its own line, never wrapped by us: pasted as it is (review 2026-12-02 #9)
        err.print(cell("  " + (resume or f"kubebench run SPEC --id {exp_id}")), soft_wrap=True)
        raise typer.Exit(128 + signum) from None
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    from .results import print_results

    failed = print_results(console, store, exp_id)
    from ..present.text import cell
    from ..redact import mask_url
    from .results import print_capacity

    record = store.experiment(exp_id)
    print_capacity(console, store, record)
    if failed:
        console.print(cell(f"see: kubebench show {exp_id}  (the end of each failed run's log, and what it reported)",
                           style="yellow"), soft_wrap=True)
    console.print(cell(f"experiment {exp_id} · store {mask_url(config.store_url)}"))
    return failed


@app.command()
@expected_errors
def render(
    spec: SpecArg,
    params: ParamsOpt = None,
    set_: SetOpt = None,
    experiment_id: Annotated[Optional[str], typer.Option(
        "--id", metavar="ID", help="Experiment id the manifests are labelled with (default: a new one).")] = None,
    repeats: RepeatsOpt = None,
    all_runs: Annotated[bool, typer.Option(
        "--all-runs", help="Print every run's job; by default one per trial (the repeats differ only in ids).")] = False,
    store: StoreOpt = None,
    backend: BackendOpt = None,
    kubernetes_version: Annotated[Optional[str], typer.Option(
        "--kubernetes-version", metavar="X.Y", help="Render for this Kubernetes version: a job setting a field it "
                                                    "lacks is refused (kubernetes backend).")] = None,
) -> None:
    """Print the job (YAML) that each trial would run, without running anything.

    \b
    Examples:
      kubebench render examples/pytorch-cnn/benchmark.yaml --backend kubernetes
      kubebench render bench.yaml --backend kubernetes --kubernetes-version 1.31
      kubebench render bench.yaml --set workers=4 --all-runs
    """
    from ..attempts import dump_yaml
    from ..render.budget import size_budget
    from ..runner import make_backend, plan_experiment
    from ..settings import settings

    loaded = with_overrides(load_args(spec, params, set_), backend)
    if kubernetes_version is not None:
        loaded = for_kubernetes(loaded, kubernetes_version)
    experiment = plan_experiment(loaded, settings(store), experiment_id, repeats)
    target = make_backend(experiment.loaded)
    per_trial: dict[str, int] = {}
    for run in experiment.plan.runs:
        per_trial[run.trial.id] = per_trial.get(run.trial.id, 0) + 1
    documents = []
    with size_budget():  # what is printed is kept until then: the limit on what a plan renders holds
        for run in experiment.plan.runs:
            first = not run.warmup and run.repeat == 0
            if not all_runs and not first:
                continue
            job = experiment.render(run, target)
            note = f" (of {per_trial[run.trial.id]} runs; the others differ only in run id and repeat)" \
                if not all_runs and per_trial[run.trial.id] > 1 else ""
            documents += [f"# run {run.id}: {_one_line(run.label)}{note}\n" + dump_yaml(obj)
                          for obj in target.objects(job.manifest)]
    if kubernetes_version is not None and documents:
        documents[0] = f"# for Kubernetes {kubernetes_version}\n" + documents[0]
    sys.stdout.write("---\n".join(documents))


def for_kubernetes(loaded, version: str):
    """The loaded spec with its backend checking jobs for Kubernetes ``version`` (``--kubernetes-version``)."""
    from ..errors import SpecError
    from ..render.versions import parse, show

    config = loaded.spec.backend
    if "kubernetes_version" not in type(config).model_fields:
        raise SpecError(f"--kubernetes-version: the {config.kind} backend does not run on Kubernetes (add --backend kubernetes)")
    update = {"backend": config.model_copy(update={"kubernetes_version": show(parse(version))})}
    return loaded.model_copy(update={"spec": loaded.spec.model_copy(update=update)})


def in_context(loaded, context: str):
    """The loaded spec with its backend using kube context ``context`` (``--context``)."""
    from ..errors import SpecError

    config = loaded.spec.backend
    if "context" not in type(config).model_fields:
        raise SpecError(f"--context: the {config.kind} backend does not run on Kubernetes (add --backend kubernetes)")
    update = {"backend": config.model_copy(update={"context": context})}
    return loaded.model_copy(update={"spec": loaded.spec.model_copy(update=update)})


def _one_line(text: str) -> str:
    """A label safe in a YAML comment and on a terminal: one line, no control characters."""
    from ..present.text import safe_line

    return safe_line(text)


def with_overrides(loaded, backend: Optional[str] = None, parallelism: Optional[int] = None):
    """The loaded spec with ``--backend`` (that backend with its default options, unless the spec
    already configures it) and ``--parallelism`` applied."""
    update: dict = {}
    if backend is not None and loaded.spec.backend.kind != backend:
        from .. import registry

        update["backend"] = registry.load("backends", backend).Config()
    if parallelism is not None:
        update["parallelism"] = parallelism
    return loaded.model_copy(update={"spec": loaded.spec.model_copy(update=update)}) if update else loaded
