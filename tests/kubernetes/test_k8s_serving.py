"""``kind: Serving`` on the Kubernetes backend, against the emulator and the stand-in: the server's
Service and Deployment, readiness through the probes, the load generator's Job reaching the server
through the Service's name, every log copied, all three objects deleted; and how it fails."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster
from support.timing import scaled, wait_for
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.settings import settings
from kubebench.store.store import open_store

DEPLOYMENTS, SERVICES, JOBS = ("apps", "v1", "deployments"), ("", "v1", "services"), ("batch", "v1", "jobs")

SPEC = """
name: serving-k8s
job:
  kind: Serving
  workers: 1
  image: kubebench:0.1.0
  command: [python, -m, kubebench.workloads.llm_load, --rate, "4", --duration, "{duration}", --output-tokens, "4",
            --input-tokens, "8", --max-lag, "10", --scrape-interval, "0.5"]
  server:
    image: kubebench:0.1.0
    command: {server}
    replicas: {replicas}
    port: 8000
    readiness: {readiness}
    startup_timeout: {startup}
telemetry: {{enabled: false}}
timeout: 2m
retries: 1
metrics: [{{name: ttft_p50, goal: minimize, primary: true}}, {{name: request_throughput}}]
backend: {backend}
"""


#: kubebench's reference server, tiny (it binds $KUBEBENCH_SERVER_HOST, 0.0.0.0 in a pod).
REFERENCE = ('[python, -m, kubebench.workloads.llm_server, --port, "$(KUBEBENCH_SERVER_PORT)", --layers, "1", '
             '--dim, "32", --heads, "2", --vocab, "256", --max-seq, "64", --max-batch, "4"]')
#: A server of known behaviour that starts in a fraction of a second.
FAKE = '[python, -m, kubebench.testing.llm_fake, --host, "$(KUBEBENCH_SERVER_HOST)", --port, "$(KUBEBENCH_SERVER_PORT)"]'


def write(tmp_path: Path, server: str = REFERENCE, duration: str = "3", replicas: int = 1, readiness: str = "/health",
          startup: str = "60s", backend: str = "{kind: kubernetes, unschedulable_grace: 30s}") -> Path:
    path = tmp_path / "serving.yaml"
    path.write_text(SPEC.format(server=server, duration=duration, replicas=replicas, readiness=readiness,
                                startup=startup, backend=backend).lstrip())
    return path


def invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))


def runs(experiment: str, ran) -> list[dict]:
    assert ran.exit_code in (0, 1), ran.output  # the runs were made (1: one failed)
    listing = invoke("results", experiment, "--format", "json")
    assert listing.exit_code == 0, listing.output
    return json.loads(listing.output)


def calls(cluster: Cluster) -> dict[str, int]:
    """The emulator's requests by what they were for (watches and lists by resource)."""
    found: dict[str, int] = {}
    for r in list(cluster.api.requests):
        resource = r.path.rstrip("/").split("/")[-1]
        if r.watch or r.method == "GET" and resource in ("deployments", "jobs", "pods", "services", "events"):
            what = f"{'watch' if r.watch else 'list'} {resource}"
        elif r.path.endswith("/log"):
            what = "follow log" if r.query.get("follow") == "true" else "read log"
        else:
            what = {"POST": "create", "DELETE": "delete"}.get(r.method, "get")
        found[what] = found.get(what, 0) + 1
    return found


def left(cluster: Cluster) -> dict[str, list[str]]:
    """The Deployments, Services and Jobs still in the namespace (by name)."""
    return {key[2]: [o["metadata"]["name"] for o in cluster.api.store.list(key, cluster.namespace)[0]]
            for key in (DEPLOYMENTS, SERVICES, JOBS)}


