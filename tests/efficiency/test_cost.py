"""Prices, what a run held, its cost and per-item figures; the spec's prices: and reference: keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubebench.accounting import account, held_by, requested, steady_mfu
from kubebench.collect.cost import Held, cost_metrics, energy_per_item, hourly_rate
from kubebench.errors import SpecError
from kubebench.render.kinds import build_manifest
from kubebench.render.pods import JobShape, cpu_quantity
from kubebench.rules import default_goal
from kubebench.spec.efficiency import Prices, PriceTable, load_prices
from kubebench.spec.load import load_spec
from kubebench.store.records import ExperimentRecord, RunRecord, RunResult
from kubebench.web.queries import metric_list

TABLE = PriceTable(pricing="on-demand", device_hour={"H100": {"on-demand": 4.0, "spot": 1.5}, "A100": 2.0,
                                                     "H100 NVL": 3.0},
                   cpu_core_hour={"on-demand": 0.05, "spot": 0.02})


def test_the_rate_of_gpus_and_cores_under_a_pricing() -> None:
    rate = hourly_rate(TABLE, Held(2, 16, "NVIDIA H100 80GB HBM3", "as requested by the job"))
    assert rate.usd_per_hour == pytest.approx(2 * 4.0 + 16 * 0.05)
    assert rate.detail == "on-demand: 2 × H100 at $4/h + 16 CPU cores at $0.05/h (as requested by the job)"
    spot = TABLE.model_copy(update={"pricing": "spot"})
    assert hourly_rate(spot, Held(1, 0, "NVIDIA H100 80GB HBM3")).usd_per_hour == 1.5
    assert hourly_rate(spot, Held(1, 0, "NVIDIA H100 NVL")).usd_per_hour == 3.0  # longest key; a number: any pricing
    assert "no 'spot' price" not in hourly_rate(spot, Held(1, 0, "NVIDIA A100-SXM4-80GB")).detail


@pytest.mark.parametrize("held, why", [
    (Held(1, 0, "NVIDIA L4"), "no device_hour price for NVIDIA L4 (prices for: A100, H100, H100 NVL)"),
    (Held(0, 0), "the run held no priced resource"),
])
def test_what_cannot_be_priced_says_why(held: Held, why: str) -> None:
    rate = hourly_rate(TABLE, held)
    assert rate.usd_per_hour is None and rate.detail == why
    reserved = TABLE.model_copy(update={"pricing": "reserved"})
    assert "cpu_core_hour has no 'reserved' price (it has on-demand, spot)" in hourly_rate(reserved, Held(0, 4)).detail
    assert "no cpu_core_hour price" in hourly_rate(PriceTable(), Held(0, 4)).detail


def test_cost_and_price_per_item_at_the_measured_throughput() -> None:
    metrics = cost_metrics(36.0, 600, {"tokens_per_sec": 10_000.0, "images_per_sec": 2_000.0})
    assert metrics["cost_usd"] == pytest.approx(6.0)
    assert metrics["usd_per_million_tokens"] == pytest.approx(36 / 3600 / 10_000 * 1e6)  # $1 per million
    assert metrics["usd_per_thousand_images"] == pytest.approx(0.005)
    assert energy_per_item({"energy_joules": 6000.0, "tokens_per_sec": 100.0}, 60.0) == {"joules_per_token": 1.0}
    assert energy_per_item({"tokens_per_sec": 100.0}, 60.0) == {}  # no energy: no made-up figure


def test_resources_requested_by_each_kind_of_manifest() -> None:
    pytorch = {"kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {
        "Master": {"replicas": 1, "template": {"spec": {"containers": [
            {"resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "96"}}}]}}},
        "Worker": {"replicas": 3, "template": {"spec": {"containers": [
            {"resources": {"requests": {"nvidia.com/gpu": "8", "cpu": "500m"}}}]}}}}}}
    assert requested(pytorch) == (32, 97.5)
    trainjob = {"kind": "TrainJob", "spec": {"trainer": {"numNodes": 2, "resourcesPerNode": {
        "limits": {"nvidia.com/gpu": 4, "cpu": 32}}}}}
    assert requested(trainjob) == (8, 64.0)
    assert requested({"kind": "Process", "spec": {"replicas": 2, "template": {"spec": {"containers": [{}]}}}}) == (0, 0)
    assert cpu_quantity("250m") == 0.25 and cpu_quantity("x") == 0.0


def test_an_mpijob_holds_its_workers_gpus_and_what_its_pods_request() -> None:
    """H-A: the launcher runs no rank; the GPUs held are the workers' (2 × 8), and a request is what
    the scheduler and Kueue's quota count, whatever the limit."""
    shape = JobShape("MPIJob", 2, "img", ("python", "train.py"), (), (("gpu", "8"), ("cpu", "16")), processes=8)
    assert requested(build_manifest(shape, "kb-mpi", {}, 60)) == (16, 32.25)
    limited = {"kind": "Job", "spec": {"completions": 2, "template": {"spec": {"containers": [
        {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "8", "nvidia.com/gpu": "1"}}}]}}}}
    assert requested(limited) == (2, 4.0)


def test_a_local_run_that_requests_nothing_holds_the_machine() -> None:
    provenance = {"gpus": [{"model": "NVIDIA H100 80GB HBM3"}] * 2, "cpus_usable": 32}
    process = {"kind": "Process", "spec": {"replicas": 1, "template": {"spec": {"containers": [{}]}}}}
    held = held_by(process, provenance, machine_local=True)
    assert (held.gpus, held.cores, held.gpu_name) == (2, 32.0, "NVIDIA H100 80GB HBM3")
    assert held_by(process, provenance, machine_local=False) == Held(0, 0.0)  # a cluster's pods: not this machine


