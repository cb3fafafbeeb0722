"""Fixtures of the Kubernetes tests: the API emulator on loopback, the operator stand-in, a kubeconfig
pointing at them, and a helper running a spec through kubebench's runner."""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support.cluster import core_schemas
from support.cluster.cluster import NAMESPACE, Cluster, Ran
from support.cluster.emulator import Emulator
from support.cluster.kueue import DEFAULT_FRAMEWORKS, Kueue
from support.cluster.schemas import CRD_FILES, CRDS, crds_available, field_check, prune
from support.cluster.standin import CLAIMS, OperatorStandIn

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cluster(**options): options of the emulated cluster: training_operator "
                                       "('1.9.3', '1.9.4'), trainer ('2.1', '2.3'), kueue (capacity), kubernetes "
                                       "(the API server's minor version, '1.31' … the newest schemas), gang (the training operator's "
                                       "--gang-scheduler-name and that scheduler: 'volcano', 'scheduler-plugins'), "
                                       "kueue_frameworks (Kueue's integrations.frameworks; default: v0.19.2's), "
                                       "kueue_quota (resource → quota of its ClusterQueue), trainer_runtimes "
                                       "(False: Trainer without its runtimes)")


def _checkers(trainer: str = "2.3") -> dict:
    """Schema checks of the custom resources: the vendored CRDs (the emulator checks core objects itself)."""
    if not crds_available():
        # Without validators the emulator would accept any custom resource: fail, never degrade silently.
        pytest.fail(f"CRD schemas missing from {CRDS} (vendored in tests/data/crds; $KUBEBENCH_CRDS overrides)")
    keys = {(g, v, k.lower() + "s") for g, v, k in CRD_FILES}
    return {key: (lambda doc, t=trainer: field_check(doc, t)) for key in keys}


def _options(request: pytest.FixtureRequest) -> dict:
    marker = request.node.get_closest_marker("cluster")
    return dict(marker.kwargs) if marker else {}


@pytest.fixture
def emulator(request: pytest.FixtureRequest):
    """A started API emulator checking objects against the vendored schemas (CRDs and built-in kinds)."""
    options = _options(request)
    emu = Emulator(_checkers(options.get("trainer", "2.3")), prune,
                   options.get("kubernetes", core_schemas.OLDEST)).start()
    yield emu
    emu.stop()
    assert not emu.errors, emu.errors


@pytest.fixture
def cluster(emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """The emulator with the stand-in running jobs, a kubeconfig in $KUBECONFIG (namespace
    ``bench``), the claim ``kubebench`` and KUBEBENCH_HOME on the claim's local folder; a
    ``cluster`` marker chooses the operators' versions and Kueue."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("KUBEBENCH_HOME", str(home))
    monkeypatch.delenv("KUBEBENCH_STORE", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    kubeconfig = emulator.kubeconfig(tmp_path / "kubeconfig", NAMESPACE)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    emulator.namespace(NAMESPACE)
    emulator.store.create(CLAIMS, NAMESPACE, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "kubebench"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}})
    options = _options(request)
    kueue = None
    if options.get("kueue"):
        kueue = Kueue(options["kueue"], options.get("kueue_frameworks", DEFAULT_FRAMEWORKS), options.get("kueue_quota"))
    operator = OperatorStandIn(emulator, home, tmp_path, tmp_path / "node-logs", kueue=kueue,
                               training_operator=options.get("training_operator", "1.9.4"),
                               gang_scheduler=options.get("gang"),
                               trainer=options.get("trainer", "2.3")).start()
    if kueue is not None:
        kueue.install(operator)
    if options.get("trainer_runtimes", True):  # Trainer's runtimes overlay (or the chart's runtimes.*.enabled)
        operator.trainer.install_runtimes()
    yield Cluster(emulator, operator, home, kubeconfig)
    operator.stop()
    assert all(p.poll() is not None for p in operator.processes())
    assert not emulator.errors, emulator.errors
    assert not operator.errors, operator.errors


@pytest.fixture
def run_spec(tmp_path: Path):
    """Run a spec (YAML text) through kubebench's runner in this process; returns a :class:`Ran`."""

    def _run(text: str, experiment_id: str = "exp-1", parallelism: int | None = None) -> Ran:
        path = tmp_path / "spec.yaml"
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        config = settings()
        store = open_store(config.store_url)
        experiment = plan_experiment(load_spec(path), config, experiment_id)
        execute(experiment, store, parallelism=parallelism)
        return Ran(store, experiment_id, store.runs(experiment_id, include_warmup=True))

    return _run


@pytest.fixture
def fake_mpirun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``mpirun`` on $PATH that runs its command once (no Open MPI here): enough for a launcher."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "mpirun"
    # `mpirun -np N python …` → this interpreter, as the local backend maps `python`.
    script.write_text(f'#!/bin/sh\nshift 2\n[ "$1" = python ] && shift && exec {sys.executable} "$@"\nexec "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return script


@pytest.fixture(autouse=True)
def no_watch_left_behind():
    """Every test ends its watches (the backend closes them when its experiment is done)."""
    yield
    deadline = time.monotonic() + 5
    while any(t.name.startswith("kubebench-watch") for t in threading.enumerate()):
        assert time.monotonic() < deadline, [t.name for t in threading.enumerate()]
        time.sleep(0.05)
