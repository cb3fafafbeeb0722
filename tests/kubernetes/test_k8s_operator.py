"""The Benchmark controller end to end (issue #32), on the API emulator and the operator stand-in: the
controller runs in this process on the official client; its runner Job's pod runs ``kubebench run``
as a local process, which runs its jobs on the same emulated cluster and writes the Benchmark's status."""

from __future__ import annotations

import base64
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import yaml
from support.cluster.cluster import Cluster
from support.timing import scaled, wait_for

from kubebench.backends.kube.config import KubernetesConfig
from kubebench.operator import API_VERSION, GROUP, PLURAL, VERSION
from kubebench.operator.children import runner_name, spec_map_name
from kubebench.operator.controller import Controller, Options
from kubebench.operator.crd import crd

CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
BENCHMARKS = (GROUP, VERSION, PLURAL)
JOBS = ("batch", "v1", "jobs")
CONFIG_MAPS = ("", "v1", "configmaps")
SECRETS = ("", "v1", "secrets")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kubebench-v1-compat"


def spec(value: str = "{{ value }}", repeats: int = 2, **extra) -> dict:
    body = {"name": "tiny", "series": "tiny", "job": {"kind": "Job", "command": [
        "python", "-c", f"import random, kubebench; kubebench.report(v={value} * (1 + random.random() / 1000))"]},
        "parameters": {"value": 100}, "repeats": repeats, "parallelism": 5, "timeout": "2m",
        "metrics": [{"name": "v", "unit": "ops/s", "primary": True}], "backend": "kubernetes"}
    return {**body, **extra}


