"""``kubebench compare``, ``scaling``, ``overhead`` and ``report``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..rules import COMPARE_THRESHOLD
from . import StoreOpt, app, expected_errors, make_console, open_store_of
from .check import CorrectionChoice

if TYPE_CHECKING:
    from ..rules import Goal

MetricOpt = Annotated[Optional[str], typer.Option("--metric", "-m", metavar="NAME",
                                                  help="Metric to analyse (default: the primary one).")]


class CompareFormat(str, Enum):
    table = "table"
    json = "json"


def metric_of(record, metric: Optional[str], *experiments) -> tuple[str, Goal, str]:
    """(name, goal, unit) of ``metric`` (default: the primary one) of ``record``'s spec; exit 2 naming the
    metrics there are when no run of ``experiments`` has it and the spec does not declare it."""
    from ..analyse.checks import check_metric, metric_names
    from ..present.numbers import metric_unit

    name, goal = record.metric_goal(metric)
    declared = record.declared_metrics()
    check_metric(name, metric_names(*experiments), [str(m["name"]) for m in declared])
    unit = next((str(m.get("unit") or "") for m in declared if m["name"] == name), "")
    return name, goal, metric_unit(name, unit)


@app.command()
@expected_errors
def compare(
    base: Annotated[str, typer.Argument(help="Base experiment id, or SERIES@KEY=VALUE: the newest experiment of the series "
                                             "with that label (bench@cluster=a).", show_default=False)],
    candidate: Annotated[str, typer.Argument(help="Candidate experiment id, or SERIES@KEY=VALUE.", show_default=False)],
    metric: MetricOpt = None,
    format: Annotated[CompareFormat, typer.Option("--format", "-f", help="table or json.")] = CompareFormat.table,
    fail_on: Annotated[Optional[str], typer.Option(
        "--fail-on", metavar="METRIC:-N%",
        help="Exit 1 when a trial regresses by more than N% (significantly), or the candidate lacks a trial "
             "or every run of one failed.")] = None,
    threshold: Annotated[float, typer.Option(
        min=0, max=1, help="Relative change within which two experiments count as unchanged, when the whole "
                           "95% CI of the ratio lies inside it.")] = COMPARE_THRESHOLD,
    correction: Annotated[CorrectionChoice, typer.Option(
        "--correction", help="Over several trials, significance adjusted by holm (family-wise error rate) or bh "
                             "(false discovery rate).")] = CorrectionChoice.holm,
    store: StoreOpt = None,
) -> None:
    """Compare two experiments trial by trial: ratio of medians with CI, p-value, verdict.

    Verdicts: improved / regressed (significant change), unchanged (the ratio's whole CI lies within
    ±threshold), inconclusive (neither: the reason is printed; more repeats narrow the CI). Over
    several trials a change must stay significant after Holm's adjustment (or --correction bh), so a
    sweep of many trials does not report changes by chance.

    \b
    Examples:
      kubebench compare base-id candidate-id
      kubebench compare base-id candidate-id --fail-on images_per_sec:-3%
      kubebench compare bench@cluster=a bench@cluster=b     (the same spec on two clusters)
    """
    from ..analyse.compare import parse_fail_on
    from ..analyse.experiments import compare_experiments
    from ..store.series import experiment_ref

    db = open_store_of(store)
    base, candidate = experiment_ref(db, base), experiment_ref(db, candidate)
    base_record = db.experiment(base)
    candidate_record = db.experiment(candidate)  # an unknown id is a clear error before any work
    _note_benchmarks(base_record, candidate_record)
    base_runs, candidate_runs = db.runs(base), db.runs(candidate)
    name, goal, unit = metric_of(base_record, metric, base_runs, candidate_runs)
    gate = parse_fail_on(fail_on) if fail_on else None
    if gate:
        metric_of(base_record, gate[0], base_runs, candidate_runs)  # a typo must not pass the gate
    rows = compare_experiments(base_runs, candidate_runs, name, goal, threshold, correction.value)
    decided = [d for d in db.decisions(candidate) if d.metric == name]
    if format is CompareFormat.json:
        sys.stdout.write(json.dumps([_with_decision(r.to_dict(), decided) for r in rows], indent=2, default=str) + "\n")
    else:
        from ..present.costs import comparison_line
        from ..present.studies import comparison_table
        from ..present.tables import params_split
        from ..present.text import cell

        console = make_console()
        console.print(comparison_table(rows, base, candidate, unit, params_split([r.params for r in base_runs])[0],
                                       params_split([r.params for r in candidate_runs])[0]))
        cost = comparison_line(base_runs, candidate_runs)
        if cost:
            console.print(cell(cost))
        _print_sequential(console, candidate, decided)
    _warn_environments(db, base, candidate)
    _warn_data(db, base, candidate)
    if fail_on and gate:
        gated = rows if gate[0] == name else compare_experiments(
            base_runs, candidate_runs, gate[0], base_record.metric_goal(gate[0])[1], threshold, correction.value)
        _gate(gated, fail_on, gate[1])


def _with_decision(row: dict, decided) -> dict:
    """A comparison row (JSON) with the sequential decision of its candidate trial, if it had one
    (matched on the parameters that vary between the trials, as the comparison matches them)."""
    from ..present.tables import params_split

    swept = params_split([d.params for d in decided])[1]
    params = row.get("params") or {}
    found = next((d for d in decided if all(repr(d.params.get(k)) == repr(params.get(k)) for k in swept)), None)
    if found is not None:
        row["sequential_decision"] = found.model_dump(exclude={"params"})
    return row


def _print_sequential(console, candidate: str, decided) -> None:
    """The candidate's sequential decisions under a fixed comparison of it: its runs stopped when each
    trial was decided, so those decisions are the verdicts of record (a fixed test on runs a sequential
    rule stopped early does not keep its error rate)."""
    if not decided:
        return
    from ..present.decisions import decision_line
    from ..present.tables import label, params_split
    from ..present.text import cell

    _, swept = params_split([d.params for d in decided])
    console.print(cell(f"{candidate} was run sequentially (--decide-against): each trial stopped once decided, so "
                       "these are its verdicts of record, not the fixed comparison above:", style="bold"))
    for d in decided:
        console.print(cell(f"  {label(d.params, swept)}: {decision_line(d)}"))


def _note_benchmarks(base, candidate) -> None:
    """A note when the two experiments are of different benchmarks (series): maybe not what was meant."""
    from ..present.text import cell

    names = (base.series or base.name, candidate.series or candidate.name)
    if names[0] != names[1]:
        make_console(stderr=True).print(cell(
            f"note: {base.id} and {candidate.id} are of different benchmarks ({names[0]} and {names[1]}): only "
            "the trials with equal parameters are compared", style="yellow"), soft_wrap=True)


def _gate(rows, rule: str, limit: float) -> None:
    """Exit 1, saying why, when a trial regressed beyond ``limit`` or the candidate has no value for it."""
    from ..analyse.compare import fail_on as regressed_beyond
    from ..present.tables import label, params_split
    from ..present.text import cell

    _, swept = params_split([r.params for r in rows])
    failures = [f"{label(r.params, swept)}: regressed {-r.comparison.change:.1%}"
                for r in rows if regressed_beyond(r.comparison, limit)]
    failures += [f"{label(r.params, swept)}: {r.no_candidate_values}" for r in rows if r.no_candidate_values]
    if failures:
        console = make_console(stderr=True)
        console.print(cell(f"gate {rule} failed:", style="bold red"))
        for line in failures:
            console.print(cell("  " + line))
        raise typer.Exit(1)


def _warn_environments(db, base: str, candidate: str) -> None:
    """Warn when the two experiments ran on different hardware or software (most used environment of each)."""
    from ..present.text import cell
    from ..provenance import provenance_differences

    base_envs, candidate_envs = db.environments(base), db.environments(candidate)
    if not base_envs or not candidate_envs:
        return
    for line in provenance_differences(base_envs[0][0], candidate_envs[0][0]):
        make_console(stderr=True).print(cell(f"warning: environments differ: {line}", style="yellow"))


def _warn_data(db, base: str, candidate: str) -> None:
    """Warn when the two experiments read different data (by dataset name: checksums, datasets of one only)."""
    from ..present.data import data_differences
    from ..present.text import cell

    for line in data_differences(db.data(base), db.data(candidate)):
        make_console(stderr=True).print(cell(f"warning: data differ: {line}", style="yellow"))


@app.command()
@expected_errors
def scaling(
    experiment_id: Annotated[str, typer.Argument(help="Experiment sweeping the number of workers.", show_default=False)],
    metric: MetricOpt = None,
    workers_param: Annotated[Optional[str], typer.Option(
        "--workers-param", metavar="NAME",
        help="Parameter holding the worker count (default: the swept one named workers, nodes, gpus, replicas …).")] = None,
    store: StoreOpt = None,
) -> None:
    """Scaling efficiency of a workers sweep: throughput(N) / (N × throughput(1)), with CI.

    Shows the threads each replica used (from a threads parameter, else from the workload's banner
    "threads=N"): runs compare like for like only when it is the same at every worker count.

    \b
    Example:
      kubebench scaling pytorch-cnn-20261130-a1b2 --metric images_per_sec
    """
    from ..analyse.experiments import scaling as scaling_study, workers_parameter
    from ..present.studies import scaling_table

    db = open_store_of(store)
    runs = db.runs(experiment_id)
    name, _, unit = metric_of(db.experiment(experiment_id), metric, runs)
    workers_param = workers_param or workers_parameter(runs, name)
    threads = threads_per_replica(runs, workers_param)
    make_console().print(scaling_table(scaling_study(runs, name, workers_param), name, unit, threads))


def threads_per_replica(runs: Sequence, workers_param: str) -> dict[tuple[str, int], str] | None:
    """(params_key of the parameters other than workers, workers) → the threads per replica of that
    trial: a threads parameter's value, else what the workload's rank-0 banner printed
    (``threads=N``); None when neither says."""
    import re

    from ..analyse.experiments import params_key
    from ..rules import thread_parameter

    found: dict[tuple[str, int], str] = {}
    for run in runs:
        if run.status != "succeeded" or workers_param not in run.params:
            continue
        rest = {k: v for k, v in run.params.items() if k != workers_param}
        key = (params_key(rest), int(run.params[workers_param]))
        if key in found:
            continue
        name = thread_parameter(list(run.params))
        if name is not None:
            found[key] = str(run.params[name])
            continue
        banner = re.search(rb"\bthreads=(\d+)", _rank0_log_head(run.path))
        if banner:
            found[key] = banner.group(1).decode()
    return found or None


def _rank0_log_head(run_path: str, size: int = 64_000) -> bytes:
    """The start of the run's rank-0 replica log (the banner is printed at start-up); b"" if unreadable."""
    from pathlib import PurePosixPath

    from ..errors import KubebenchError
    from ..rules import replica_rank
    from ..storage import Storage

    if not run_path:
        return b""
    try:
        folder = Storage(run_path)
        logs = [n for n, _ in folder.files("output") if n.endswith(".log") and n.count("/") == 1]
        if not logs:
            return b""

        def rank(name: str) -> tuple[int, str]:
            return replica_rank(PurePosixPath(name).stem.rpartition("-")[0]), name

        return folder.read(min(logs, key=rank))[:size]
    except (KubebenchError, OSError):
        return b""


