"""``kind: Serving`` for Kubernetes: the Deployment, Service and load-generator Job derived from the
rendered manifest (after the Kubernetes backend's decorations) validate strictly against the
Kubernetes schemas and are wired together (selector, URL, probes, claim, ids)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubebench.errors import SpecError
from kubebench.render.serving import expand_vars, kubernetes_objects
from kubebench.runner import make_backend, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec

kubernetes_validate = pytest.importorskip("kubernetes_validate")

SPEC = """
name: serving
job:
  kind: Serving
  workers: 2
  image: registry.example/kubebench:1
  command: [python, -m, kubebench.workloads.llm_load, --rate, "{{ rate }}", --duration, "60"]
  resources: {cpu: 1}
  server:
    image: vllm/vllm-openai:v0.11.0
    command: [vllm, serve, facebook/opt-125m, --port, "$(KUBEBENCH_SERVER_PORT)", --max-num-seqs, "{{ batch }}"]
    replicas: 3
    port: 8000
    readiness: /v1/models
    startup_timeout: 10m
    resources: {gpu: 1}
parameters: {rate: 4, batch: 16}
backend:
  kind: kubernetes
  namespace: team-a
  service_account: bench-runner
  storage: {claim: shared-data, mount_path: /mnt/kb}
"""


@pytest.fixture
def objects(tmp_path: Path) -> list[dict]:
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SPEC).lstrip())
    loaded = load_spec(tmp_path / "spec.yaml")
    experiment = plan_experiment(loaded, settings(home=tmp_path / "home"), "serving-202601010000-abcd")
    manifest = experiment.render(experiment.plan.runs[0], make_backend(loaded)).manifest
    assert manifest["kind"] == "Serving"
    return kubernetes_objects(manifest)


def test_objects_validate_strictly(objects: list[dict]) -> None:
    version = kubernetes_validate.latest_version()
    assert [o["kind"] for o in objects] == ["Deployment", "Service", "Job"]
    for doc in objects:
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_service_selects_the_server_pods_and_the_load_is_told_its_url(objects: list[dict]) -> None:
    deployment, service, job = objects
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(pod_labels[k] == v for k, v in service["spec"]["selector"].items())
    assert deployment["spec"]["selector"]["matchLabels"] == service["spec"]["selector"]
    assert deployment["spec"]["replicas"] == 3 and job["spec"]["completions"] == job["spec"]["parallelism"] == 2
    (load,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in load["env"]}
    assert env["KUBEBENCH_SERVER_URL"] == f"http://{service['metadata']['name']}:8000/v1"
    assert env["KUBEBENCH_EXP_OUTPUT_PATH"].startswith("/mnt/kb/") and env["KUBEBENCH_RUN_ID"]
    assert load["command"][-3:] == ["4", "--duration", "60"]


def test_the_server_is_probed_listens_everywhere_and_gets_its_gpu(objects: list[dict]) -> None:
    deployment = objects[0]
    pod = deployment["spec"]["template"]["spec"]
    (server,) = pod["containers"]
    assert server["readinessProbe"]["httpGet"] == {"path": "/v1/models", "port": 8000}
    # killed by the kubelet only after kubebench's own startup timeout (10m): its first probe is at once
    assert (server["startupProbe"]["failureThreshold"] - 1) * server["startupProbe"]["periodSeconds"] >= 600
    env = {e["name"]: e["value"] for e in server["env"]}
    assert env["KUBEBENCH_SERVER_HOST"] == "0.0.0.0" and env["KUBEBENCH_SERVER_PORT"] == "8000"
    assert "$(KUBEBENCH_SERVER_PORT)" in server["command"]  # the kubelet expands it from env
    assert "16" in server["command"]
    assert server["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert pod["restartPolicy"] == "Always" and pod["serviceAccountName"] == "bench-runner"
    assert any(v.get("persistentVolumeClaim", {}).get("claimName") == "shared-data" for v in pod["volumes"])


def test_every_object_carries_the_run_labels_and_namespace(objects: list[dict]) -> None:
    for doc in objects:
        labels = doc["metadata"]["labels"]
        assert labels["kubebench.io/experiment"] == "serving-202601010000-abcd" and labels["kubebench.io/run"]
        assert doc["metadata"]["namespace"] == "team-a"
    assert objects[2]["spec"]["backoffLimit"] == 0 and objects[2]["spec"]["activeDeadlineSeconds"] > 0


def test_only_a_serving_manifest_converts() -> None:
    with pytest.raises(SpecError, match="not a Serving manifest"):
        kubernetes_objects({"kind": "Job", "metadata": {"name": "x"}})


def test_variables_are_expanded_as_the_kubelet_does() -> None:
    env = {"PORT": "8123"}
    assert expand_vars(("--port", "$(PORT)", "$(MISSING)", "$$(PORT)", "a$(PORT)b"), env) == (
        "--port", "8123", "$(MISSING)", "$(PORT)", "a8123b")


def test_render_prints_what_each_backend_creates(tmp_path: Path, monkeypatch) -> None:
    import yaml
    from typer.testing import CliRunner

    from kubebench.cli import app

    (tmp_path / "spec.yaml").write_text(textwrap.dedent(SPEC).lstrip())
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    kinds = {}
    for backend in ("kubernetes", "local"):
        done = CliRunner().invoke(app, ["render", str(tmp_path / "spec.yaml"), "--backend", backend])
        assert done.exit_code == 0, done.output
        kinds[backend] = [d["kind"] for d in yaml.safe_load_all(done.stdout)]
    assert kinds == {"kubernetes": ["Deployment", "Service", "Job"], "local": ["Serving"]}