@pytest.mark.slow
def test_a_serving_run_measures_the_reference_server_through_its_service(cluster: Cluster, tmp_path: Path) -> None:
    ran = invoke("run", str(write(tmp_path)), "--backend", "kubernetes", "--id", "serving-k8s")
    (run,) = runs("serving-k8s", ran)
    assert ran.exit_code == 0 and run["status"] == "succeeded", (ran.output, run["reason"], run.get("log_tail"))
    # the load generator's own metric names, as the local backend stores them
    assert run["metrics"]["ttft_p50"] > 0 and run["metrics"]["request_throughput"] > 0
    assert {"ttft_p99", "tpot_p50", "e2e_p50", "output_tokens_per_s", "error_rate", "client_valid"} <= set(run["metrics"])
    assert run["metrics"]["error_rate"] == 0
    output = cluster.home / "experiments" / "serving-k8s" / run["run_id"] / "output"
    assert sorted(p.name for p in output.glob("*.log")) == ["load-0.log", "server-0.log"]
    assert "serving " in (output / "server-0.log").read_text()  # the server's own start-up line
    assert (output / "requests-0.parquet").exists() or (output / "requests-0.jsonl").exists()
    scraped = (output / "server-metrics.jsonl").read_text()  # the server's /metrics, through the Service
    assert scraped.strip()
    assert left(cluster) == {"deployments": [], "services": [], "jobs": []}
    wait_for(lambda: cluster.api.store.list(("", "v1", "pods"), cluster.namespace)[0] == [], 30,
             "the server's and the load generator's pods to go")
    # followed through one list + watch per kind (Deployments, Jobs, pods), no call per status check;
    # the pre-flight check (with the Kubernetes version), the node (provenance) and the spec folder's
    # ConfigMap (create, delete) once;
    # per run: three creates, a log stream per container, the server's log read once the load is done,
    # the run's pods listed, three deletes, and each pod's events once (its timeline: one call per pod)
    assert calls(cluster) == {"get": 7, "list deployments": 1, "watch deployments": 1, "list jobs": 1, "watch jobs": 1,
                              "list pods": 2, "watch pods": 1, "create": 1 + 3, "follow log": 2, "read log": 1,
                              "delete": 1 + 3, "list events": 2}


@pytest.mark.slow
def test_a_server_never_ready_fails_the_run_within_its_startup_timeout(cluster: Cluster, tmp_path: Path) -> None:
    started, startup = time.monotonic(), f"{scaled(4):g}s"  # the fake server answers well within it
    ran = invoke("run", str(write(tmp_path, FAKE, readiness="/not-here", startup=startup)), "--backend", "kubernetes",
                 "--id", "never-ready")
    (run,) = runs("never-ready", ran)
    assert ran.exit_code == 1 and run["status"] == "failed", (ran.output, run["reason"])
    assert time.monotonic() - started < scaled(40)
    assert run["reason"].startswith(f"the server was not ready after {startup}: server-0 (pod "), run["reason"]
    assert "Unhealthy: Startup probe failed: HTTP probe failed with statuscode: 404" in run["reason"], run["reason"]
    output = cluster.home / "experiments" / "never-ready" / run["run_id"] / "output"
    assert (output / "server-0.log").exists()  # its log is kept all the same
    assert not (output / "load-0.log").exists()  # no load was sent at a server that is not ready
    assert left(cluster) == {"deployments": [], "services": [], "jobs": []}


@pytest.mark.slow
def test_a_server_that_exits_fails_the_run_with_its_exit_code_and_log(cluster: Cluster, tmp_path: Path) -> None:
    server = FAKE[:-1] + ', --no-such-option]'
    ran = invoke("run", str(write(tmp_path, server)), "--backend", "kubernetes", "--id", "server-exits")
    (run,) = runs("server-exits", ran)
    assert (run["status"], run["exit_code"]) == ("failed", 2), run["reason"]
    assert run["reason"] == "server-0 exited with code 2 before it was ready"
    (stored,) = open_store(settings().store_url).runs("server-exits")
    assert "unrecognized arguments: --no-such-option" in stored.log_tail  # the server's own words
    assert left(cluster) == {"deployments": [], "services": [], "jobs": []}


