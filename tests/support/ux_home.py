"""Experiments as the 2026-12-02 UX review made them, recorded through the Store API (no processes):
a serving sweep with four fixed parameters and the post-processor's SLO, a labelled nightly series
with a −9.4% step at 1.3 on one of two trials of very different levels, and an inference sweep with
many fixed parameters and six declared metrics (the 80-column ``results`` of finding 4).

The web and CLI tests and ``bench/ux_shots.py`` (the before/after screenshots) share them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import yaml

SERVING = "ux-serving-1"
CNN = "ux-cnn-1"
INFERENCE = "ux-inference-1"
NIGHTLY = [f"nightly-1{i}" for i in range(6)]  # versions 1.0 … 1.5; the step is at 1.3

SERVING_SPEC = """\
name: llm-serving
description: Latency, throughput and goodput of an OpenAI-compatible server against the request rate.
job:
  kind: Serving
  command: [python, -m, kubebench.workloads.llm_load, --rate, "{{ rate }}"]
  server: {command: [python, -m, kubebench.workloads.llm_server]}
parameters:
  rate: [2, 6, 18]
  max_batch: 8
  duration: 4
  input_tokens: 32
  output_tokens: 32
postprocess:
  - {kind: llm-requests, slo: "ttft=1s,tpot=100ms"}
metrics:
  - {name: ttft_p99, unit: s, goal: minimize, primary: true}
  - {name: tpot_p99, unit: s, goal: minimize}
  - {name: output_tokens_per_s, unit: tokens/s, goal: maximize}
  - {name: goodput, unit: requests/s, goal: maximize}
"""

INFERENCE_SPEC = """\
name: inference
job: {command: [python, -m, kubebench.workloads.inference]}
parameters:
  model: small
  scenario: all
  image_size: 32
  batch_size: 32
  min_queries: 100
  latency_bound: 0.015
  threads: 1
  target_qps: [80, 400]
repeats: 2
metrics:
  - {name: latency_p90, unit: s, goal: minimize, primary: true}
  - {name: latency_p99, unit: s, goal: minimize}
  - {name: samples_per_sec, unit: samples/s, goal: maximize}
  - {name: server_achieved_qps, unit: queries/s, goal: maximize}
  - {name: server_latency_p99, unit: s, goal: minimize}
  - {name: server_valid, goal: maximize}
"""

FAILING_SPEC = """\
name: crashes
job: {command: [python, -c, "import sys; sys.exit({{ n }} - 1)"]}
parameters: {n: [1, 2], model: small}
metrics: [{name: v}]
"""

CNN_SPEC = """\
name: pytorch-cnn
job: {command: [python, -m, kubebench.workloads.cnn]}
parameters:
  workers: [1, 2]
  batch_size: [16, 32]
  threads: 1
  steps: 10
repeats: 2
metrics:
  - {name: images_per_sec, unit: images/s, goal: maximize, primary: true}
  - {name: step_time_p50, unit: s, goal: minimize}
"""

NIGHTLY_SPEC = """\
name: nightly
job: {{command: [python, bench.py]}}
parameters:
  n: [20000, 80000]
  slow: {slow}
repeats: 3
metrics:
  - {{name: ops_per_sec, unit: ops/s, goal: maximize, primary: true}}
  - {{name: latency_p50, unit: s, goal: minimize}}
