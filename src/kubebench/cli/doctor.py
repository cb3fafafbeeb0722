"""``kubebench doctor``: before launching many runs, check that the backend can run the spec's jobs."""

from __future__ import annotations

import typer

from . import ParamsOpt, SetOpt, SpecArg, app, expected_errors, load_args, make_console
from .run import BackendOpt, with_overrides

#: Exit code when a check failed: the spec's jobs cannot run there as things are (as a spec error).
FAILED = 2
_MARKS = {"ok": ("ok  ", "green"), "warn": ("warn", "yellow"), "fail": ("FAIL", "bold red")}


@app.command()
@expected_errors
def doctor(spec: SpecArg, params: ParamsOpt = None, set_: SetOpt = None, backend: BackendOpt = None) -> None:
    """Check that the spec's jobs can run where its backend runs them: on Kubernetes the cluster, the
    namespace, the job kinds served, every permission used, the claim (bound, and the one a pod sees)
    and the Kueue queue; with `data.prepare`, that a job of each step's image writes where the runs
    read. Exits 2 when a check fails."""
    from ..plan.plan import Run
    from ..runner import make_backend, plan_experiment, render_trials
    from ..settings import settings

    loaded = with_overrides(load_args(spec, params, set_), backend)
    experiment = plan_experiment(loaded, settings(), "doctor")
    chosen = make_backend(loaded)
    first: dict[str, Run] = {}
    for run in experiment.plan.runs:
        first.setdefault(run.trial.id, run)
    try:
        manifests = render_trials(experiment, chosen)  # one per trial, within the plan's budgets
        checks = chosen.doctor(manifests, experiment.local_paths(next(iter(first.values()))))
        if loaded.spec.data is not None and loaded.spec.data.prepare:
            from ..data.doctor import data_checks

            chosen.begin(experiment.plan.experiment_id)  # what its jobs share (the spec's folder), as a run has
            checks += data_checks(experiment, chosen)
    finally:
        chosen.close()
    console = make_console()
    for check in checks:
        console.print(check_line(check), soft_wrap=True)
    failed = [c for c in checks if c.state == "fail"]
    console.print(f"{len(failed)} of {len(checks)} checks failed" if failed else f"all {len(checks)} checks passed")
    raise typer.Exit(FAILED if failed else 0)


def check_line(check):
    """``ok   name: detail`` with the mark styled; the name and detail quote the spec and the cluster, so
    they are text, never markup (``[red]`` stays ``[red]``), and show control characters escaped."""
    from rich.text import Text

    from ..present.text import cell

    return Text.assemble(cell(*_MARKS[check.state]), cell(f" {check.name}: {check.detail}"))
