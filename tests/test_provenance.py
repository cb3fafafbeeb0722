"""Provenance: what is captured, the workload's commit, and how two environments are compared."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from kubebench import provenance
from kubebench.provenance import job_images, machine, provenance_differences, workload


def test_machine_names_host_os_cpu_memory_python_and_packages() -> None:
    data = machine()
    assert data["format_version"] == 1 and data["host"] and data["os"] and data["cpu_model"]
    assert data["cpu_threads"] >= 1 and data["memory_gb"] > 0
    assert data["python"] == ".".join(map(str, sys.version_info[:3]))
    assert data["packages"]["kubebench"]
    json.dumps(data)  # stored as JSON


def test_gpus_come_from_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.SimpleNamespace(
        NVMLError=RuntimeError, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetCount=lambda: 2, nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=141 * 2**30),
        nvmlSystemGetDriverVersion=lambda: "550.54.15", nvmlSystemGetCudaDriverVersion_v2=lambda: 12040,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert provenance._gpus() == {"gpus": [{"model": "NVIDIA H200", "memory_gb": 141.0}] * 2,
                                  "gpu_driver": "550.54.15", "cuda": "12.4"}


def test_no_nvml_driver_means_no_gpu_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    monkeypatch.setitem(sys.modules, "pynvml", types.SimpleNamespace(NVMLError=RuntimeError, nvmlInit=fail))
    assert provenance._gpus() == {}


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_workload_commit_and_uncommitted_changes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "bench").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "bench" / "spec.yaml").write_text("name: x\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    assert workload.__wrapped__(repo / "bench") == {"git_commit": git(repo, "rev-parse", "HEAD"), "git_dirty": False}
    (repo / "bench" / "spec.yaml").write_text("name: y\n")
    assert workload.__wrapped__(repo / "bench")["git_dirty"] is True
    assert workload.__wrapped__(tmp_path / "elsewhere") == {}


def test_job_images_are_the_containers_images() -> None:
    manifest = {"spec": {"pytorchReplicaSpecs": {
        "Master": {"template": {"spec": {"containers": [{"name": "m", "image": "train:1"}]}}},
        "Worker": {"template": {"spec": {"initContainers": [{"image": "init:2"}],
                                         "containers": [{"name": "w", "image": "train:1"}]}}}}}}
    assert job_images(manifest) == ["train:1", "init:2"]


BASE = {"format_version": 1, "host": "a", "cpu_model": "EPYC", "packages": {"torch": "2.3.0", "kubebench": "0.1.0"},
        "gpus": [{"model": "H100", "memory_gb": 80.0}], "git_commit": "abc"}


def test_differences_name_each_field_that_differs() -> None:
    other = {**BASE, "host": "b", "format_version": 2, "packages": {"torch": "2.4.1", "kubebench": "0.1.0"},
             "gpus": [{"model": "H200", "memory_gb": 141.0}], "node": "n1"}
    assert provenance_differences(BASE, dict(BASE)) == []
    assert provenance_differences(BASE, other) == [
        "host: a ≠ b", "node: (none) ≠ n1", "gpus: H100 80.0 ≠ H200 141.0", "packages.torch: 2.3.0 ≠ 2.4.1",
    ]
    assert provenance_differences({}, BASE) == ["provenance: not recorded for one side (runs of an older kubebench)"]
    assert provenance_differences({}, {}) == []
