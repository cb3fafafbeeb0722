"""Cost and energy per item cover the time the workload ran (review H-D): of two runs behind a Kueue
queue of one, the second waits for the first, and its ``cost_usd`` and ``joules_per_image`` are the
first's, not twice and half of them (the window was submit → end of wait before)."""

from __future__ import annotations

import pytest
from support.cluster.cluster import Cluster

# A workload that runs 1.5 s, reports a throughput and the energy it measured itself.
WORK = "import time, kubebench; time.sleep(1.5); kubebench.report(images_per_sec=100, energy_joules=300)"
SPEC = f"""
name: windows
job:
  kind: Job
  workers: 1
  command: [python, -c, "{WORK}"]
  resources: {{cpu: 2}}
repeats: 2
parallelism: 2
prices: {{cpu_core_hour: 3.6}}
backend: {{kind: kubernetes, queue: research, unschedulable_grace: 60s}}
metrics: [{{name: images_per_sec}}]
timeout: 60s
"""


@pytest.mark.cluster(kueue=1)
def test_a_queued_run_costs_what_the_first_did(cluster: Cluster, run_spec) -> None:
    first, second = sorted(run_spec(SPEC).runs, key=lambda r: r.metrics.get("queue_seconds", 0.0))
    assert (first.status, second.status) == ("succeeded", "succeeded"), (first.reason, second.reason)
    assert second.metrics["queue_seconds"] > 1.0  # it waited for the first to finish
    for name in ("cost_usd", "joules_per_image"):
        assert second.metrics[name] == pytest.approx(first.metrics[name], rel=0.15), name
    # 2 cores at $3.6 per core-hour over ~1.5 s of work: ~0.003 USD, not the queue's time too
    assert first.metrics["cost_usd"] == pytest.approx(2 * 3.6 * 1.5 / 3600, rel=0.25)