@pytest.mark.slow
def test_an_evicted_server_is_an_infrastructure_failure_retried_and_kept_jobs_keep_only_the_load(
        cluster: Cluster, tmp_path: Path) -> None:
    evicted = tmp_path / "evicted"
    evictor = threading.Thread(target=_evict_the_server_under_load, args=(cluster, evicted), daemon=True)
    evictor.start()
    spec = write(tmp_path, FAKE, duration="1.5", backend="{kind: kubernetes, keep_jobs: true}")
    ran = invoke("run", str(spec), "--backend", "kubernetes", "--id", "evicted")
    evictor.join(timeout=5)
    (run,) = runs("evicted", ran)
    assert (run["status"], run["attempts"]) == ("succeeded", 2), run["reason"]
    assert evicted.exists() and run["metrics"]["request_throughput"] > 0
    (found,) = open_store(settings().store_url).attempts("evicted").values()
    assert [(a.attempt, a.status) for a in found] == [(1, "failed"), (2, "succeeded")]
    assert found[0].reason.startswith("server-0 evicted (TerminationByKubelet): The node was low on resource: memory.")
    assert found[0].reason.endswith("; the server was stopped")
    # keep_jobs: the load generator's Job stays (the second attempt's: it replaced the first's); the
    # server does not, as it would hold its GPUs
    assert left(cluster) == {"deployments": [], "services": [], "jobs": [f"kb-{run['run_id']}"]}


def _evict_the_server_under_load(cluster: Cluster, evicted: Path) -> None:
    """Once the first attempt's load generator runs, evict its server's pod (memory pressure)."""
    operator = cluster.operator
    deadline = time.monotonic() + scaled(60)
    while time.monotonic() < deadline:
        jobs = list(operator.jobs.values())
        loading = any(j.kind == "Job" and any(p.phase == "Running" for p in j.replicas) for j in jobs)
        servers = [p for j in jobs if j.kind == "Deployment" for p in j.replicas if p.phase == "Running"]
        if loading and servers:
            operator.evict(servers[0])
            evicted.touch()
            return
        time.sleep(0.02)


@pytest.mark.slow
def test_doctor_checks_the_kinds_and_permissions_a_serving_run_uses(cluster: Cluster, tmp_path: Path) -> None:
    cluster.api.store.update(("", "v1", "persistentvolumeclaims"), cluster.namespace, "kubebench",
                             lambda o: {**o, "status": {"phase": "Bound"}}, status=True)
    jobs = [(verb, "batch", "jobs") for verb in ("create", "get", "list", "watch", "delete")]
    pods = [("get", "", "pods"), ("list", "", "pods"), ("watch", "", "pods"), ("get", "", "pods/log")]
    cluster.api.allow(*jobs, *pods, ("create", "", "services"), ("get", "", "services"), ("delete", "", "services"),
                      ("get", "", "persistentvolumeclaims"))
    result = invoke("doctor", str(write(tmp_path, FAKE)))
    out = " ".join(result.output.split())
    assert result.exit_code == 2, out
    for kind in ("Service (v1)", "Deployment (apps/v1)", "Job (batch/v1)"):
        assert f"ok {kind}: served" in out
    # the Service is only created, read and deleted; the Deployment is followed as jobs are
    assert ("FAIL permissions: not allowed: create deployments.apps (running Deployments); get deployments.apps "
            "(running Deployments); list deployments.apps (running Deployments); watch deployments.apps (running "
            "Deployments); delete deployments.apps (running Deployments)") in out


def test_a_server_left_running_by_a_killed_runner_is_reclaimed(cluster: Cluster, tmp_path: Path) -> None:
    from kubebench.render.serving import kubernetes_objects
    from kubebench.runner import make_backend, plan_experiment
    from kubebench.spec.load import load_spec

    loaded = load_spec(write(tmp_path, FAKE))
    experiment = plan_experiment(loaded, settings(), "reclaimed")
    backend = make_backend(loaded)
    try:
        job = experiment.render(experiment.plan.runs[0], backend)
        for doc in kubernetes_objects(job.manifest):  # what the killed runner had created
            key = {"Deployment": DEPLOYMENTS, "Service": SERVICES, "Job": JOBS}[doc["kind"]]
            # objects that have not ended; without pods here (the deletion is checked, not how pods stop)
            doc["spec"].update({"suspend": True} if key == JOBS else {"replicas": 0} if key == DEPLOYMENTS else {})
            cluster.api.store.create(key, cluster.namespace, doc)
        assert left(cluster) == {"deployments": [f"kb-{job.run_id}-server"], "services": [f"kb-{job.run_id}-server"],
                                 "jobs": [f"kb-{job.run_id}"]}
        backend.reclaim([(job, None)])
        assert left(cluster) == {"deployments": [], "services": [], "jobs": []}
    finally:
        backend.close()
