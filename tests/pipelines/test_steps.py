"""What the pipeline steps are made of: ``run --outputs``, ``check --outputs | --first-ok | --label``,
``compare SERIES@KEY=VALUE``, the run step's outputs (:mod:`kubebench.pipelines.outputs`) and the
cluster's part of a Kubernetes run's provenance (:mod:`kubebench.backends.kube.clusterinfo`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kubebench.backends.kube.api import JOBS, Resource
from kubebench.backends.kube.clusterinfo import ClusterInfo, image_tag, operator_version, operators_of
from kubebench.cli import app
from kubebench.errors import BackendError, SpecError
from kubebench.pipelines.kfp import RUN_INPUTS, executor_output, read_executor_input
from kubebench.pipelines.outputs import run_outputs, write_files
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture
def url(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store with series ``bench``: e0–e3 on cluster a (ips 1000), e4–e5 on cluster b (ips 500)."""
    url = f"sqlite:///{home / 'kb.db'}"
    monkeypatch.setenv("KUBEBENCH_STORE", url)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    store = open_store(url)
    rng = np.random.default_rng(7)
    for i, (cluster, level) in enumerate([("a", 1000)] * 4 + [("b", 500)] * 2):
        values = (level * (1 + 0.01 * rng.standard_normal(6))).tolist()
        store_experiment(store, f"e{i}", "bench", {"ips": [values]}, created_at=1000.0 + i,
                         labels={"cluster": cluster, "commit": f"c{i}"})
    store.engine.dispose()
    return url