@app.command()
@expected_errors
def overhead(
    bare: Annotated[str, typer.Argument(help="Experiment run bare (e.g. local backend).", show_default=False)],
    platform: Annotated[str, typer.Argument(help="The same spec run through the platform.", show_default=False)],
    metric: MetricOpt = None,
    store: StoreOpt = None,
) -> None:
    """Platform overhead: the same spec on two backends or configurations ("overhead +x% ± y%"), and
    where the end-to-end time differs, by phase ("+4.1 s: scheduling +2.2 s, image pull +1.5 s").

    \b
    Example:
      kubebench overhead bare-id kubernetes-id --metric images_per_sec
    """
    from ..analyse.experiments import overheads
    from ..present.studies import overhead_table

    db = open_store_of(store)
    bare_runs, platform_runs = db.runs(bare), db.runs(platform)
    name, goal, unit = metric_of(db.experiment(bare), metric, bare_runs, platform_runs)
    console = make_console()
    console.print(overhead_table(overheads(bare_runs, platform_runs, name, goal), name, unit))
    from ..analyse.startup import phase_overheads
    from ..present.startup import overhead_split
    from ..present.tables import label, params_split

    splits = phase_overheads(bare_runs, platform_runs) if any(
        "end_to_end_seconds" in r.metrics for r in bare_runs) else []
    _, swept = params_split([params for params, _ in splits])
    for params, split in splits:  # where the difference of end-to-end time goes (the runs' timelines)
        where = f"{label(params, swept)}: " if swept else ""
        console.print(f"{where}end to end {overhead_split(split)}", markup=False, soft_wrap=True)


