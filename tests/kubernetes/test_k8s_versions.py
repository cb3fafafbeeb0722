"""Every core object kubebench makes for a cluster is valid on every Kubernetes the Kubeflow operators
support, 1.31 to the newest: against that version's published OpenAPI schema as written (what Helm,
kubeconform and kubectl's client-side validation check, strict: no unknown field), and as that
version's API server admits it (defaults, fields its feature gates drop, the Go validation's rules;
see ``support.cluster.core_rules``).

The objects: every ``kubebench deploy manifests`` variant, every example rendered for the kubernetes
backend (the Serving examples as their Deployment, Service and Job), the pod templates inside the
Kubeflow custom resources, the ConfigMap of a shipped spec folder and ``kubebench doctor``'s probe Job.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from support.cluster import core_schemas
from typer.testing import CliRunner

from kubebench import registry
from kubebench.backends.kube import preflight, specmap
from kubebench.backends.kube.config import KubernetesConfig
from kubebench.cli import app
from kubebench.render import kinds
from kubebench.runner import make_backend, plan_experiment
from kubebench.settings import settings
from kubebench.spec.files import spec_files_of
from kubebench.spec.load import load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPEC = EXAMPLES / "kubebench-v1-compat" / "benchmark.yaml"
DEPLOY_VARIANTS = {
    "plain": [],
    "spec": ["--spec", str(SPEC), "--id", "nightly", "--label", "version=1.4.2"],
    "schedule": ["--schedule", "0 2 * * *", "--spec", str(SPEC)],
    "operator": ["--operator"],
    "external store, no dashboard, no node access": ["--store-url", "postgresql+psycopg://kb@db:5432/kb",
                                                      "--no-dashboard", "--no-node-access", "--storage-class", "nfs"],
}


def deploy(args: list[str]) -> list[dict]:
    result = CliRunner().invoke(app, ["deploy", "manifests", *args])
    assert result.exit_code == 0, result.output
    return [d for d in yaml.safe_load_all(result.output) if d]


def example_specs() -> list[Path]:
    """Every example spec whose job can run on a cluster (all but kind: Process)."""
    specs = [p for p in sorted(EXAMPLES.glob("*/*.yaml"))
             if isinstance(d := yaml.safe_load(p.read_text()), dict) and "job" in d]
    return [p for p in specs if (yaml.safe_load(p.read_text())["job"].get("kind") or "") != "Process"]


def example_objects(spec: Path, home: Path) -> list[dict]:
    """What the kubernetes backend creates for one run of every trial of an example."""
    params = next(spec.parent.glob("params*.yaml"), None) if spec.name == "benchmark.yaml" else None
    loaded = load_spec(spec, params_file=params)
    backend = registry.load("backends", "kubernetes").Config(storage={"claim": "shared", "mount_path": "/mnt/kb"})
    loaded = loaded.model_copy(update={"spec": loaded.spec.model_copy(update={"backend": backend})})
    experiment = plan_experiment(loaded, settings(home=home), "example-202601010000-abcd")
    chosen, objects, seen = make_backend(loaded), [], set()
    for run in experiment.plan.runs:
        if run.trial.id not in seen:
            seen.add(run.trial.id)
            objects += chosen.objects(experiment.render(run, chosen).manifest)
    return objects


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Every object, by where it comes from (rendered once for all versions)."""
    home = tmp_path_factory.mktemp("home")
    found = {f"deploy manifests ({name})": deploy(args) for name, args in DEPLOY_VARIANTS.items()}
    found |= {f"example {p.parent.name}/{p.name}": example_objects(p, home) for p in example_specs()}
    config = KubernetesConfig()
    found["doctor's probe"] = [preflight.probe_job(config, "0123456789ab", ".kubebench-doctor-0123456789ab", "busybox:1.36")]
    found["shipped spec folder"] = [specmap.config_map("example-202601010000-abcd", spec_files_of(SPEC))]
    found["a Benchmark's runner, spec and schedule"] = benchmark_children()
    return found


def benchmark_children() -> list[dict]:
    """What the Benchmark controller makes: the spec ConfigMap, the runner Job, a schedule's CronJob."""
    from kubebench.operator import children
    from kubebench.operator.resource import BenchmarkResourceSpec

    body = yaml.safe_load(SPEC.read_text())
    cr = {"metadata": {"name": "nightly", "namespace": "bench", "uid": "0123456789ab-cdef"},
          "spec": {"benchmark": body, "runner": {"storeSecretRef": {"name": "store"}}}}
    spec = BenchmarkResourceSpec.model_validate(cr["spec"])
    scheduled = {**cr, "spec": {**cr["spec"], "schedule": {"cron": "0 2 * * *"}}}
    return [children.spec_map(cr, spec), children.runner_job(cr, spec),
            children.cron_job(scheduled, BenchmarkResourceSpec.model_validate(scheduled["spec"]))]


def test_every_variant_and_example_is_there(made: dict[str, list[dict]]) -> None:
    kinds_made = {d["kind"] for docs in made.values() for d in docs}
    assert {"Namespace", "PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding", "ClusterRole",
            "ClusterRoleBinding", "Service", "StatefulSet", "NetworkPolicy", "ConfigMap", "Job", "CronJob",
            "Deployment", "PyTorchJob", "TFJob", "MPIJob", "TrainJob"} <= kinds_made
    assert sum(len(docs) for docs in made.values()) >= 50
    assert len([k for k in made if k.startswith("example")]) >= 8


@pytest.mark.parametrize("version", core_schemas.VERSIONS)
def test_every_object_is_valid_on_every_kubernetes_from_1_31(made: dict[str, list[dict]], version: str) -> None:
    problems = []
    for source, docs in made.items():
        for doc in docs:
            what = f"{source}: {doc['kind']} {doc['metadata']['name']}"
            if core_schemas.is_builtin(doc):
                problems += [f"{what}: {e}" for e in core_schemas.published_errors(doc, version)]
                unknown, invalid = core_schemas.admit(copy.deepcopy(doc), version)
                problems += [f"{what}: unknown field {u} (refused under fieldValidation=Strict)" for u in unknown]
                problems += [f"{what}: refused: {e}" for e in invalid]
            else:  # a Kubeflow job: its pod templates are core PodTemplateSpecs
                template = core_schemas.definition_validator("io.k8s.api.core.v1.PodTemplateSpec", version)
                for i, pod in enumerate(kinds.pod_templates(copy.deepcopy(doc))):
                    unknown, invalid = core_schemas.split(template, pod, f"pod template {i}")
                    problems += [f"{what}: unknown field {u}" for u in unknown] + [f"{what}: {e}" for e in invalid]
    assert problems == [], f"Kubernetes {version}:\n" + "\n".join(problems)
