"""What the API answers, built from the store's records and kubebench.analyse (no statistics here)."""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Sequence

from fastapi import HTTPException

from ..analyse.experiments import trial_values
from ..numerics.stats import summarize
from ..present.costs import HEADINGS, cost_metrics, experiment_cost
from ..rules import COMPARE_ALPHA, default_goal, metric_goal
from ..store.records import EXPERIMENT_STATES, FAILED_STATES, RAN_AND_FAILED, RUN_STATUSES, ExperimentRecord, RunRecord
from ..store.store import Store

SUMMARY_FIELDS = ("n", "failed", "mean", "median", "stdev", "cv", "ci_low", "ci_high", "min", "max",
                  "olympic_mean", "ci_half_width_rel", "confidence")




def experiment_summary(record: ExperimentRecord, active: bool = False, launched_here: bool = False) -> dict:
    """ExperimentSummary: ids, times, state, the counted runs by status, and whether it is partial."""
    counts = {s: record.runs_by_status.get(s, 0) for s in RUN_STATUSES}
    state = live_state(record, active)
    return {"id": record.id, "name": record.name, "backend": record.backend, "created_at": record.created_at,
            "updated_at": record.updated_at, "state": state, "partial": partial(state, counts),
            "runs": sum(record.runs_by_status.values()), "runs_by_status": counts, "launched_here": launched_here}


def partial(state: str, counts: dict[str, int]) -> bool:
    """A failed experiment of which some runs succeeded (shown as "partial"; its state stays failed)."""
    return state == "failed" and counts.get("succeeded", 0) > 0


def live_state(record: ExperimentRecord, active: bool) -> str:
    """``running`` while a runner here runs it, else the state from the run counts just read."""
    return "running" if active else record.current_state


def run_summary(run: RunRecord) -> dict:
    """RunSummary: one run's state, timings, parameters and metrics, and for a failed run the last
    line of its log (where the cause usually is: ``ModuleNotFoundError: …``)."""
    return {"run_id": run.run_id, "trial_id": run.trial_id, "repeat": run.repeat, "warmup": run.warmup,
            "status": run.status, "exit_code": run.exit_code, "reason": run.reason, "attempts": run.attempts,
            "started_at": run.started_at, "finished_at": run.finished_at, "duration_s": run.duration_s,
            "params": run.params, "metrics": run.metrics,
            "log_line": last_log_line(run.log_tail) if run.status in FAILED_STATES else ""}


def last_log_line(log_tail: str) -> str:
    """The last line of a log that is not blank, cut at 300 characters ("" for none)."""
    line = next((text.strip() for text in reversed(log_tail.splitlines()) if text.strip()), "")
    return line if len(line) <= 300 else line[:299] + "…"


def run_metrics(record: ExperimentRecord, run: RunRecord) -> list[dict]:
    """A run's metrics in the order people look for them: the spec's declared ones (its order, with
    their units), then the workload's other metrics, then kubebench's telemetry, each with its unit."""
    from ..present.numbers import metric_unit
    from ..rules import is_telemetry

    declared = {str(m["name"]): str(m.get("unit") or "") for m in record.declared_metrics()}
    names = [n for n in declared if n in run.metrics]
    rest = sorted(n for n in run.metrics if n not in declared)
    names += [n for n in rest if not is_telemetry(n)] + [n for n in rest if is_telemetry(n)]
    return [{"name": n, "value": run.metrics[n], "unit": metric_unit(n, declared.get(n, "")),
             "declared": n in declared, "telemetry": is_telemetry(n)} for n in names]


def metric_list(record: ExperimentRecord, runs: Sequence[RunRecord]) -> list[dict]:
    """The spec's declared metrics, then the other metrics the runs have (telemetry summaries …)."""
    declared = [{"name": str(m["name"]), "goal": metric_goal([m], str(m["name"])), "unit": m.get("unit", ""),
                 "declared": True} for m in record.declared_metrics()]
    names = {m["name"] for m in declared}
    extra = sorted({k for r in runs for k in r.metrics} - names)
    return declared + [{"name": k, "goal": default_goal(k), "unit": "", "declared": False} for k in extra]


