"""kubebench.rules: each rule defined once and applied alike by collect, render, the store's records and the web."""

from __future__ import annotations

from pathlib import Path

from kubebench import rules
from kubebench.collect.metrics import replica_logs
from kubebench.render.kinds import replica_groups
from kubebench.store.records import ExperimentRecord


def test_replica_rank_order_is_the_same_for_logs_and_manifests(tmp_path: Path) -> None:
    for name in ("worker-1", "evaluator-0", "ps-0", "worker-0", "chief-0", "node-0", "launcher-0", "master-0"):
        (tmp_path / f"{name}.log").write_text("")
    assert [p.stem for p in replica_logs(tmp_path)] == ["master-0", "chief-0", "launcher-0", "worker-0", "worker-1",
                                                        "node-0", "ps-0", "evaluator-0"]
    specs = {t: {"replicas": 1, "template": {}} for t in ("Evaluator", "PS", "Worker", "Chief")}
    groups = replica_groups({"kind": "TFJob", "spec": {"tfReplicaSpecs": specs}})
    assert [g.type for g in groups] == ["chief", "worker", "ps", "evaluator"]
    assert sorted(["Worker", "Master"], key=rules.replica_rank) == ["Master", "Worker"]


def test_primary_metric_and_goal_defaults() -> None:
    spec = "name: x\nmetrics:\n  - {name: a}\n  - {name: b, goal: minimize, primary: true}\n"
    record = ExperimentRecord(id="x", name="x", backend="local", source="s", spec_text=spec, job_fingerprint="f",
                              created_at=0.0, updated_at=0.0)
    assert record.primary_metric() == "b" and record.metric_goal(None) == ("b", "minimize")
    assert record.metric_goal("a") == ("a", rules.DEFAULT_GOAL) == ("a", "maximize")
    assert record.metric_goal("undeclared") == ("undeclared", "maximize")
    assert rules.primary_metric([{"name": "first"}, {"name": "second"}]) == "first"
    assert rules.primary_metric([]) is None


def test_worker_thread_and_telemetry_names() -> None:
    assert rules.worker_parameters(["batch_size", "workers", "num_gpus", "nodes", "lr"]) == ["workers", "num_gpus", "nodes"]
    assert rules.thread_parameter(["batch_size", "threads"]) == "threads"
    assert rules.thread_parameter(["omp_num_threads"]) == "omp_num_threads" and rules.thread_parameter(["x"]) is None
    assert rules.is_telemetry("gpu0_utilization_mean") and not rules.is_telemetry("peak_memory_bytes")