def test_account_adds_cost_and_energy_per_item_but_never_replaces_the_workload_s(write) -> None:
    spec = write("spec.yaml", """
        name: b
        job: {command: [x], resources: {cpu: 2}}
        prices: {cpu_core_hour: 0.5}
    """)
    loaded = load_spec(spec)
    manifest = {"kind": "Process", "spec": {"replicas": 2, "template": {"spec": {"containers": [
        {"resources": {"limits": {"cpu": 2}}}]}}}}
    result = RunResult(run_id="r", status="succeeded", finished_at=1.0,
                       metrics={"tokens_per_sec": 1000.0, "energy_joules": 3600.0, "joules_per_token": 0.5})
    done = account(loaded.spec, loaded.base_dir, manifest, result, 3600.0, machine_local=True)
    assert done.metrics["cost_usd"] == pytest.approx(2.0)  # 4 cores × 1 h × $0.5
    assert done.metrics["usd_per_million_tokens"] == pytest.approx(2.0 / 3600 / 1000 * 1e6)
    assert done.metrics["joules_per_token"] == 0.5  # the workload's own (its measured steps)
    assert done.info["cost_basis"] == "on-demand: 4 CPU cores at $0.5/h (as requested by the job)"
    failed = result.model_copy(update={"status": "failed"})
    assert account(loaded.spec, loaded.base_dir, manifest, failed, 3600.0, True) == failed


def test_steady_mfu_from_the_collector_s_steady_window() -> None:
    # Two devices at 400 tokens/s each, 1e9 FLOPs per token, 2 TFLOP/s peak: 800 steady tokens/s is 0.2.
    metrics = {"steady_items_per_sec": 800.0, "model_flops_per_token": 1e9, "peak_tflops_per_device": 2.0,
               "tokens_per_sec": 700.0, "tokens_per_sec_per_device": 350.0}
    assert steady_mfu(metrics) == {"steady_mfu": pytest.approx(0.2)}
    assert steady_mfu({**metrics, "peak_tflops_per_device": 0.0}) == {}  # no peak: no MFU
    assert steady_mfu({"steady_items_per_sec": 800.0}) == {}  # not an LLM workload's run


def test_prices_from_a_file_with_the_spec_s_rows_over_them(tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text("pricing: spot\ndevice_hour: {H100: {spot: 1.5}, A100: 1.0}\n"
                                          "cpu_core_hour: 0.01\n")
    table = load_prices(Prices(file="prices.yaml", device_hour={"A100": 0.9}), tmp_path)
    assert table.pricing == "spot" and table.device_hour == {"H100": {"spot": 1.5}, "A100": 0.9}
    assert table.cpu_core_hour == 0.01
    (tmp_path / "bad.yaml").write_text("device_hour: {H100: -1}\n")
    with pytest.raises(SpecError, match=r"bad.yaml: device_hour: .*a price must be a number of USD from 0 to 1e\+06, got -1"):
        load_prices(Prices(file="bad.yaml"), tmp_path)
    with pytest.raises(SpecError, match="missing.yaml: prices file not found"):
        load_prices(Prices(file="missing.yaml"), tmp_path)


def test_the_spec_takes_one_reference_or_several_and_checks_them(write) -> None:
    one = load_spec(write("a.yaml", """
        name: a
        job: {command: [x]}
        reference: {metric: images_per_sec, value: 2470, source: "NVIDIA DeepLearningExamples", where: {workers: 1}}
    """)).spec
    assert one.reference[0].value == 2470 and one.reference[0].min_ratio == 0.95
    with pytest.raises(SpecError, match="reference"):
        load_spec(write("b.yaml", """
            name: b
            job: {command: [x]}
            reference: [{metric: x, value: 0, source: s}]
        """))
    with pytest.raises(SpecError, match="source"):
        load_spec(write("c.yaml", "name: c\njob: {command: [x]}\nreference: {metric: x, value: 1}\n"))


def test_energy_and_cost_metrics_are_better_lower() -> None:
    for name in ("energy_joules", "energy_joules_measured", "gpu0_energy_joules", "joules_per_token", "cost_usd", "usd_per_million_tokens"):
        assert default_goal(name) == "minimize"
    for name in ("tokens_per_sec", "mfu", "images_per_sec"):
        assert default_goal(name) == "maximize"


def test_every_view_ranks_an_undeclared_energy_or_cost_metric_lower_is_better() -> None:
    record = ExperimentRecord(id="e", name="s", backend="local", source="s.yaml", job_fingerprint="f",
                              created_at=0.0, updated_at=0.0,
                              spec_text="metrics: [{name: tokens_per_sec}, {name: usd_per_million_tokens, goal: maximize}]")
    assert record.metric_goal("cost_usd") == ("cost_usd", "minimize")  # compare, scaling, the report
    assert record.metric_goal("usd_per_million_tokens")[1] == "maximize"  # a declared goal wins
    run = RunRecord(run_id="r", experiment_id="e", trial_id="t", repeat=0, warmup=False, status="succeeded", params={},
                    metrics={"tokens_per_sec": 1.0, "energy_joules": 2.0, "cpu_percent_mean": 50.0})
    goals = {m["name"]: m["goal"] for m in metric_list(record, [run])}  # the dashboard's metric list
    assert goals == {"tokens_per_sec": "maximize", "usd_per_million_tokens": "maximize",
                     "energy_joules": "minimize", "cpu_percent_mean": "maximize"}
