"""A store for the dashboard's UI tests: the shared web home's real experiments (copied), plus
experiments in the states the review found drawn wrong, recorded through the Store API (no processes):
n=1 trials, partial, running from a CLI elsewhere, everything failed, mostly cancelled."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

N1 = "ui-n1-1"  # repeats: 1, a description, three trials of one value each
PARTIAL = "ui-partial-1"  # one trial succeeded, one failed: "partial"
CLI_RUNNING = "ui-cli-1"  # runs in flight, started by a `kubebench run` (not by the server)
ALL_FAILED = "ui-failed-1"  # no value at all: empty plots
CANCELLED = "ui-cancelled-1"  # 2 of 12 ran, 10 cancelled

SPEC = """\
name: {name}
description: {description}
job:
  command: [python, -c, "print(1)"]
parameters:
  size: {sizes}
repeats: {repeats}
metrics:
  - {{name: throughput, unit: items/s, primary: true}}
  - {{name: latency, unit: ms, goal: minimize}}
"""


@dataclass(frozen=True)
class UiHome:
    home: Path
    settings: object
    baseline: str
    candidate: str
    failed: str

    def store(self):
        from kubebench.store.store import open_store

        return open_store(self.settings.store_url)


def build(web_home, folder: Path) -> UiHome:
    """A copy of ``web_home``'s store (its runs' folders stay where they are) plus the experiments above."""
    from kubebench.settings import settings as make_settings

    home = folder / "home"
    home.mkdir(parents=True)
    # SQLite's backup API: a consistent copy, with what is still in the write-ahead log
    with sqlite3.connect(web_home.home / "kubebench.db") as source, sqlite3.connect(home / "kubebench.db") as copy:
        source.backup(copy)
    # the copied runs' folders are in web_home's experiments root: the dashboard serves them as the storage it
    # is given (it serves no folder a row names outside its roots, review 2026-12-02 N1)
    config = make_settings(home=home, store=f"sqlite:///{home / 'kubebench.db'}",
                           storage=str(web_home.home / "experiments"))
    ui = UiHome(home, config, web_home.baseline, web_home.candidate, web_home.failed)
    store = ui.store()
    ok = lambda size, repeat: {"throughput": 100.0 * size + repeat, "latency": 10.0 / size}  # noqa: E731
    _record(store, N1, "ui-n1", "One repeat per size: no CI to draw.", [1, 2, 4], 1,
            lambda size, repeat: ("succeeded", ok(size, repeat)))
    _record(store, PARTIAL, "ui-partial", "", [1, 2], 2,
            lambda size, repeat: ("succeeded", ok(size, repeat)) if size == 1 else ("failed", {}))
    _record(store, CLI_RUNNING, "ui-cli", "", [1, 2], 2, lambda size, repeat: ("running", {}))
    _record(store, ALL_FAILED, "ui-failed", "", [1, 2], 2, lambda size, repeat: ("failed", {}))
    _record(store, CANCELLED, "ui-cancelled", "", [1, 2, 3], 4,
            lambda size, repeat: ("succeeded", ok(size, repeat)) if repeat == 0 and size < 3 else ("cancelled", {}))
    store.engine.dispose()
    return ui


def _record(store, exp_id: str, name: str, description: str, sizes: list[int], repeats: int, outcome) -> None:
    """An experiment whose run of (size, repeat) ends as ``outcome(size, repeat)`` → (status, metrics)."""
    from kubebench.plan.plan import make_plan
    from kubebench.spec.model import BenchmarkSpec
    from kubebench.store.records import ExperimentRecord, RunResult

    text = SPEC.format(name=name, description=json.dumps(description), sizes=sizes, repeats=repeats)
    plan = make_plan(BenchmarkSpec.model_validate(yaml.safe_load(text)), exp_id, "f1")
    now = time.time()
    store.begin_experiment(ExperimentRecord(id=exp_id, name=name, backend="local", source=f"{name}.yaml",
                                            spec_text=text, job_fingerprint="f1", created_at=now,
                                            updated_at=now), plan)
    ended = []
    for run in plan.runs:
        status, metrics = outcome(run.trial.params["size"], run.repeat)
        if status != "cancelled":  # most cancelled runs never started
            store.start_run(run.id, "")
        if status != "running":
            reason = {"failed": "worker-0 exited with code 1", "cancelled": "cancelled"}.get(status, "")
            ended.append(RunResult(run_id=run.id, status=status, metrics=metrics, reason=reason,
                                   exit_code=1 if status == "failed" else 0 if status == "succeeded" else None,
                                   finished_at=time.time()))
    store.finish_runs(ended)
