"""A run's timeline on the cluster: with the stand-in's scheduling, image pull and container start
delays and a workload's own rendezvous time all known, the phases kubebench reports come back
(review MED-8 residue, issue #31); they follow one another and add up to the run's end-to-end time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster

from kubebench.timeline import CHAIN, Boundary, phases

#: A workload with a known rendezvous (it sleeps) and a short train.
MARKED = ("import time, kubebench; kubebench.mark('imports_done'); time.sleep({rendezvous}); "
          "kubebench.mark('rendezvous_done'); kubebench.mark('first_step'); time.sleep(0.2); "
          "kubebench.mark('last_step'); kubebench.report(v=1)")
SPEC = """
name: phases
job:
  kind: PyTorchJob
  workers: 2
  image: {image}
  command: [python, -c, "{code}"]
  resources: {{cpu: 1}}
backend: {{kind: kubernetes, unschedulable_grace: 30s}}
metrics: [{{name: v}}]
timeout: 60s
"""


def marked(rendezvous: float, image: str = "bench/marked:1") -> str:
    return SPEC.format(image=image, code=MARKED.format(rendezvous=rendezvous))


def within(found: float, expected: float) -> bool:
    """Recovered within 50 ms or 5%, whichever is larger (the issue's bound)."""
    return abs(found - expected) <= max(0.05, 0.05 * expected)


def test_injected_delays_come_back_as_phases(cluster: Cluster, run_spec) -> None:
    delays = cluster.operator.kubelet.delays
    delays.schedule, delays.pull, delays.start = 0.6, 0.8, 0.4
    # a TFJob: a PyTorchJob's workers also wait in init-pytorch for their master, which starts them later
    (run,) = run_spec(marked(rendezvous=0.5).replace("kind: PyTorchJob", "kind: TFJob")).runs
    assert run.status == "succeeded", run.reason
    m = run.metrics
    expected = {"scheduling_seconds": 0.6, "image_pull_seconds": 0.8, "container_start_seconds": 0.4,
                "rendezvous_seconds": 0.5}
    assert all(within(m[k], v) for k, v in expected.items()), {k: m[k] for k in expected}
    chain = [metric for _, metric in CHAIN if metric in m]
    assert chain[:6] == ["operator_seconds", "scheduling_seconds", "image_pull_seconds", "container_start_seconds",
                         "imports_seconds", "rendezvous_seconds"]
    assert sum(m[k] for k in chain) == pytest.approx(m["end_to_end_seconds"], abs=1e-5)
    assert all(m[k] >= 0 for k in chain) and 0 < m["overhead_fraction"] < 1


def test_the_timeline_says_where_each_moment_came_from(cluster: Cluster, run_spec) -> None:
    cluster.operator.kubelet.delays.pull = 0.3
    ran = run_spec(marked(rendezvous=0.0, image="bench/marked:2"))
    (run,) = ran.runs
    stored = ran.store.timelines([run.run_id])[run.run_id]
    written = [Boundary.of(b) for b in json.loads((Path(run.path) / "timeline.json").read_text())]
    assert sorted(stored, key=lambda b: (b.t, b.name)) == sorted(written, key=lambda b: (b.t, b.name))
    origins = {(b.name, b.replica): set() for b in stored}
    for b in stored:
        origins[(b.name, b.replica)].add((b.source, b.origin.split(" (")[0], b.precision))
    master = "master-0"
    # the scheduler's event in microseconds, the kubelet's events to the nanosecond of their name,
    # the pod's own fields in whole seconds, the watch's observations, the workload's marks
    assert ("server", "Scheduled event eventTime", 1e-6) in origins[("scheduled", master)]
    assert ("server", "PodScheduled lastTransitionTime", 1.0) in origins[("scheduled", master)]
    assert ("observed", "watch", 1e-6) in origins[("scheduled", master)]
    assert ("server", "Pulled event name", 1e-9) in origins[("pulled", master)]
    assert ("server", "Started event name", 1e-9) in origins[("started", master)]
    assert ("server", "containerStatuses startedAt", 1.0) in origins[("started", master)]
    assert ("workload", "KUBEBENCH_MARK", 1e-6) in origins[("rendezvous_done", master)]
    assert {("observed", "create call", 1e-6)} == origins[("submitted", "")]
    pulled = next(b for b in stored if b.name == "pulled" and b.replica == master and b.origin.startswith("Pulled"))
    assert "s pulling," in pulled.origin  # the message's duration, read: not a cache hit
    assert phases(stored) == {k: v for k, v in run.metrics.items() if k in phases(stored)}


def test_a_cached_image_is_pulled_in_no_time(cluster: Cluster, run_spec) -> None:
    cluster.operator.kubelet.delays.pull = 1.0
    cluster.operator.kubelet.images["node-1"] = {"bench/marked:3"}  # already on the node
    (run,) = run_spec(marked(rendezvous=0.0, image="bench/marked:3")).runs
    assert run.status == "succeeded", run.reason
    assert run.metrics["image_pull_seconds"] < 0.05
