"""Issue #16, every example runs on a cluster: `kubebench run SPEC --backend kubernetes` from a laptop
ships the spec's folder as a ConfigMap of the experiment, mounted as the job pods' working directory,
so that a command running a script beside the spec (`python runner.py`) finds it there. The stand-in's
kubelet runs containers in their `workingDir` (else the image's, which does not hold the script) and
mounts ConfigMap volumes from the ConfigMaps in the API, as a kubelet does."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from support.cluster.cluster import Cluster
from typer.testing import CliRunner

from kubebench.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kubebench-v1-compat"
CONFIG_MAPS = ("", "v1", "configmaps")


def invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, list(args))


def test_the_v1_compat_example_runs_its_scripts_beside_the_spec_on_a_cluster(cluster: Cluster) -> None:
    assert not (cluster.operator.workdir / "runner.py").exists()  # the image's working directory has no script
    # left by a killed runner of the same experiment: replaced, not used
    cluster.api.store.create(CONFIG_MAPS, cluster.namespace, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kb-spec-v1-k8s"},
        "data": {"runner.py": "raise SystemExit(3)\n"}})
    result = invoke("run", str(EXAMPLE / "benchmark.yaml"), "--backend", "kubernetes", "--id", "v1-k8s",
                    "--set", "num_batches=3", "--set", "batch_size=8")
    (record,) = json.loads(invoke("results", "v1-k8s", "--format", "json").output)
    assert result.exit_code == 0, result.output + record["reason"]
    assert record["status"] == "succeeded"
    metrics = record["metrics"]
    assert metrics["total_images/sec"] > 0 and metrics["num_batches"] == 3  # post_processor.py's result.json
    run_dir = cluster.home / "experiments" / "v1-k8s" / record["run_id"]
    assert "Command to run:" in (run_dir / "output" / "worker0.log").read_text()  # runner.py ran in the pod
    pod = yaml.safe_load((run_dir / "config" / "manifest.yaml").read_text())["spec"]["template"]["spec"]
    assert {"name": "kubebench-spec", "configMap": {"name": "kb-spec-v1-k8s"}} in pod["volumes"]
    assert pod["containers"][0]["workingDir"] == "/etc/kubebench/spec"
    # made once for the experiment, then deleted when the runner ended
    assert cluster.api.count("POST", "/configmaps") == 2  # the first found the leftover (409)
    assert cluster.api.store.list(CONFIG_MAPS, cluster.namespace)[0] == []


def test_a_trainjob_runs_its_script_beside_the_spec_though_it_cannot_set_a_working_directory(
        cluster: Cluster, tmp_path: Path) -> None:
    # review 2026-12-02 L-A: a TrainJob's runtime patch may not carry workingDir; its command runs in the
    # spec's folder through sh
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "spec.yaml").write_text("name: tj\njob: {kind: TrainJob, workers: 1, command: [python, job.py]}\n"
                                      "metrics: [{name: v}]\n")
    (folder / "job.py").write_text("import kubebench; kubebench.report(v=3)\n")
    result = invoke("run", str(folder / "spec.yaml"), "--backend", "kubernetes", "--id", "tj")
    (record,) = json.loads(invoke("results", "tj", "--format", "json").output)
    assert result.exit_code == 0, result.output + record["reason"]
    assert record["metrics"]["v"] == 3
    manifest = yaml.safe_load((cluster.home / "experiments" / "tj" / record["run_id"] / "config" / "manifest.yaml")
                              .read_text())
    assert manifest["spec"]["trainer"]["command"] == ["sh", "-c", 'cd "$0" && exec "$@"', "/etc/kubebench/spec",
                                                      "python", "job.py"]


def test_a_spec_folder_too_big_for_a_configmap_stops_the_start(cluster: Cluster, tmp_path: Path) -> None:
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "spec.yaml").write_text("name: big\njob: {kind: Job, command: [python, run.py]}\n")
    (folder / "data.csv").write_text("1,2,3\n" * 200_000)
    result = invoke("run", str(folder / "spec.yaml"), "--backend", "kubernetes", "--id", "big")
    assert result.exit_code == 2, result.output
    assert "the spec's folder holds" in result.output and "more than a ConfigMap takes" in result.output
    assert "Traceback" not in result.output and cluster.api.count("POST") == 0


def test_a_given_spec_configmap_is_used_and_none_is_made(cluster: Cluster, tmp_path: Path, monkeypatch) -> None:
    # what `kubebench deploy manifests --spec` gives the runner in the cluster
    monkeypatch.setenv("KUBEBENCH_SPEC_CONFIGMAP", "kubebench-spec")
    cluster.api.store.create(CONFIG_MAPS, cluster.namespace, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kubebench-spec"},
        "data": {"job.py": "import kubebench; kubebench.report(v=2)\n"}})
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "spec.yaml").write_text("name: given\njob: {kind: Job, command: [python, job.py]}\nmetrics: [{name: v}]\n")
    result = invoke("run", str(folder / "spec.yaml"), "--backend", "kubernetes", "--id", "given")
    assert result.exit_code in (0, 1), result.output
    (record,) = json.loads(invoke("results", "given", "--format", "json").output)
    assert result.exit_code == 0, result.output + record["reason"]
    assert record["metrics"]["v"] == 2  # job.py of the given ConfigMap (there is none beside the spec)
    assert cluster.api.count("POST", "/configmaps") == 0