"""

Outcome = Callable[[dict, int], tuple]


def record(store, exp_id: str, spec_text: str, outcome: Outcome, *, created_at: float | None = None,
           labels: dict[str, str] | None = None, source: str = "", folder=None) -> None:
    """An experiment of ``spec_text`` whose run of (params, repeat) ends as ``outcome`` → (status, metrics)
    or (status, metrics, log, info); a run left ``pending`` is never started, one ``running`` never ends. With ``folder``, each run
    gets a folder there (``output/`` made) as its path."""
    from kubebench.plan.plan import make_plan
    from kubebench.spec.model import BenchmarkSpec
    from kubebench.store.records import ExperimentRecord, RunResult

    data = yaml.safe_load(spec_text)
    plan = make_plan(BenchmarkSpec.model_validate(data), exp_id, "f1")
    now = created_at if created_at is not None else time.time()
    store.begin_experiment(ExperimentRecord(
        id=exp_id, name=data["name"], backend="local", source=source or f"examples/{data['name']}/benchmark.yaml",
        spec_text=spec_text, job_fingerprint="f1", created_at=now, updated_at=now, series=data["name"],
        labels=labels or {}), plan)
    results = []
    for run in plan.runs:
        found = outcome(run.trial.params, run.repeat)
        status, metrics, log, info = (*found, *("", {})[len(found) - 2:])
        if status == "pending":
            continue
        path = ""
        if folder is not None:
            (folder / run.id / "output").mkdir(parents=True, exist_ok=True)
            path = str(folder / run.id)
        store.start_run(run.id, path)
        if status == "running":
            continue
        reason = {"succeeded": "", "cancelled": "cancelled by the user"}.get(status, "worker-0 exited with code 1")
        results.append(RunResult(run_id=run.id, status=status, metrics=metrics, finished_at=now, reason=reason,
                                 exit_code={"succeeded": 0, "cancelled": None}.get(status, 1), log_tail=log, info=info))
    store.finish_runs(results)


def _serving(params: dict, repeat: int) -> tuple[str, dict[str, float]]:
    rate = params["rate"]
    load = min(1.0, rate / 16)
    ttft = 0.0108 * (1 + 9 * load ** 3)
    return "succeeded", {
        "ttft_p50": ttft * 0.8, "ttft_p99": ttft, "tpot_p50": 0.0021 * (1 + 2 * load), "tpot_p99": 0.0025 * (1 + 3 * load),
        "itl_p99": 0.004 * (1 + 2 * load), "e2e_p99": 0.09 * (1 + 4 * load), "goodput": min(rate, 15.5),
        "request_throughput": min(rate, 16.0), "output_tokens_per_s": 32 * min(rate, 16.0),
        "output_tokens_per_s_per_user": 480 - 80 * load, "requests_measured": 4.0 * rate, "error_rate": 0.0,
        "arrival_ks_pvalue": 0.61, "client_lag_max": 0.004}


def _inference(params: dict, repeat: int) -> tuple[str, dict[str, float]]:
    qps = params["target_qps"]
    slow = 1.0 if qps < 100 else 0.51
    return "succeeded", {
        "latency_p90": 0.000936 * slow * (1 + 0.07 * repeat), "latency_p99": 0.00398 * slow * (1 + 0.05 * repeat),
        "samples_per_sec": 5780.0 / slow, "server_achieved_qps": qps * 0.99, "server_latency_p99": 0.0041 * slow,
        "server_valid": 1.0, "latency_p50": 0.0007 * slow, "server_latency_p50": 0.0009 * slow,
        "server_scheduled_qps": float(qps), "server_target_qps": float(qps), "cpu_percent_max": 97.0,
        "memory_peak_bytes": 691929088.0}


def _cnn(params: dict, repeat: int) -> tuple[str, dict[str, float]]:
    if params["workers"] == 1 and params["batch_size"] == 16:  # an erratic trial: its CI reaches below 0
        rate = (487.0, 6401.0)[repeat]
    else:
        rate = 1000.0 * params["workers"] * (1 + params["batch_size"] / 160) * (1 + 0.01 * repeat)
    return "succeeded", {"images_per_sec": rate, "step_time_p50": params["batch_size"] / rate}


def build(store, now: float | None = None) -> None:
    """Record the serving, inference and CNN sweeps and the nightly series into ``store``."""
    now = now if now is not None else time.time()
    record(store, CNN, CNN_SPEC, _cnn, created_at=now - 500)
    record(store, SERVING, SERVING_SPEC, _serving, created_at=now - 400)
    record(store, INFERENCE, INFERENCE_SPEC, _inference, created_at=now - 300)
    nightly_series(store, now - 200)


def nightly_series(store, start: float, name: str = "nightly") -> list[str]:
    """The nightly series (versions 1.0 … 1.5, a −9.1% step of n=20000 at 1.3), as ``name``; its ids."""
    ids = NIGHTLY if name == "nightly" else [f"{name}-1{i}" for i in range(6)]
    for i, exp_id in enumerate(ids):
        slow = 1.0 if i < 3 else 1.1
        wobble = (1, -1, 0.5, -0.5, 1, 0)[i] * 0.0005

        def nightly(params: dict, repeat: int, slow=slow, wobble=wobble) -> tuple[str, dict[str, float]]:
            level = (3.4e6 if params["n"] == 20000 else 1.0e6) * (1 + wobble + 0.002 * (repeat - 1))
            level /= slow if params["n"] == 20000 else 1.0
            return "succeeded", {"ops_per_sec": level, "latency_p50": 1 / level * 2e4}

        record(store, exp_id, NIGHTLY_SPEC.format(slow=slow).replace("name: nightly", f"name: {name}"), nightly,
               created_at=start + 20 * i, labels={"version": f"1.{i}", "commit": f"c1{i}"}, source="nightly.yaml")
    return ids


CAPACITY_SPEC = """name: web-serving
job: {kind: Serving, command: [x], server: {command: [y]}}
parameters: {batch: [4, 8]}
search: {parameter: rate, low: 1, high: 16, min: 1, max: 1, slo: {ttft_p99: 1s}}
metrics: [{name: ttft_p99, goal: minimize}, {name: output_tokens_per_s}]
"""


def _search():
    from kubebench.spec.model import CapacitySearch

    return CapacitySearch(parameter="rate", low=1, high=16, min=1, max=1, slo={"ttft_p99": 1})


def capacity_store(folder):
    """A store holding the finished capacity search of a server saturating past 4 (batch 4) or 8 requests/s."""
    from kubebench.capacity.search import Probe, walk
    from kubebench.plan.plan import Plan, Trial, make_run
    from kubebench.store.records import ExperimentRecord, RunResult
    from kubebench.store.store import open_store

    store = open_store(f"sqlite:///{folder / 'kubebench.db'}")
    now = time.time()
    record = ExperimentRecord(id="web-serving-1", name="web-serving", backend="local", source="s.yaml",
                              spec_text=CAPACITY_SPEC, job_fingerprint="f", created_at=now, updated_at=now)
    results, trials, runs = [], [], []
    for batch in (4, 8):
        probes: dict[float, Probe] = {}
        while (x := walk(_search(), probes)[0]) is not None:
            ttft = 0.2 if x <= batch else 3.0
            probes[x] = Probe(x, {"ttft_p99": [ttft]}, 1)
            trial = Trial(f"t{batch}-{len(probes)}", len(trials), {"batch": batch, "rate": x})
            trials.append(trial)
            runs.append(make_run(trial, 0))
            metrics = {"ttft_p50": ttft / 2, "ttft_p99": ttft, "tpot_p99": 0.05, "goodput": min(x, batch),
                       "request_throughput": min(x, batch), "output_tokens_per_s": 30 * min(x, batch),
                       "output_tokens_per_s_per_user": 100 / x}
            results.append(RunResult(run_id=runs[-1].id, status="succeeded", metrics=metrics, finished_at=now))
    store.begin_experiment(record, Plan(record.id, "f", tuple(trials), tuple(runs)))
    for run in runs:
        store.start_run(run.id, "")
    store.finish_runs(results)
    return store