def test_check_within_one_cluster_of_a_series(url: str, tmp_path: Path) -> None:
    # across clusters, b's newest looks like a 50% regression against a's experiments
    assert runner.invoke(app, ["check", "bench"]).exit_code == 1
    result = runner.invoke(app, ["check", "bench", "--label", "cluster=b", "--outputs", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "1 earlier experiment of series bench with cluster=b" in result.output
    assert (tmp_path / "out" / "verdict").read_text() in ("unchanged", "inconclusive")
    result = runner.invoke(app, ["check", "bench", "--outputs", str(tmp_path / "all")])
    assert (tmp_path / "all" / "verdict").read_text() == "regressed"
    assert runner.invoke(app, ["check", "e0", "e1", "--label", "cluster=a"]).exit_code == 2
    missing = runner.invoke(app, ["check", "bench", "--label", "cluster=z"])
    assert missing.exit_code == 2 and "no experiment of series 'bench' has the labels cluster=z" in missing.output


def test_the_first_experiment_passes_only_with_first_ok(url: str, tmp_path: Path) -> None:
    first = runner.invoke(app, ["check", "e0"])
    assert first.exit_code == 2 and "nothing to check it against" in first.output
    result = runner.invoke(app, ["check", "e0", "--first-ok", "--outputs", str(tmp_path)])
    assert result.exit_code == 0 and (tmp_path / "verdict").read_text() == "nothing-to-compare"
    assert runner.invoke(app, ["check", "bench", "--label", "cluster=b", "--first-ok"]).exit_code == 0  # e5 against e4


def test_compare_by_label_picks_the_newest_experiment_with_it(url: str) -> None:
    result = runner.invoke(app, ["compare", "bench@cluster=a", "bench@cluster=b"])
    assert result.exit_code == 0 and result.output.startswith("ips: e5 (candidate) vs e3 (base)"), result.output
    result = runner.invoke(app, ["compare", "bench@cluster=a", "bench@cluster=b,commit=c4"])
    assert result.output.startswith("ips: e4 (candidate) vs e3 (base)"), result.output
    for ref, message in (("bench@", "expected SERIES@KEY=VALUE"), ("bench@cluster=c", "no experiment of series 'bench' has the labels cluster=c"),
                         ("nope@cluster=a", "no series or experiment 'nope'")):
        bad = runner.invoke(app, ["compare", ref, "e0"])
        assert bad.exit_code == 2 and message in bad.output, bad.output


def test_the_run_steps_outputs(url: str, tmp_path: Path) -> None:
    outputs = run_outputs(open_store(url), "e5")
    assert outputs.primary == "ips" and outputs.metrics["runs_succeeded"] == 6.0
    assert outputs.metrics["ips_ci_low"] < outputs.metrics["ips"] < outputs.metrics["ips_ci_high"]
    files = outputs.files()
    assert files["experiment-id"] == "e5" and float(files["primary-median"]) == pytest.approx(outputs.metrics["ips"], rel=1e-5)
    write_files(tmp_path / "out", files)
    assert (tmp_path / "out" / "runs-failed").read_text() == "0"
    (tmp_path / "file").write_text("")
    with pytest.raises(SpecError, match="cannot write the step's outputs"):
        write_files(tmp_path / "file" / "out", files)


def test_run_context_needs_the_kubernetes_backend(home: Path, write) -> None:
    spec = write("s.yaml", "name: s\njob: {kind: Process, command: ['true']}\n")
    result = runner.invoke(app, ["run", str(spec), "--context", "a"])
    assert result.exit_code == 2 and "--context: the local backend does not run on Kubernetes" in result.output


def test_executor_input_defaults_and_an_output_without_metrics() -> None:
    given = read_executor_input('{"inputs": {"parameterValues": {"spec": "s.yaml", "experiment_id": "x", "labels": null}},'
                                ' "outputs": {"outputFile": "/tmp/o.json"}}', RUN_INPUTS)
    assert given.parameters == {"spec": "s.yaml", "experiment_id": "x", "labels": {}, "params": {}, "backend": "kubernetes", "repeats": 0}
    assert executor_output(given, {"experiment": "x"}, {"ips": 1.0}) == {"parameterValues": {"experiment": "x"}}
    with pytest.raises(SpecError, match="input 'labels' must be STRUCT"):
        read_executor_input('{"inputs": {"parameterValues": {"spec": "s", "experiment_id": "x", "labels": []}},'
                            ' "outputs": {"outputFile": "/o"}}', RUN_INPUTS)


class _Api:
    """What ClusterInfo reads, answering as a cluster with Trainer v2.3 (its JobSet standalone) where
    kubebench may not read Kueue's namespace."""

    DEPLOYMENTS = {("kubeflow-system", "kubeflow-trainer-controller-manager"): [
        ("kube-rbac-proxy", "quay.io/brancz/kube-rbac-proxy:v0.18"),
        ("manager", "ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.3.0")],
        ("jobset-system", "jobset-controller-manager"): [("manager", "registry.k8s.io/jobset/jobset:v0.12.0")]}

    def __init__(self) -> None:
        self.reads: list[str] = []

    def version(self) -> dict:
        self.reads.append("/version")
        return {"gitVersion": "v1.33.2"}

    def get(self, resource, namespace: str, name: str) -> dict | None:
        self.reads.append(f"{namespace}/{name}")
        if namespace == "kueue-system":
            raise BackendError(f"403: cannot get deployments in {namespace}")
        containers = self.DEPLOYMENTS.get((namespace, name))
        return {"spec": {"template": {"spec": {"containers": [{"name": n, "image": i} for n, i in containers]}}}} \
            if containers else None


def test_cluster_info_reads_each_operator_once_and_leaves_out_what_it_may_not_read() -> None:
    api = _Api()
    info = ClusterInfo(lambda: api)
    trainjobs = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
    assert info.provenance(JOBS) == {"kubernetes": "v1.33.2"}  # a batch Job: no operator
    assert info.provenance(trainjobs, queued=True) == {"kubernetes": "v1.33.2",
                                                       "operators": {"trainer": "v2.3.0", "jobset": "v0.12.0"}}
    assert api.reads == ["/version", "kubeflow-system/kubeflow-trainer-controller-manager", "kubeflow-system/jobset-controller-manager",
                         "jobset-system/jobset-controller-manager", "kueue-system/kueue-controller-manager"]
    assert info.provenance(trainjobs)["operators"] == {"trainer": "v2.3.0", "jobset": "v0.12.0"} and len(api.reads) == 5
    assert operators_of(Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob"), False) == ("mpi-operator",)
    assert operators_of(Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"), True) == ("training-operator", "kueue")
    assert [image_tag(i) for i in ("registry:5000/op:v1.2", "registry:5000/op", "op@sha256:ab", "op")] == [
        "v1.2", "latest", "sha256:ab", "latest"]
    assert operator_version({"spec": {}}, "manager") is None
