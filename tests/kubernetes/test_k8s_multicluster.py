"""The same benchmark on two clusters (issue #32): two emulated clusters (each an API emulator with its
operator stand-in, of different Kubernetes and training-operator versions, GPUs and instance types),
two contexts of one kubeconfig. ``kubebench run SPEC --context a --label cluster=a`` runs the jobs on
that cluster only; ``compare bench@cluster=a bench@cluster=b`` compares the two trial by trial and
shows where the clusters differ; ``history`` and ``check --label`` keep each cluster's points apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cluster.cluster import NAMESPACE
from support.cluster.emulator import Emulator
from support.cluster.schemas import CRD_FILES, field_check, prune
from support.cluster.standin import CLAIMS, OperatorStandIn
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
SPEC = """
name: where
job:
  kind: PyTorchJob
  workers: 1
  image: registry.example/train:1
  command: [python, -c, "import kubebench; kubebench.report(v=10 + {{ kubebench.repeat }})"]
  resources: {cpu: 1}
repeats: 2
backend: {kind: kubernetes}
metrics: [{name: v, primary: true}]
"""
#: cluster → (Kubernetes version, training-operator release and its image tag, GPU, instance type)
CLUSTERS = {"a": ("1.31", "1.9.3", "v1-d6eb98e", "NVIDIA-A100-SXM4-80GB", "p4d.24xlarge"),
            "b": ("1.33", "1.9.4", "v1-93c5489", "NVIDIA-H100-80GB-HBM3", "p5.48xlarge")}


def _operator_deployment(tag: str) -> dict:
    """The training operator's controller as kubeflow/trainer's standalone overlay installs it (no replicas
    here: the stand-in plays the operator)."""
    labels = {"control-plane": "kubeflow-training-operator"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "training-operator", "labels": labels},
            "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "training-operator", "image": f"ghcr.io/kubeflow/training-v1/training-operator:{tag}"}]}}}}


@pytest.fixture
def two_clusters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Clusters ``a`` and ``b`` and one kubeconfig with a context for each (the current one: a)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("KUBEBENCH_HOME", str(home))
    monkeypatch.delenv("KUBEBENCH_STORE", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    started, config = {}, {"apiVersion": "v1", "kind": "Config", "current-context": "a", "clusters": [], "contexts": [],
                           "users": [{"name": "tester", "user": {"token": "test-token"}}]}
    for name, (version, operator, tag, gpu, instance) in CLUSTERS.items():
        checkers = {(g, v, k.lower() + "s"): field_check for g, v, k in CRD_FILES}
        emu = Emulator(checkers, prune, version).start()
        for namespace in (NAMESPACE, "kubeflow"):
            emu.namespace(namespace)
        emu.store.create(CLAIMS, NAMESPACE, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "kubebench"},
                                             "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}})
        emu.store.create(("apps", "v1", "deployments"), "kubeflow", _operator_deployment(tag))
        standin = OperatorStandIn(emu, home, tmp_path / name, tmp_path / name / "node-logs", training_operator=operator).start()
        standin.node.labels |= {"nvidia.com/gpu.product": gpu, "node.kubernetes.io/instance-type": instance}
        emu.store.update(("", "v1", "nodes"), "", standin.node.name, lambda o, n=standin.node: {
            **o, "metadata": {**o["metadata"], "labels": dict(n.labels)}})
        config["clusters"].append({"name": name, "cluster": {"server": emu.url}})
        config["contexts"].append({"name": name, "context": {"cluster": name, "user": "tester", "namespace": NAMESPACE}})
        started[name] = (emu, standin)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    yield started
    for emu, standin in started.values():
        standin.stop()
        emu.stop()
        assert not emu.errors and not standin.errors, (emu.errors, standin.errors)


def jobs_created(emu: Emulator) -> int:
    """How many PyTorchJobs kubebench created there (it deletes each once its outputs are collected)."""
    return emu.count("POST", contains=f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/pytorchjobs")


@pytest.mark.slow
def test_one_spec_on_two_clusters_compared_by_label(two_clusters, write) -> None:
    spec = write("where.yaml", SPEC)
    for name in ("a", "b"):
        result = runner.invoke(app, ["run", str(spec), "--context", name, "--label", f"cluster={name}", "--id", f"where-{name}"])
        assert result.exit_code == 0, result.output
        # that cluster's two runs, none on the other
        assert [jobs_created(emu) for emu, _ in two_clusters.values()] == ([2, 0] if name == "a" else [2, 2])
    result = runner.invoke(app, ["compare", "where@cluster=a", "where@cluster=b"])
    assert result.exit_code == 0, result.output
    assert "where-a" in result.output and "where-b" in result.output
    for line in ("kubernetes: v1.31.0 ≠ v1.33.0", "operators.training-operator: v1-d6eb98e ≠ v1-93c5489",
                 "gpu_product: NVIDIA-A100-SXM4-80GB ≠ NVIDIA-H100-80GB-HBM3", "instance_type: p4d.24xlarge ≠ p5.48xlarge"):
        assert f"environments differ: {line}" in result.output, result.output
    assert "environments differ: image" not in result.output  # the same image on both: not shown
    # each cluster's own history; a label no experiment has is a clear error
    history = json.loads(runner.invoke(app, ["history", "where", "--label", "cluster=b", "-f", "json"]).output)
    assert [p["experiment"] for t in history["trials"] for p in t["points"]] == ["where-b"]
    missing = runner.invoke(app, ["history", "where", "--label", "cluster=c"])
    assert missing.exit_code == 2 and "series 'where' has no experiments with cluster=c" in missing.output
    assert runner.invoke(app, ["compare", "where@cluster=a", "where@cluster=c"]).exit_code == 2
    # the gate of a cluster compares it with its own earlier experiments only: none yet
    gate = runner.invoke(app, ["check", "where", "--label", "cluster=b", "--first-ok"])
    assert gate.exit_code == 0 and "nothing to compare with" in gate.output, gate.output
