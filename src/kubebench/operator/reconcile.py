"""One reconcile of a Benchmark, as a pure function of what is observed (level-based, idempotent):
the objects to create, the runner Job's suspension to change, the controller's status fields, and
whether the Benchmark's time to live is over. The same observations always give the same decision,
so a controller may run it any number of times; the I/O is :mod:`.controller`'s.
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass, field
from typing import Any

from . import children
from .conditions import Want, is_true, merged, state, timestamp
from .validate import Verdict

#: The status fields the controller writes (the runner writes the others).
OWNED = ("observedGeneration", "state", "conditions", "runnerJob", "startTime", "completionTime", "lastScheduleTime")


@dataclass(frozen=True)
class Observed:
    """What the controller sees of one Benchmark."""

    cr: dict
    verdict: Verdict
    runner: dict | None = None  # the runner Job, or the CronJob of a schedule
    runner_gone: bool = False  # the runner the status names was deleted
    now: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Decision:
    """What to do."""

    create: tuple[dict, ...] = ()
    suspend_runner: bool | None = None  # set the runner's spec.suspend to this
    status: dict[str, Any] = field(default_factory=dict)  # the controller's fields of the status
    delete: bool = False  # the time to live after finishing is over
    requeue_after: float | None = None


def decide(seen: Observed) -> Decision:
    """The decision for one Benchmark."""
    cr, verdict = seen.cr, seen.verdict
    status, spec = cr.get("status") or {}, cr.get("spec") or {}
    wanted = {"Accepted": Want("True" if verdict.ok else "False", verdict.reason, verdict.message)}
    create: list[dict] = []
    if seen.runner is None and not status.get("runnerJob"):
        if not verdict.ok:
            wanted["Failed"] = Want("True" if verdict.reason != "SpecNotFound" else "False", verdict.reason, verdict.message)
        elif verdict.spec is not None:
            create = _children(cr, verdict)
    runner = seen.runner or (create[-1] if create else None)
    wanted.update(_runner_conditions(runner, seen.runner_gone, status, spec))
    wanted["Regressed"] = _regressed(status.get("gate"))
    wanted.setdefault("Complete", Want("False", "Pending" if runner is None else "Running"))
    wanted.setdefault("Failed", Want("False", "Pending" if runner is None else "Running"))
    generation = cr["metadata"].get("generation", 1)
    started = bool(runner and (runner.get("status") or {}).get("startTime") or (status.get("runs") or {}).get("running"))
    out = {"observedGeneration": generation, "conditions": merged(status.get("conditions") or [], wanted, generation, seen.now),
           "state": state(wanted, started, bool(spec.get("schedule")) and runner is not None)}
    out.update(_times(seen, runner, out["state"], status))
    delete, after = _ttl(spec, out, seen.now)
    suspend = _suspension(seen.runner, bool(spec.get("suspend")), out["state"])
    if verdict.reason == "SpecNotFound":
        after = 10.0  # the ConfigMap may come: look again (not only on the Benchmark's own changes)
    return Decision(tuple(create), suspend, out, delete, after)


def _children(cr: dict, verdict: Verdict) -> list[dict]:
    spec = verdict.spec
    assert spec is not None
    made = [children.spec_map(cr, spec)]
    made.append(children.cron_job(cr, spec) if spec.schedule is not None else children.runner_job(cr, spec))
    return [m for m in made if m is not None]


def _runner_conditions(runner: dict | None, gone: bool, status: dict, spec: dict) -> dict[str, Want]:
    """Complete, Failed and Suspended from the runner Job's own conditions."""
    if gone and not is_true(status.get("conditions") or [], "Complete"):
        message = f"the runner Job {status.get('runnerJob')} was deleted before it finished"
        return {"Failed": Want("True", "RunnerDeleted", message), "Complete": Want("False", "RunnerDeleted"),
                "Suspended": Want("False", "RunnerDeleted")}
    if gone:
        return {}
    job = (runner or {}).get("status") or {}
    found = {c.get("type"): c for c in job.get("conditions") or [] if c.get("status") == "True"}
    wanted = {"Suspended": Want("True", "Suspended", "spec.suspend: no new run starts") if found.get("Suspended")
              or (spec.get("suspend") and runner is not None) else Want("False", "Running" if runner else "Pending")}
    if runner is not None and runner.get("kind") == "CronJob":
        return wanted
    if "Complete" in found:
        runs = status.get("runs") or {}
        wanted["Complete"] = Want("True", "AllRunsSucceeded", f"{runs.get('succeeded', 0)} runs succeeded")
        wanted["Failed"] = Want("False", "AllRunsSucceeded")
    elif "Failed" in found:
        wanted["Failed"] = _failure(found["Failed"], status.get("runs") or {})
        wanted["Complete"] = Want("False", wanted["Failed"].reason)
    return wanted


def _failure(condition: dict, runs: dict) -> Want:
    """Why the runner Job failed: its exit code (a FailJob rule's message names it) says whether runs
    failed (1), the spec was refused (2) or the runner itself died (anything else, or no code)."""
    message = condition.get("message") or ""
    code = re.search(r"exit code (\d+)", message)
    if code and code.group(1) == "1":
        failed = sum(runs.get(k, 0) for k in ("failed", "timedOut", "cancelled"))
        return Want("True", "RunsFailed", f"{failed} of {runs.get('planned', '?')} runs did not succeed")
    if code and code.group(1) == "2":
        return Want("True", "InvalidSpec", f"the runner refused the spec (exit code 2): {message}")
    return Want("True", "RunnerFailed", f"{condition.get('reason', 'Failed')}: {message}".strip())


def _regressed(gate: dict | None) -> Want:
    verdict = (gate or {}).get("verdict")
    detail = (gate or {}).get("detail") or ""
    if verdict == "regressed":
        return Want("True", "SignificantRegression", detail)
    if verdict in ("unchanged", "improved"):
        return Want("False", "NoSignificantChange", detail)
    if verdict == "inconclusive":
        return Want("False", "Inconclusive", detail)
    if verdict in ("nothing-to-compare", "error"):
        return Want("Unknown", "NothingToCompare" if verdict != "error" else "GateError", detail)
    return Want("Unknown", "NotChecked", "no gate verdict yet" if gate is not None else "")


def _times(seen: Observed, runner: dict | None, current: str, status: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"runnerJob": (runner or {}).get("metadata", {}).get("name") or status.get("runnerJob")}
    job = (runner or {}).get("status") or {}
    out["startTime"] = status.get("startTime") or job.get("startTime") or (timestamp(seen.now) if runner else None)
    if current in ("Succeeded", "Failed"):
        out["completionTime"] = status.get("completionTime") or job.get("completionTime") or timestamp(seen.now)
    if job.get("lastScheduleTime"):
        out["lastScheduleTime"] = job["lastScheduleTime"]
    return {k: v for k, v in out.items() if v is not None}


def _ttl(spec: dict, out: dict, now: float) -> tuple[bool, float | None]:
    ttl, done = spec.get("ttlSecondsAfterFinished"), out.get("completionTime")
    if ttl is None or not done:
        return False, None
    left = calendar.timegm(time.strptime(done, "%Y-%m-%dT%H:%M:%SZ")) + int(ttl) - now
    return (True, None) if left <= 0 else (False, left)


def _suspension(runner: dict | None, suspend: bool, current: str) -> bool | None:
    if runner is None or current in ("Succeeded", "Failed"):
        return None
    return suspend if bool((runner.get("spec") or {}).get("suspend")) != suspend else None
