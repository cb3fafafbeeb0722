"""Provenance of a Kubernetes run (review finding MED-11): the node it ran on, the image digest its
kubelet pulled and the node's GPU product, not the machine kubebench runs on; comparing two
experiments warns when those differ."""

from __future__ import annotations

import textwrap

from support.cluster.cluster import Cluster
from typer.testing import CliRunner

from kubebench.cli import app

SPEC = textwrap.dedent("""
    name: where
    job:
      kind: PyTorchJob
      workers: 2
      image: registry.example/train:1
      command: [python, -c, "import kubebench; kubebench.report(v=1)"]
      resources: {cpu: 1}
    backend: {kind: kubernetes}
    metrics: [{name: v}]
    """)
GPU_LABELS = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.memory": "81920",
              "node.kubernetes.io/instance-type": "p4d.24xlarge"}


def label_node(cluster: Cluster, labels: dict[str, str]) -> None:
    store, nodes = cluster.api.store, ("", "v1", "nodes")
    store.update(nodes, "", "node-1", lambda o: {**o, "metadata": {**o["metadata"], "labels": {
        **o["metadata"]["labels"], **labels}}})
    store.update(nodes, "", "node-1", lambda o: {**o, "status": {"nodeInfo": {
        "osImage": "Ubuntu 22.04", "kernelVersion": "6.8.0", "architecture": "amd64", "kubeletVersion": "v1.33.1"}}},
        status=True)


def test_a_kubernetes_run_records_where_its_pods_ran(cluster: Cluster, run_spec) -> None:
    label_node(cluster, GPU_LABELS)
    (run,) = run_spec(SPEC).runs
    assert run.status == "succeeded", run.reason
    p = run.provenance
    assert (p["node"], p["image"], p["gpu_product"], p["instance_type"]) == (
        "node-1", "registry.example/train:1", "NVIDIA-A100-SXM4-80GB", "p4d.24xlarge")
    assert p["image_digest"].startswith("sha256:") and p["os"] == "Ubuntu 22.04" and p["kubelet"] == "v1.33.1"
    assert p["backend"] == "kubernetes"
    assert "host" not in p and "cpu_model" not in p  # nothing of the machine kubebench ran on


def test_comparing_runs_on_different_gpus_warns(cluster: Cluster, run_spec) -> None:
    label_node(cluster, GPU_LABELS)
    run_spec(SPEC, "on-a100")
    label_node(cluster, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    run_spec(SPEC, "on-h100")
    result = CliRunner().invoke(app, ["compare", "on-a100", "on-h100"])
    assert "environments differ: gpu_product: NVIDIA-A100-SXM4-80GB ≠ NVIDIA-H100-80GB-HBM3" in result.output, result.output
