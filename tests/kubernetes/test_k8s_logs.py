"""Logs on Kubernetes (review finding MED-7): every container's log streamed from its start, so that
the kubelet's rotation, deletions and restarts lose nothing; a log that cannot be read is a warning
on the run, never its outcome; a replica's later pod does not overwrite an earlier one's log."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.cluster.cluster import Cluster


def spec(code: str, kind: str = "PyTorchJob", workers: int = 1, extra: str = "", metrics: str = "[{name: v}]") -> str:
    return textwrap.dedent(f"""
        name: logs
        job:
          kind: {kind}
          workers: {workers}
          command: [python, -c, "{code}"]
          {extra}
        backend: {{kind: kubernetes, unschedulable_grace: 30s}}
        metrics: {metrics}
        timeout: 60s
        """)


def output_of(cluster: Cluster, run, experiment: str = "exp-1") -> Path:
    return cluster.home / "experiments" / experiment / run.run_id / "output"


LONG = ("import kubebench; print('FIRST LINE', flush=True); "
        "[print('line', i, 'x' * 100, flush=i % 100 == 0) for i in range(3000)]; kubebench.report(v=1)")


def test_a_log_longer_than_the_kubelets_rotation_is_kept_whole(cluster: Cluster, run_spec) -> None:
    cluster.api.log_rotate_bytes = 64 * 1024  # the kubelet keeps only the current 64 KiB file
    (run,) = run_spec(spec(LONG)).runs
    assert run.status == "succeeded", run.reason
    log = (output_of(cluster, run) / "master-0.log").read_text()
    assert log.startswith("FIRST LINE\n") and log.count("\nline ") == 3000 and len(log) > 300_000


def test_the_replicas_own_container_is_its_log_and_every_other_container_is_kept(cluster: Cluster, run_spec) -> None:
    # a service mesh's webhook puts its proxy first in every pod, as Linkerd does
    cluster.operator.inject_sidecar = {"name": "linkerd-proxy", "image": "linkerd/proxy:2",
                                       "command": ["python", "-c", "print('proxy up')"]}
    (run,) = run_spec(spec("import kubebench; print('training'); kubebench.report(v=1)")).runs
    assert run.status == "succeeded", run.reason
    output = output_of(cluster, run)
    assert (output / "master-0.log").read_text() == "training\nKUBEBENCH_METRIC v=1.0\n"
    (proxy,) = (output / "pods").glob("*.linkerd-proxy.0.log")
    assert proxy.read_text() == "proxy up\n"


def test_a_log_that_cannot_be_read_is_a_warning_not_the_runs_outcome(cluster: Cluster, run_spec) -> None:
    cluster.api.allow(*_everything_but_logs())  # RBAC without pods/log
    (run,) = run_spec(spec("print('done')", metrics="[]")).runs
    assert run.status == "succeeded", run.reason
    assert "could not read the log of kb-" in run.info["log_warning"] and "HTTP 403" in run.info["log_warning"]


def _everything_but_logs() -> list[tuple[str, str, str]]:
    verbs = ("get", "list", "watch", "create", "delete")
    resources = [("kubeflow.org", "pytorchjobs"), ("", "pods"), ("", "events"), ("", "nodes")]
    return [(v, g, r) for v in verbs for g, r in resources] + [("create", "", "configmaps"), ("delete", "", "configmaps")]


def test_a_replicas_later_pod_gets_its_name_and_the_earlier_ones_are_kept(cluster: Cluster, run_spec,
                                                                          tmp_path: Path) -> None:
    template = tmp_path / "job.yaml.j2"
    marker = tmp_path / "once"
    template.write_text(textwrap.dedent(f"""
        apiVersion: batch/v1
        kind: Job
        metadata: {{name: "{{{{ kubebench.name }}}}"}}
        spec:
          backoffLimit: 1
          completionMode: Indexed
          completions: 1
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: main
                  image: python:3.11-slim
                  command: [python, -c, "import os, sys, time, kubebench; first = not os.path.exists('{marker}'); open('{marker}', 'a').close(); print('first pod' if first else 'second pod', flush=True); first and (time.sleep(1.05 - time.time() % 1), sys.exit(2)); kubebench.report(v=1)"]
        """).lstrip())
    # the first pod ends in a later second than it was created in: its replacement's creationTimestamp
    # (whole seconds) is later, as the Job controller's back-off of 10 s or more makes it on a cluster
    text = "name: logs\njob: {template: job.yaml.j2}\nbackend: {kind: kubernetes}\nmetrics: [{name: v}]\ntimeout: 60s\n"
    (run,) = run_spec(text).runs
    assert run.status == "succeeded", run.reason
    output = output_of(cluster, run)
    assert (output / "worker-0.log").read_text().startswith("second pod")
    (earlier,) = (output / "pods").glob("*.main.0.log")
    assert earlier.read_text() == "first pod\n"


@pytest.mark.parametrize("kind", ["TrainJob"])
def test_the_failed_instance_of_a_restarted_container_is_the_replicas_log(cluster: Cluster, run_spec, kind: str) -> None:
    code = "import os, sys; print('node', os.environ['PET_NODE_RANK'], 'failing on purpose', flush=True); sys.exit(3)"
    (run,) = run_spec(spec(code, kind=kind)).runs
    assert (run.status, run.exit_code) == ("failed", 3)
    assert "failing on purpose" in (output_of(cluster, run) / "node-0.log").read_text()


def test_a_pytorchjob_that_succeeds_on_its_master_alone_says_its_workers_never_ran(cluster: Cluster, run_spec) -> None:
    # review 2026-12-02 M-G: the operator's init-pytorch keeps a worker waiting until the master's address
    # resolves, which it does only while the master is Ready; a master that ends at once makes the job
    # Succeeded (on its master alone) before any worker ran
    text = spec("", workers=2).replace('[python, -c, ""]', "[sh, -c, 'echo KUBEBENCH_METRIC v=1']")
    (run,) = run_spec(text).runs
    assert run.status == "succeeded", run.reason
    assert sorted(p.name for p in output_of(cluster, run).glob("*.log")) == ["master-0.log"]
    assert run.info["log_warning"] == ("worker-0 never ran: its init container init-pytorch had not finished when "
                                       "the job succeeded")


def test_a_replica_still_running_when_its_job_succeeded_is_read_before_it_goes_and_said(
        cluster: Cluster, run_spec, monkeypatch: pytest.MonkeyPatch) -> None:
    # a TFJob succeeds with its worker 0 (the chief); worker 1 runs on past the drain
    monkeypatch.setattr("kubebench.backends.kube.logs.DRAIN_SECONDS", 1.0)
    code = ("import json, os, time, kubebench; index = json.loads(os.environ['TF_CONFIG'])['task']['index']; "
            "print('worker', index, 'started', flush=True); index == 0 or time.sleep(40); kubebench.report(v=1)")
    (run,) = run_spec(spec(code, kind="TFJob", workers=2)).runs
    assert run.status == "succeeded", run.reason
    assert (output_of(cluster, run) / "worker-1.log").read_text() == "worker 1 started\n"  # read before the delete
    assert run.info["log_warning"] == "worker-1 was still running when the job succeeded: its log ends there"


def test_a_stream_opened_after_a_fast_restart_does_not_pass_the_next_instance_for_the_failed_one(
        cluster: Cluster, run_spec) -> None:
    # review 2026-12-02 L-C: the kubelet restarts a failed container at once, and a follow request that
    # arrives after that streams the new instance; the failed one's log is then read as `previous`
    cluster.api.follow_delay = 1.0
    cluster.operator.kubelet.backoff_scale = 1.0  # no third instance before the run ends
    code = ("import os, sys, time; path = os.environ['KUBEBENCH_EXP_OUTPUT_PATH'] + '/starts'; open(path, 'a').write('x'); "
            "time.sleep(0.5); print('attempt', len(open(path).read()), 'failing', flush=True); sys.exit(3)")
    (run,) = run_spec(spec(code, kind="TrainJob")).runs
    assert (run.status, run.exit_code) == ("failed", 3), run.reason
    assert (output_of(cluster, run) / "node-0.log").read_text() == "attempt 1 failing\n"
