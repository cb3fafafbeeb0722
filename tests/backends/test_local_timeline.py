"""A local run's timeline: submitted, each replica's process spawned and seen ended, the workload's
marks and the logs collected; its phases add up to the run's wall time (issue #31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store
from kubebench.timeline import CHAIN

MARKED = ("import time, kubebench; kubebench.mark('imports_done'); time.sleep(0.3); kubebench.mark('rendezvous_done');"
          " kubebench.mark('first_step'); time.sleep(0.4); kubebench.mark('last_step'); kubebench.report(v=1)")
SPEC = f"""
name: local-timeline
job:
  kind: PyTorchJob
  workers: 2
  command: [python, -c, "{MARKED}"]
metrics: [{{name: v}}]
"""


def test_a_local_run_has_the_moments_that_apply_and_its_phases_add_up(home: Path, write) -> None:
    config = settings()
    store = open_store(config.store_url)
    execute(plan_experiment(load_spec(write("spec.yaml", SPEC)), config, "tl-1"), store)
    (run,) = store.runs("tl-1")
    assert run.status == "succeeded", run.reason
    timeline = store.timelines([run.run_id])[run.run_id]
    moments = {(b.name, b.replica, b.source) for b in timeline}
    for replica in ("master-0", "worker-0"):
        assert {("started", replica, "observed"), ("exited", replica, "observed"),
                ("rendezvous_done", replica, "workload"), ("last_step", replica, "workload")} <= moments
    assert {("submitted", "", "observed"), ("collected", "", "observed")} <= moments
    assert not {name for name, _, _ in moments} & {"admitted", "scheduled", "pulled", "deleted"}  # no cluster here
    m = run.metrics
    assert m["rendezvous_seconds"] == pytest.approx(0.3, abs=0.05) and m["train_seconds"] == pytest.approx(0.4, abs=0.05)
    chain = [metric for _, metric in CHAIN if metric in m]
    assert chain == ["container_start_seconds", "imports_seconds", "rendezvous_seconds", "init_seconds",
                     "train_seconds", "shutdown_seconds", "collect_seconds"]
    assert sum(m[k] for k in chain) == pytest.approx(m["end_to_end_seconds"], abs=1e-5)
    assert m["end_to_end_seconds"] == pytest.approx(run.duration_s, rel=0.05)
    written = json.loads((Path(run.path) / "timeline.json").read_text())
    assert len(written) == len(timeline)