@app.command()
@expected_errors
def report(
    experiment_ids: Annotated[list[str], typer.Argument(help="Experiments; with several, each is compared with the first.", show_default=False)],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write.")] = Path("report.html"),
    metric: MetricOpt = None,
    store: StoreOpt = None,
) -> None:
    """Write one self-contained offline HTML report with tables and plots.

    \b
    Example:
      kubebench report base-id candidate-id -o report.html
    """
    from ..present.report import comparison_section, experiment_section, write_report

    db = open_store_of(store)
    records = [db.experiment(i) for i in experiment_ids]
    runs = {r.id: db.runs(r.id) for r in records}
    if metric:
        metric_of(records[0], metric, *runs.values())
    from ..monitor.plots import runs_telemetry

    sections = [experiment_section(r, runs[r.id], metric, runs_telemetry(db, runs[r.id])) for r in records]
    from ..present.timeline_figures import startup_parts

    for section, record in zip(sections, records):  # where the time goes: phases per trial, runs as timelines
        tables, figures = startup_parts(runs[record.id], db.timelines(r.run_id for r in runs[record.id]))
        section.tables += tables
        section.figures += figures
    base = records[0]
    sections += [comparison_section(base, runs[base.id], r, runs[r.id], metric) for r in records[1:]]
    from ..present.data import add_data

    add_data(sections, records, {r.id: db.data(r.id) for r in records})
    from .history import history_sections

    sections += history_sections(db, records, metric)  # the series' history plot, when there is one
    write_report(output, sections, "kubebench report: " + ", ".join(experiment_ids))
    make_console().print(f"report written to {output}", markup=False)
