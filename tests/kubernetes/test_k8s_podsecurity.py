"""PodSecurity ``restricted`` enforced on the runs' namespace (review 2026-12-02 M-H): the API server
refuses every pod that does not pass it, so an operator gets no pods and says why in its own event."""

from __future__ import annotations

import textwrap

import pytest
from support.cluster.cluster import Cluster

QUICK = "import kubebench; kubebench.report(v=1)"


def spec(kind: str, workers: int = 1, backend: str = "", code: str = QUICK) -> str:
    return textwrap.dedent(f"""
        name: restricted
        job:
          kind: {kind}
          workers: {workers}
          command: [python, -c, "{code}"]
          resources: {{cpu: 1}}
        backend: {{kind: kubernetes, unschedulable_grace: 1s{backend}}}
        metrics: [{{name: v}}]
        timeout: 30s
        """)


@pytest.fixture
def restricted(cluster: Cluster) -> Cluster:
    """The runs' namespace labelled ``pod-security.kubernetes.io/enforce: restricted``."""
    def label(namespace: dict) -> dict:
        labels = {**(namespace["metadata"].get("labels") or {}), "pod-security.kubernetes.io/enforce": "restricted"}
        return {**namespace, "metadata": {**namespace["metadata"], "labels": labels}}

    cluster.api.store.update(("", "v1", "namespaces"), "", cluster.namespace, label)
    return cluster


@pytest.mark.parametrize("kind", ["Job", "PyTorchJob", "TFJob", "TrainJob"])
def test_every_kind_runs_in_a_namespace_that_enforces_restricted(restricted: Cluster, run_spec, kind: str) -> None:
    (run,) = run_spec(spec(kind)).runs
    assert (run.status, run.metrics.get("v")) == ("succeeded", 1.0), run.reason


def test_without_the_security_contexts_the_refusal_is_the_runs_reason(restricted: Cluster, run_spec) -> None:
    (run,) = run_spec(spec("Job", backend=", pod_security_context: {}, container_security_context: {}")).runs
    assert run.status == "failed"
    assert run.reason.startswith(f"Job bench/kb-{run.run_id} has no pods: FailedCreate: Error creating: pods ")
    assert 'violates PodSecurity "restricted:latest": main: allowPrivilegeEscalation != false' in run.reason


def test_a_pytorchjobs_workers_are_refused_for_the_operators_own_init_container(restricted: Cluster, run_spec) -> None:
    # training-operator v1.9 adds init-pytorch (alpine, no securityContext) to every worker: restricted refuses
    # them whatever kubebench sets; the run says so once the grace is over, instead of timing out
    waits = "import time; time.sleep(25)"  # for its peer, as a rendezvous does
    (run,) = run_spec(spec("PyTorchJob", workers=2, code=waits)).runs
    assert run.status == "failed" and "(timed out" not in run.reason
    assert run.reason.startswith(f"PyTorchJob bench/kb-{run.run_id} has 1 of its 2 pods: FailedCreatePod: Error creating: "
                                 f'pods "kb-{run.run_id}-worker-0" is forbidden: violates PodSecurity'), run.reason
    assert "init-pytorch: allowPrivilegeEscalation != false" in run.reason