def swept(runs: Sequence[RunRecord]) -> list[str]:
    """The parameters whose value differs between trials, in the order the trials give them."""
    firsts: dict[str, RunRecord] = {}
    for run in runs:
        firsts.setdefault(run.trial_id, run)
    names = list(dict.fromkeys(k for r in firsts.values() for k in r.params))
    return [k for k in names if len({repr(r.params.get(k)) for r in firsts.values()}) > 1]


def trials(runs: Sequence[RunRecord], metrics: Sequence[str]) -> list[dict]:
    """Each trial's parameters, run counts, and a summary (kubebench.numerics.stats) of every metric."""
    counted = [r for r in runs if not r.warmup]
    order: dict[str, int] = {}
    for run in counted:
        order.setdefault(run.trial_id, len(order))
    rows: dict[str, dict] = {}
    for run in counted:
        row = rows.setdefault(run.trial_id, {"trial_id": run.trial_id, "index": order[run.trial_id],
                                             "params": run.params, "runs": 0, "failed": 0, "cancelled": 0,
                                             "unfinished": 0, "summary": {}})
        row["runs"] += 1
        row["failed"] += run.status in RAN_AND_FAILED
        row["cancelled"] += run.status == "cancelled"
        row["unfinished"] += run.status in ("pending", "running")
    for name in metrics:
        for values in trial_values(counted, name):
            summary = summarize(values.values, failed=values.failed).to_dict()
            rows[values.trial_id]["summary"][name] = {k: summary[k] for k in SUMMARY_FIELDS}
    return sorted(rows.values(), key=lambda r: r["index"])


def experiment_detail(store: Store, experiment_id: str, active: bool, launched_here: bool) -> dict:
    """ExperimentSummary + spec, metrics, swept parameters, trials with statistics, and runs."""
    record = store.experiment(experiment_id)
    runs = store.runs(experiment_id, include_warmup=True)
    metrics = metric_list(record, runs)
    summary = experiment_summary(record, active, launched_here)
    summary["state"] = live_state(record, active)
    summary["partial"] = partial(summary["state"], summary["runs_by_status"])
    from ..store.series import notes

    annotated = notes(store, [experiment_id]).get(experiment_id, {"note": "", "tags": []})
    return {**summary, "spec_text": record.spec_text, "description": description(record), "metrics": metrics,
            "primary_metric": record.primary_metric(), "swept": swept(runs),
            "trials": trials(runs, [m["name"] for m in metrics]), "runs": [run_summary(r) for r in runs],
            "labels": record.labels, "note": annotated["note"], "tags": annotated["tags"], "source": record.source,
            "resume": resume_command(record) if summary["state"] == "interrupted" else None,
            "parallelism": parallelism(record), **cost(runs)}


def resume_command(record: ExperimentRecord) -> str:
    """The command that resumes an experiment (pasted as it is: quoted for a POSIX shell)."""
    from ..present.listing import resume_command as command

    return command(record.source, record.id)


def parallelism(record: ExperimentRecord) -> int:
    """The runs the spec lets run at once (for the page's estimate of the time left); 1 when unknown."""
    import yaml

    try:
        found = (yaml.safe_load(record.spec_text) or {}).get("parallelism", 1)
    except (yaml.YAMLError, AttributeError):
        return 1
    return found if isinstance(found, int) and found > 0 else 1


def cost(runs: Sequence[RunRecord]) -> dict:
    """``cost``: the median cost per run and per item of the counted runs (null when they have none), and
    ``cost_columns``: the metrics (with their headings) whose trial medians the trials table adds."""
    found = experiment_cost(runs)
    names = cost_metrics(k for r in runs for k in r.metrics)
    return {"cost": found.text() if found else None,
            "cost_columns": [{"name": name, "heading": HEADINGS[name]} for name in names]}


def description(record: ExperimentRecord) -> str:
    """The spec's ``description:`` ("" when it has none or the stored spec does not parse)."""
    import yaml

    try:
        found = (yaml.safe_load(record.spec_text) or {}).get("description")
    except (yaml.YAMLError, AttributeError):
        return ""
    return found.strip() if isinstance(found, str) else ""


