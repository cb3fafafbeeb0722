"""`kubebench run --backend kubernetes` end to end: a 2-worker PyTorchJob DDP benchmark (the real CNN
workload over gloo) through the official client, the API emulator and the operator stand-in, stored
exactly as the local backend stores it; and Ctrl-C on a runner process deleting the job in flight."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.timing import scaled, wait_for
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.timeline import PHASE_METRICS

SPEC = """
name: ddp-cnn
job:
  kind: PyTorchJob
  workers: 2
  image: kubebench-torch:0.1.0
  command: [python, -m, kubebench.workloads.cnn, --steps, "4", --warmup-steps, "1", --batch-size, "{{ batch_size }}"]
  resources: {cpu: 1, memory: 2Gi}
parameters:
  batch_size: [4]
timeout: 3m
metrics:
  - {name: images_per_sec, unit: images/s, primary: true}
postprocess:
  - {kind: regex, file: master-0.log, pattern: 'images/sec: (?P<images_per_sec>[0-9.]+)'}
backend: local
"""


def invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))


#: Telemetry sampled from local processes (kubebench.monitor); on a cluster it comes from Prometheus
#: when one is configured, which the emulated cluster has not.
PROCESS_TELEMETRY = re.compile(r"^(cpu_percent_|memory_peak_bytes$|system_cpu_percent_|gpu\d*_)")


def shape(record: dict) -> dict:
    """What must be alike whichever backend ran the run: keys, states, metric and parameter names."""
    metrics = sorted(m for m in record["metrics"] if not PROCESS_TELEMETRY.match(m) and m not in PHASE_METRICS)
    return {"keys": sorted(record), "status": record["status"], "metrics": metrics,
            "params": record["params"], "exit_code": record["exit_code"], "reason": record["reason"]}


@pytest.mark.slow
def test_ddp_pytorchjob_end_to_end_stores_what_the_local_backend_stores(cluster: Cluster, tmp_path: Path) -> None:
    spec = tmp_path / "benchmark.yaml"
    spec.write_text(SPEC.lstrip())
    on_k8s = invoke("run", str(spec), "--backend", "kubernetes", "--id", "ddp-k8s")
    assert on_k8s.exit_code == 0, on_k8s.output
    local = invoke("run", str(spec), "--id", "ddp-local")
    assert local.exit_code == 0, local.output

    k8s_runs = json.loads(invoke("results", "ddp-k8s", "--format", "json").output)
    local_runs = json.loads(invoke("results", "ddp-local", "--format", "json").output)
    assert [shape(r) for r in k8s_runs] == [shape(r) for r in local_runs]
    (run,) = k8s_runs
    # the phases line up: a local run has those that apply, the cluster's adds its own
    local_phases = {m for m in local_runs[0]["metrics"] if m in PHASE_METRICS}
    assert {"imports_seconds", "rendezvous_seconds", "init_seconds", "train_seconds"} <= local_phases
    assert local_phases | {"operator_seconds", "scheduling_seconds", "image_pull_seconds", "teardown_seconds"} == {
        m for m in run["metrics"] if m in PHASE_METRICS}
    assert run["status"] == "succeeded" and run["metrics"]["images_per_sec"] > 0
    assert set(run["metrics"]) >= {"images_per_sec", "step_time_p50"}

    k8s_dir = cluster.home / "experiments" / "ddp-k8s" / run["run_id"]
    local_dir = cluster.home / "experiments" / "ddp-local" / local_runs[0]["run_id"]
    files = lambda d: sorted(str(p.relative_to(d)) for p in d.rglob("*") if p.is_file())  # noqa: E731
    # the operator's own container (the worker's init-pytorch) is kept beside the replicas' logs
    operators = [f for f in files(k8s_dir) if f.startswith("output/pods/") and f.endswith(".init-pytorch.0.log")]
    assert len(operators) == 1 and sorted(set(files(k8s_dir)) - set(operators)) == files(local_dir)
    assert {"output/master-0.log", "output/worker-0.log", "output/step_times.json", "config/manifest.yaml"} <= set(files(k8s_dir))
    assert "world_size=2" in (k8s_dir / "output" / "master-0.log").read_text()  # DDP over the two pods
    manifest = (k8s_dir / "config" / "manifest.yaml").read_text()
    assert "claimName: kubebench" in manifest and "mountPath: /kubebench" in manifest

    shown = invoke("show", "ddp-k8s")
    assert shown.exit_code == 0 and "1 succeeded" in shown.output
    calls = cluster.api
    assert calls.count("POST", "pytorchjobs") == 1 and calls.count("DELETE", "pytorchjobs") == 1
    assert calls.count("POST", "configmaps") == 1 and calls.count("DELETE", "configmaps") == 1  # the spec's folder
    assert calls.count("GET", "/log") == 3  # a stream per container: two replicas and the worker's init-pytorch
    assert calls.store.list(("kubeflow.org", "v1", "pytorchjobs"), cluster.namespace)[0] == []


@pytest.mark.slow
def test_ctrl_c_on_the_runner_deletes_the_job_in_flight(cluster: Cluster, tmp_path: Path) -> None:
    spec = tmp_path / "long.yaml"
    spec.write_text("name: long\njob:\n  kind: PyTorchJob\n  workers: 2\n"
                    "  command: [python, -c, \"import time; time.sleep(120)\"]\nbackend: {kind: kubernetes}\n")
    runner = subprocess.Popen([sys.executable, "-m", "kubebench", "run", str(spec), "--id", "long-k8s"],
                              env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + scaled(60)
        while not any(p.poll() is None for p in cluster.operator.processes()) or len(cluster.operator.processes()) < 2:
            assert time.monotonic() < deadline and runner.poll() is None, runner.communicate()
            time.sleep(0.05)
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 130, out + err
    assert "resume with:" in err and " --id long-k8s\n" in err and "Traceback" not in err
    assert cluster.api.store.list(("kubeflow.org", "v1", "pytorchjobs"), cluster.namespace)[0] == []
    assert [r for r in cluster.api.requests if r.method == "DELETE"][0].code == 200
    # the stand-in sees the deletion and stops the replicas
    wait_for(lambda: all(p.poll() is not None for p in cluster.operator.processes()), 30, "the replicas to stop")
    listing = invoke("results", "long-k8s", "--format", "json")
    assert listing.exit_code == 0, listing.output
    runs = json.loads(listing.output)
    assert [(r["status"], r["reason"]) for r in runs] == [("cancelled", "cancelled by the user")]