@pytest.fixture
def operated(cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The cluster with the CRD, the runner's store Secret, ``kubebench`` on $PATH (the runner image's
    entry point) and a controller running."""
    folder = tmp_path / "bin"
    folder.mkdir()
    shim = folder / "kubebench"
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m kubebench "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    cluster.api.store.create(CRDS, "", crd())
    url = f"sqlite:///{cluster.home}/kubebench.db"
    monkeypatch.setenv("KUBEBENCH_STORE", url)  # where the test reads what the runner stored
    cluster.api.store.create(SECRETS, cluster.namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "store"},
                                                          "data": {"url": base64.b64encode(url.encode()).decode()}})
    controllers = []

    def start(**options) -> Controller:
        controller = Controller(KubernetesConfig(), Options(cluster.namespace, **options)).start()
        controllers.append(controller)
        return controller

    yield cluster, start
    for controller in controllers:
        controller.stop()


def apply(cluster: Cluster, name: str, body: dict | None = None, **fields) -> dict:
    doc = {"apiVersion": API_VERSION, "kind": "Benchmark", "metadata": {"name": name},
           "spec": {**({"benchmark": body} if body else {}), "runner": {"storeSecretRef": {"name": "store"}}, **fields}}
    return cluster.api.store.create(BENCHMARKS, cluster.namespace, doc)


def status(cluster: Cluster, name: str) -> dict:
    return cluster.api.store.get(BENCHMARKS, cluster.namespace, name).get("status") or {}


def conditions(cluster: Cluster, name: str) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status(cluster, name).get("conditions") or []}


def until_state(cluster: Cluster, name: str, *states: str, timeout: float = 120) -> dict:
    return wait_for(lambda: status(cluster, name) if status(cluster, name).get("state") in states else None,
                    timeout, f"Benchmark {name} {'/'.join(states)}")


@pytest.mark.slow
def test_a_benchmark_runs_to_complete_with_progress_and_its_primary_metric(operated) -> None:
    cluster, start = operated
    start()
    cr = apply(cluster, "tiny", spec(), labels={"cluster": "a"})
    done = until_state(cluster, "tiny", "Succeeded", "Failed")
    assert done["state"] == "Succeeded", done
    assert done["progress"] == "2/2" and done["runs"]["succeeded"] == 2 and done["observedGeneration"] == 1
    assert done["primary"]["metric"] == "v" and float(done["primary"]["median"]) == pytest.approx(100, rel=0.01)
    assert done["primary"]["unit"] == "ops/s" and done["experimentId"].startswith("tiny-")
    found = conditions(cluster, "tiny")
    assert found["Accepted"] == ("True", "SpecValid") and found["Complete"] == ("True", "AllRunsSucceeded")
    assert found["Failed"][0] == "False" and found["Regressed"] == ("Unknown", "NotChecked")
    owner = cr["metadata"]["uid"]
    job = cluster.api.store.get(JOBS, cluster.namespace, runner_name(cr))
    assert [r["uid"] for r in job["metadata"]["ownerReferences"]] == [owner]
    spec_map = cluster.api.store.get(CONFIG_MAPS, cluster.namespace, spec_map_name(cr))
    assert spec_map["metadata"]["ownerReferences"][0]["uid"] == owner
    assert done["completionTime"] >= done["startTime"]
    # the runner's own jobs were owned by the Benchmark (it deleted them when their logs were in)
    posted = [r for r in cluster.api.requests if r.method == "POST" and r.path.endswith("/jobs") and r.code == 201]
    assert len(posted) == 3  # the runner Job and the two runs


def test_an_invalid_spec_is_not_accepted_and_makes_no_job(operated) -> None:
    cluster, start = operated
    start()
    apply(cluster, "bad", spec(job={"kind": "Job", "command": ["x"], "template": "job.j2"}))
    failed = until_state(cluster, "bad", "Failed", timeout=30)
    found = conditions(cluster, "bad")
    assert found["Accepted"] == ("False", "InvalidSpec") and found["Failed"] == ("True", "InvalidSpec")
    message = next(c["message"] for c in failed["conditions"] if c["type"] == "Accepted")
    assert message.startswith("spec.benchmark.job: give either `command`") and "/tmp" not in message
    assert cluster.api.store.list(JOBS, cluster.namespace)[0] == []
    apply(cluster, "bad-param", spec(), params={"nope": 3})
    until_state(cluster, "bad-param", "Failed", timeout=30)
    assert "spec.params: nope not a parameter of the spec" in str(status(cluster, "bad-param")["conditions"])


@pytest.mark.slow
def test_a_runner_that_keeps_crashing_fails_the_benchmark_with_runner_failed(operated) -> None:
    cluster, start = operated
    start()
    cr = apply(cluster, "crash", spec(value="__import__('time').sleep(60) or 1", repeats=1))
    name = runner_name(cr)
    for _ in range(4):  # backoffLimit 3: the fourth death is the last (an OOM kill each time)
        pod = wait_for(lambda: next((p for p in cluster.operator.pods.values() if p.job.name == name and p.phase == "Running"
                                     and p.boxes[0].process is not None), None), 60, "a running runner pod")
        pod.boxes[0].process.send_signal(signal.SIGKILL)
        wait_for(lambda pod=pod: pod.phase == "Failed", 30, "the runner pod failed")
    failed = until_state(cluster, "crash", "Failed", timeout=60)
    found = conditions(cluster, "crash")
    assert found["Failed"] == ("True", "RunnerFailed"), failed
    assert "BackoffLimitExceeded" in next(c["message"] for c in failed["conditions"] if c["type"] == "Failed")


@pytest.mark.slow
def test_a_deleted_runner_job_fails_the_benchmark_with_runner_deleted(operated) -> None:
    cluster, start = operated
    start()
    cr = apply(cluster, "orphan", spec(value="__import__('time').sleep(60) or 1", repeats=1))
    wait_for(lambda: status(cluster, "orphan").get("runnerJob"), 30, "the runner Job in the status")
    cluster.api.store.delete(JOBS, cluster.namespace, runner_name(cr), "Background")
    failed = until_state(cluster, "orphan", "Failed", timeout=30)
    assert conditions(cluster, "orphan")["Failed"] == ("True", "RunnerDeleted"), failed
    time.sleep(scaled(0.5))
    assert cluster.api.store.find(JOBS, cluster.namespace, runner_name(cr)) is None  # not made again


@pytest.mark.slow
def test_suspend_holds_the_runner_and_resuming_runs_it(operated) -> None:
    cluster, start = operated
    start()
    cr = apply(cluster, "held", spec(repeats=1), suspend=True)
    until_state(cluster, "held", "Suspended", timeout=30)
    job = wait_for(lambda: cluster.api.store.find(JOBS, cluster.namespace, runner_name(cr)), 30, "the runner Job")
    assert job["spec"]["suspend"] is True and conditions(cluster, "held")["Suspended"] == ("True", "Suspended")
    time.sleep(scaled(0.5))
    assert not [p for p in cluster.operator.pods.values() if p.job.name == runner_name(cr)]
    cluster.api.store.update(BENCHMARKS, cluster.namespace, "held",
                             lambda o: {**o, "spec": {**o["spec"], "suspend": False}})
    done = until_state(cluster, "held", "Succeeded", "Failed")
    assert done["state"] == "Succeeded" and done["observedGeneration"] == 2
    assert conditions(cluster, "held")["Suspended"][0] == "False"


@pytest.mark.slow
def test_deleting_a_benchmark_deletes_its_children(operated) -> None:
    cluster, start = operated
    start()
    cr = apply(cluster, "gone", spec(value="__import__('time').sleep(30) or 1", repeats=1))
    wait_for(lambda: any(p.job.name != runner_name(cr) and p.phase == "Running" for p in cluster.operator.pods.values()),
             60, "a run's pod running")
    run_jobs = [o for (k, ns, n), o in cluster.api.store.objects.items() if k == JOBS and n != runner_name(cr)]
    assert run_jobs and all(o["metadata"]["ownerReferences"][0]["uid"] == cr["metadata"]["uid"] for o in run_jobs)
    cluster.api.store.delete(BENCHMARKS, cluster.namespace, "gone")
    wait_for(lambda: not [k for k in cluster.api.store.objects if k[0] in (JOBS, CONFIG_MAPS, ("", "v1", "pods"))],
             60, "the runner Job, the spec ConfigMap, the run's job and pods collected")


def test_two_replicas_elect_one_leader_and_the_other_takes_over_within_the_lease(operated) -> None:
    cluster, start = operated
    first = start(leader_elect=True, identity="a", lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)
    second = start(leader_elect=True, identity="b", lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)
    leader = wait_for(lambda: next((c for c in (first, second) if c.leading), None), 20, "a leader")
    follower = second if leader is first else first
    apply(cluster, "led", spec(job={"kind": "Job", "command": ["x"], "template": "j.j2"}))
    until_state(cluster, "led", "Failed", timeout=30)
    assert leader.reconciles >= 1 and follower.reconciles == 0 and not follower.leading
    # the leader dies without giving the Lease up (a killed process): the follower waits out the lease
    leader.elector.stopped.set()
    leader.queue.shut_down()
    died = time.monotonic()
    wait_for(lambda: follower.leading, 20, "the follower leads")
    assert time.monotonic() - died <= scaled(2.0 + 1.0)
    apply(cluster, "led-2", spec(job={"kind": "Job", "command": ["x"], "template": "j.j2"}))
    until_state(cluster, "led-2", "Failed", timeout=30)
    assert follower.reconciles >= 1


@pytest.mark.slow
def test_a_regression_against_the_series_sets_regressed(operated) -> None:
    cluster, start = operated
    start()
    apply(cluster, "base", spec(repeats=5))
    assert until_state(cluster, "base", "Succeeded", "Failed")["state"] == "Succeeded"
    apply(cluster, "slower", spec(repeats=5), params={"value": 50}, gate={"metrics": ["v"]})
    done = until_state(cluster, "slower", "Succeeded", "Failed", timeout=180)
    assert done["state"] == "Succeeded" and done["gate"]["verdict"] == "regressed", done.get("gate")
    assert conditions(cluster, "slower")["Regressed"] == ("True", "SignificantRegression")
    assert done["gate"]["regressed"] == 1 and done["gate"]["against"] == "tiny"


@pytest.mark.slow
def test_the_example_benchmark_resource_runs_from_its_configmap(operated) -> None:
    cluster, start = operated
    start()
    files = {p.name: p.read_text() for p in EXAMPLE.iterdir() if p.is_file()}
    cluster.api.store.create(CONFIG_MAPS, cluster.namespace, {"apiVersion": "v1", "kind": "ConfigMap",
                                                              "metadata": {"name": "kubebench-v1-compat"}, "data": files})
    doc = yaml.safe_load((EXAMPLE / "benchmark-cr.yaml").read_text())
    doc["spec"]["params"] = {"model": "small", "num_batches": 3, "batch_size": 8}  # small enough for this machine
    doc["spec"]["runner"]["storeSecretRef"] = {"name": "store"}
    cluster.api.store.create(BENCHMARKS, cluster.namespace, doc)
    done = until_state(cluster, "v1-compat", "Succeeded", "Failed", timeout=240)
    assert done["state"] == "Succeeded", done
    assert done["progress"] == "1/1" and float(done["primary"]["median"]) > 0
    assert done["gate"]["verdict"] == "nothing-to-compare"
    assert conditions(cluster, "v1-compat")["Regressed"] == ("Unknown", "NothingToCompare")


def policy_of(rules: list[dict]) -> set[tuple[str, str, str]]:
    return {(verb, group, resource) for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]
            for verb in rule["verbs"]}


@pytest.mark.slow
def test_the_deployed_roles_are_all_the_controller_and_its_runner_need(operated) -> None:
    from kubebench import deploy
    from kubebench.operator.manifests import operator_manifests

    cluster, start = operated
    docs = operator_manifests(cluster.namespace)
    roles = [d for d in docs if d["kind"] == "Role"]
    theirs = [d for d in deploy.manifests(namespace="x") if d["kind"] in ("Role", "ClusterRole")]
    allowed = policy_of([r for role in roles + theirs for r in role["rules"]])
    cluster.api.allow(*allowed)
    start(leader_elect=True, identity="only", lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)
    apply(cluster, "rbac", spec(repeats=1))
    done = until_state(cluster, "rbac", "Succeeded", "Failed", timeout=60)
    assert done["state"] == "Succeeded", done
    assert {(r.method, r.path) for r in cluster.api.requests if r.code == 403} <= {("GET", f"/api/v1/namespaces/{cluster.namespace}")}
    assert [d["kind"] for d in docs][0] == "CustomResourceDefinition"
