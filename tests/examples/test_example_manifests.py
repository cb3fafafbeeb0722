"""Every example that can run on Kubernetes renders, with its parameter file, manifests that the real
Kubeflow CRDs (or the Kubernetes schema, for a batch Job) accept, once the kubernetes backend has
decorated them: the examples are meant for clusters, not only for the local backend.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kubebench import registry
from kubebench.runner import make_backend, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec

# The schema helpers live with the Kubernetes tests.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kubernetes"))
from k8s_schemas import errors_of  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
KINDS = {"pytorch-cnn": "PyTorchJob", "tf-cnn": "TFJob", "mpi-cnn": "MPIJob", "mlperf-trainjob": "TrainJob",
         "kubebench-v1-compat": "Job"}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_example_manifests_validate_for_kubernetes(tmp_path: Path, name: str) -> None:
    params = next((EXAMPLES / name).glob("params*.yaml"))
    loaded = load_spec(EXAMPLES / name / "benchmark.yaml", params_file=params)
    backend = registry.load("backends", "kubernetes").Config(storage={"claim": "shared", "mount_path": "/mnt/kb"})
    loaded = loaded.model_copy(update={"spec": loaded.spec.model_copy(update={"backend": backend})})
    experiment = plan_experiment(loaded, settings(home=tmp_path / "home"), "example-202401010000-abcd")
    for run in experiment.plan.runs:
        manifest = experiment.render(run, make_backend(loaded)).manifest
        assert manifest["kind"] == KINDS[name]
        assert errors_of(manifest) == []