def runner_log(job, lines: int = 40) -> str:
    """The end of a launched runner's own output (why it stopped, when it did)."""
    try:
        text = (job.folder / "runner.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def parse_time(value: str | None, name: str, end_of_day: bool = False) -> float | None:
    """UNIX seconds from a number or an ISO date/time (UTC unless it says otherwise); 422 otherwise.

    A bare date as an upper bound means the end of that day.
    """
    if value is None or value.strip() == "":
        return None
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            seconds = calendar.timegm(day.timetuple())
            return seconds + 86400 - 0.001 if end_of_day else float(seconds)
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise HTTPException(422, f"{name}: expected UNIX seconds or an ISO date like 2026-11-30, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


def check_state(state: str | None) -> str | None:
    """The state filter, or 422 naming the valid ones."""
    if state and state not in EXPERIMENT_STATES:
        raise HTTPException(422, f"state: unknown state {state!r}; valid: {', '.join(EXPERIMENT_STATES)}")
    return state or None


def compare_detail(store: Store, a: str, b: str, metric: str | None, threshold: float) -> dict:
    """Trial-by-trial comparison of two experiments (kubebench.analyse.experiments) and warnings."""
    from ..analyse.experiments import compare_experiments, family_note
    from ..errors import SpecError
    from ..present.costs import comparison_line
    from ..provenance import provenance_differences

    base = store.experiment(a)
    store.experiment(b)  # 404 for an unknown candidate too
    name, goal = base.metric_goal(metric)
    warnings: list[str] = []
    runs_a, runs_b = store.runs(a), store.runs(b)
    try:
        compared = compare_experiments(runs_a, runs_b, name, goal, threshold)
    except SpecError as e:  # no trials with equal parameters: an answer, not a failure
        compared, warnings = [], [str(e)]
    rows = []
    for row in compared:
        data = row.to_dict()
        low, high = data["ratio_ci"]
        rows.append({"params": row.params, "a": data["base"], "b": data["candidate"], "ratio": data["ratio"],
                     "ci_low": low, "ci_high": high, "change": data["change"], "p_value": data["p_value"],
                     "adjusted_p": data["adjusted_p"], "verdict": data["verdict"], "reason": data["reason"]})
    envs_a, envs_b = store.environments(a), store.environments(b)
    if envs_a and envs_b:
        warnings += [f"environments differ: {line}" for line in provenance_differences(envs_a[0][0], envs_b[0][0])]
    candidate = store.experiment(b)
    if (base.series or base.name) != (candidate.series or candidate.name):
        warnings.insert(0, f"different benchmarks: {base.series or base.name} and {candidate.series or candidate.name}: "
                           "only the trials with equal parameters are compared")
    from ..present.numbers import metric_unit

    unit = next((str(m.get("unit", "")) for m in base.declared_metrics() if m["name"] == name), "")
    return {"a": a, "b": b, "metric": name, "unit": metric_unit(name, unit), "goal": goal, "threshold": threshold,
            "confidence": 1 - 2 * COMPARE_ALPHA, "rows": rows, "warnings": warnings, "correction": family_note(compared),
            "cost": comparison_line(runs_a, runs_b) if compared else None,
            "a_created_at": base.created_at, "b_created_at": candidate.created_at,
            "differences": differences(runs_a, runs_b, base.labels, candidate.labels)}


def differences(runs_a: Sequence[RunRecord], runs_b: Sequence[RunRecord], labels_a: dict[str, str],
                labels_b: dict[str, str]) -> list[dict]:
    """What differs between two experiments besides their runs: each fixed parameter and each label whose
    value is not the same (``{"kind": "parameter", "name": "slow", "a": 1.0, "b": 1.3}``), as the CLI's
    "base: slow=1.0 · candidate: slow=1.3" line."""
    from ..present.studies import experiment_differences
    from ..present.tables import params_split

    fixed_a, fixed_b = params_split([r.params for r in runs_a])[0], params_split([r.params for r in runs_b])[0]
    found = [{"kind": "parameter", "name": k, "a": fixed_a.get(k), "b": fixed_b.get(k)}
             for k in experiment_differences(fixed_a, fixed_b)]
    return found + [{"kind": "label", "name": k, "a": labels_a.get(k), "b": labels_b.get(k)}
                    for k in dict.fromkeys([*labels_a, *labels_b]) if labels_a.get(k) != labels_b.get(k)]
