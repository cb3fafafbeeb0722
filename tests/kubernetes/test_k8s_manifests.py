"""Every manifest kubebench can produce for Kubernetes validates against the real schemas: the CRDs
in ``tests/data/crds/`` (served version, strict) and, for batch/v1 Job and the deploy manifests, the
Kubernetes OpenAPI schema. Also: what the backend adds to every pod (claim, service account …)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from support.cluster.schemas import errors_of
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.errors import SpecError
from kubebench.render import kinds
from kubebench.render.trainjob import PATCH_MANAGER
from kubebench.runner import make_backend, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec

EXP = "bench-202401010000-abcd"
BACKEND = """backend:
  kind: kubernetes
  namespace: team-a
  service_account: bench-runner
  queue: gpu-queue
  storage: {claim: shared-data, mount_path: /mnt/kb}
"""
SHORTHAND = """
name: bench
job:
  kind: %(kind)s
  workers: %(workers)s
  image: registry.example/train:1
  command: [python, train.py, --epochs, 2]
  env: {LR: 0.1}
  resources: {cpu: 2, memory: 4Gi, gpu: 1}
  node_selector: {nvidia.com/gpu.product: A100, pool: "{{ pool }}"}
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  %(extra)s
parameters: {pool: training}
timeout: 20m
"""


def rendered(tmp_path: Path, text: str, backend: str = BACKEND) -> dict:
    """The manifest of the first run, as `kubebench render` and `kubebench run` produce it."""
    home = tmp_path / "home"
    (tmp_path / "spec.yaml").write_text(textwrap.dedent(text).lstrip() + backend, encoding="utf-8")
    loaded = load_spec(tmp_path / "spec.yaml")
    experiment = plan_experiment(loaded, settings(home=home), EXP)
    return experiment.render(experiment.plan.runs[0], make_backend(loaded)).manifest


def shorthand(kind: str, workers: int, extra: str = "") -> str:
    return SHORTHAND % {"kind": kind, "workers": workers, "extra": extra}


def backend_for(extra: str) -> str:
    """The backend of the cases: with a Kueue queue, but for the MPIJob version Kueue does not manage."""
    return BACKEND.replace("  queue: gpu-queue\n", "") if "kubeflow.org/v1" in extra else BACKEND


CASES = [("PyTorchJob", ""), ("TFJob", ""), ("JAXJob", ""), ("XGBoostJob", ""), ("MPIJob", ""),
         ("MPIJob", "mpi_api_version: kubeflow.org/v1"), ("TrainJob", ""), ("TrainJob", "runtime: jax-distributed"),
         ("TrainJob", "runtime: xgboost-distributed"), ("Job", "")]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize(("kind", "extra"), CASES)
def test_every_shorthand_kind_validates_against_its_schema(tmp_path: Path, kind: str, extra: str, workers: int) -> None:
    manifest = rendered(tmp_path, shorthand(kind, workers, extra), backend_for(extra))
    assert manifest["kind"] == kind
    assert errors_of(manifest) == []


def pod_specs(manifest: dict) -> list[dict]:
    return [t["spec"] for t in kinds.pod_templates(manifest)]


def containers_of(manifest: dict) -> list[dict]:
    return [c for spec in pod_specs(manifest) for c in spec["containers"]]


@pytest.mark.parametrize(("kind", "extra"), CASES)
def test_every_pod_gets_the_claim_the_account_and_the_scheduling(tmp_path: Path, kind: str, extra: str) -> None:
    manifest = rendered(tmp_path, shorthand(kind, 2, extra), backend_for(extra))
    assert manifest["metadata"]["namespace"] == "team-a"
    assert manifest["metadata"]["labels"].get("kueue.x-k8s.io/queue-name") == (None if "v1" in extra else "gpu-queue")
    for spec in pod_specs(manifest):
        assert {"name": "kubebench-storage", "persistentVolumeClaim": {"claimName": "shared-data"}} in spec["volumes"]
        assert spec["serviceAccountName"] == "bench-runner"
        assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "A100", "pool": "training"}
        assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for container in containers_of(manifest):
        assert claim_mounts(container) == run_folders(manifest)


@pytest.mark.parametrize(("kind", "extra"), CASES)
def test_every_pod_passes_podsecurity_restricted_unless_told_otherwise(tmp_path: Path, kind: str, extra: str) -> None:
    # review 2026-12-02 M-H: in a namespace enforcing restricted (OpenShift, hardened clusters) no pod ran
    from support.cluster.podsecurity import violations

    manifest = rendered(tmp_path, shorthand(kind, 2, extra), backend_for(extra))
    for spec in pod_specs(manifest):
        if kind == "TrainJob":  # the runtime patch: what it carries goes onto the runtime's node pod
            spec = {**spec, "containers": [{**c, "name": "node"} for c in spec["containers"]]}
        assert violations(spec) == [], spec
        assert spec["securityContext"] == {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
    assert errors_of(manifest) == []  # valid in every CRD, the TrainJob's runtime patch included
    unrestricted = backend_for(extra) + "  pod_security_context: {runAsUser: 0}\n  container_security_context: {}\n"
    manifest = rendered(tmp_path, shorthand(kind, 2, extra), unrestricted)
    assert all(spec["securityContext"] == {"runAsUser": 0} for spec in pod_specs(manifest))
    assert all("securityContext" not in c for c in containers_of(manifest))


def test_a_templates_own_security_context_is_kept(tmp_path: Path) -> None:
    (tmp_path / "job.yaml.j2").write_text(textwrap.dedent("""
        apiVersion: batch/v1
        kind: Job
        spec:
          template:
            spec:
              securityContext: {runAsUser: 2000, runAsNonRoot: true}
              restartPolicy: Never
              containers:
                - {name: main, image: busybox, command: [sleep, "1"], securityContext: {readOnlyRootFilesystem: true}}
        """))
    manifest = rendered(tmp_path, "name: b\njob: {template: job.yaml.j2}\n")
    (spec,) = pod_specs(manifest)
    assert spec["securityContext"] == {"runAsUser": 2000, "runAsNonRoot": True}
    assert spec["containers"][0]["securityContext"] == {"readOnlyRootFilesystem": True}


def test_doctors_probe_pod_passes_podsecurity_restricted() -> None:
    from support.cluster.podsecurity import violations

    from kubebench.backends.kube.config import KubernetesConfig
    from kubebench.backends.kube.preflight import probe_job

    job = probe_job(KubernetesConfig(), "abc", ".kubebench-doctor-abc", "busybox:1.36")
    assert violations(job["spec"]["template"]["spec"]) == []


def claim_mounts(container: dict) -> list[tuple[str, str]]:
    return [(m["mountPath"], m.get("subPath", "")) for m in container["volumeMounts"] if m["name"] == "kubebench-storage"]


def run_folders(manifest: dict) -> list[tuple[str, str]]:
    """Only the run's folder and the data folder of the claim, never the whole claim (other runs, a store)."""
    run = f"experiments/{EXP}/{manifest['metadata']['labels']['kubebench.io/run']}"
    return [(f"/mnt/kb/{run}", run), ("/mnt/kb/data", "data")]


@pytest.mark.parametrize(("kind", "extra"), CASES)
def test_every_replica_gets_the_env_the_ids_the_resources_and_a_deadline(tmp_path: Path, kind: str, extra: str) -> None:
    manifest = rendered(tmp_path, shorthand(kind, 2, extra), backend_for(extra))
    labels = manifest["metadata"]["labels"]
    assert labels["kubebench.io/experiment"] == EXP and labels["kubebench.io/trial"] and labels["kubebench.io/run"]
    for template in kinds.pod_templates(manifest):
        assert {k: v for k, v in template["metadata"]["labels"].items() if k.startswith("kubebench.io/")} == \
            {k: v for k, v in labels.items() if k.startswith("kubebench.io/")}
    run_id = labels["kubebench.io/run"]
    for group in kinds.replica_groups(manifest):
        container = group.template["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["KUBEBENCH_EXP_PATH"] == f"/mnt/kb/experiments/{EXP}/{run_id}"
        assert env["KUBEBENCH_DATA_ROOT"] == "/mnt/kb/data" and env["LR"] == "0.1"
    amounts = {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}
    resources = manifest["spec"]["trainer"]["resourcesPerNode"] if kind == "TrainJob" else containers_of(manifest)[-1]["resources"]
    assert resources == {"requests": amounts, "limits": amounts}  # (an MPIJob's worker: its launcher runs no rank)
    spec = manifest["spec"]
    assert (spec.get("runPolicy") or spec)["activeDeadlineSeconds"] == 1320  # after kubebench's own 20m


def test_mpijob_api_version_is_chosen(tmp_path: Path) -> None:
    assert rendered(tmp_path, shorthand("MPIJob", 2))["apiVersion"] == "kubeflow.org/v2beta1"
    v1 = "mpi_api_version: kubeflow.org/v1"
    assert rendered(tmp_path, shorthand("MPIJob", 2, v1), backend_for(v1))["apiVersion"] == "kubeflow.org/v1"


TEMPLATES = {
    "tfjob-ps.yaml.j2": """
        apiVersion: kubeflow.org/v1
        kind: TFJob
        metadata: {name: "{{ kubebench.name }}"}
        spec:
          tfReplicaSpecs:
            Chief: {replicas: 1, restartPolicy: Never, template: {spec: {containers: [{name: tensorflow, image: tf:2, command: [python, t.py]}]}}}
            PS: {replicas: {{ ps }}, restartPolicy: Never, template: {spec: {containers: [{name: tensorflow, image: tf:2, command: [python, t.py]}]}}}
            Worker: {replicas: 2, restartPolicy: Never, template: {spec: {containers: [{name: tensorflow, image: tf:2, command: [python, t.py]}]}}}
    """,
    "pytorch-elastic.yaml.j2": """
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: "{{ kubebench.name }}", labels: {team: ml}}
        spec:
          elasticPolicy: {rdzvBackend: c10d, minReplicas: 1, maxReplicas: 3}
          nprocPerNode: "2"
          runPolicy: {activeDeadlineSeconds: 300, cleanPodPolicy: Running}
          pytorchReplicaSpecs:
            Worker:
              replicas: 2
              restartPolicy: OnFailure
              template:
                spec:
                  initContainers: [{name: fetch, image: busybox, command: [sh, -c, "true"]}]
                  containers: [{name: pytorch, image: pt:2, command: [torchrun, t.py], resources: {limits: {nvidia.com/gpu: 1}}}]
    """,
    "mpi-v1.yaml.j2": """
        apiVersion: kubeflow.org/v1
        kind: MPIJob
        metadata: {name: "{{ kubebench.name }}"}
        spec:
          slotsPerWorker: 2
          mpiReplicaSpecs:
            Launcher: {replicas: 1, template: {spec: {containers: [{name: mpi-launcher, image: hvd:1, command: [mpirun, -np, "4", python, t.py]}]}}}
            Worker: {replicas: 2, template: {spec: {containers: [{name: mpi-worker, image: hvd:1}]}}}
    """,
    "mpi-v2.yaml.j2": """
        apiVersion: kubeflow.org/v2beta1
        kind: MPIJob
        metadata: {name: "{{ kubebench.name }}"}
        spec:
          slotsPerWorker: 1
          mpiImplementation: Intel
          launcherCreationPolicy: WaitForWorkersReady
          runPolicy: {cleanPodPolicy: Running}
          mpiReplicaSpecs:
            Launcher: {replicas: 1, template: {spec: {containers: [{name: launcher, image: hvd:1, command: [mpirun, python, t.py]}]}}}
            Worker: {replicas: 2, template: {spec: {containers: [{name: worker, image: hvd:1}]}}}
    """,
    "trainjob.yaml.j2": """
        apiVersion: trainer.kubeflow.org/v1alpha1
        kind: TrainJob
        metadata: {name: "{{ kubebench.name }}"}
        spec:
          runtimeRef: {name: deepspeed-distributed, kind: ClusterTrainingRuntime}
          trainer: {image: ds:1, command: [deepspeed, t.py], numNodes: 2, numProcPerNode: 4}
          runtimePatches:
            - manager: example.com/other
              trainingRuntimeSpec: {template: {spec: {replicatedJobs: [{name: node, template: {spec: {template: {spec: {imagePullSecrets: [{name: regcred}]}}}}}]}}}
    """,
    "batch.yaml.j2": """
        apiVersion: batch/v1
        kind: Job
        metadata: {name: "{{ kubebench.name }}"}
        spec:
          parallelism: 2
          completions: 4
          template:
            spec:
              restartPolicy: OnFailure
              containers: [{name: bench, image: busybox, command: [sh, -c, "echo {{ ps }}"], resources: {requests: {cpu: 500m}}}]
    """,
}
TEMPLATE_SPEC = "name: bench\njob: {template: %s}\nparameters: {ps: 2}\ntimeout: 90s\n"


@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_templates_of_every_kind_validate_after_the_backend_decorates_them(tmp_path: Path, template: str) -> None:
    (tmp_path / template).write_text(textwrap.dedent(TEMPLATES[template]).lstrip())
    manifest = rendered(tmp_path, TEMPLATE_SPEC % template, backend_for("kubeflow.org/v1" if "mpi-v1" in template else ""))
    assert errors_of(manifest) == []
    for container in containers_of(manifest):
        assert claim_mounts(container) == run_folders(manifest)
    for pod in kinds.pod_templates(manifest):  # no Istio sidecar outliving the job's container
        assert pod["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
    spec = manifest["spec"]
    deadline = (spec.get("runPolicy") or spec)["activeDeadlineSeconds"]
    assert deadline == (300 if template.startswith("pytorch") else 150)  # the template's own is kept


def test_a_template_trainjob_keeps_its_own_runtime_patch(tmp_path: Path) -> None:
    (tmp_path / "t.j2").write_text(textwrap.dedent(TEMPLATES["trainjob.yaml.j2"]).lstrip())
    patches = rendered(tmp_path, TEMPLATE_SPEC % "t.j2")["spec"]["runtimePatches"]
    assert [p["manager"] for p in patches] == ["example.com/other", PATCH_MANAGER]


def test_the_validators_catch_mistakes() -> None:
    good = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "p", "image": "i"}]}}}}}}
    assert errors_of(good) == []
    typo = {**good, "spec": {"pytorchReplicaSpecs": {"Master": {"replica": 1, "template": {}}}}}
    assert any("'replica' was unexpected" in e for e in errors_of(typo))
    wrong_type = {**good, "spec": {**good["spec"], "runPolicy": {"activeDeadlineSeconds": "soon"}}}
    assert any("is not of type 'integer'" in e for e in errors_of(wrong_type))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"},
           "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i", "comand": ["x"]}]}}}}
    assert any("spec.template.spec.containers.0.comand: unknown field" in e for e in errors_of(job))


def test_process_kind_cannot_run_on_kubernetes(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="job kind 'Process'.*cannot run on Kubernetes"):
        rendered(tmp_path, shorthand("Process", 1))


GPU8 = """
name: gpu8
job:
  kind: %s
  workers: 2
  image: registry.example/train:1
  command: [python, -m, kubebench.workloads.cnn, --model, resnet50]
  resources: {gpu: 8}
"""


@pytest.mark.parametrize("kind", ["PyTorchJob", "TrainJob", "MPIJob"])
def test_render_of_two_8_gpu_workers_shows_8_processes_per_pod_and_a_launcher_without_gpus(
        tmp_path: Path, monkeypatch, kind: str) -> None:
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    (tmp_path / "spec.yaml").write_text(GPU8 % kind)
    result = CliRunner().invoke(app, ["render", str(tmp_path / "spec.yaml"), "--backend", "kubernetes"])
    assert result.exit_code == 0, result.output
    (doc,) = [d for d in yaml.safe_load_all(result.output) if d]
    assert errors_of(doc) == []  # strict, against the vendored CRD
    spec, cnn = doc["spec"], ["-m", "kubebench.workloads.cnn", "--model", "resnet50"]
    if kind == "PyTorchJob":  # two pods (the master and a worker), each torchrun with 8 ranks
        assert spec["nprocPerNode"] == "8"
        for rtype in ("Master", "Worker"):
            (container,) = spec["pytorchReplicaSpecs"][rtype]["template"]["spec"]["containers"]
            assert container["command"] == ["torchrun", "--nproc-per-node=8", *cnn]
            assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    elif kind == "TrainJob":
        trainer = spec["trainer"]
        assert (trainer["numNodes"], trainer["numProcPerNode"]) == (2, 8)
        # run in the spec's folder, which a runtime patch cannot make its working directory
        assert trainer["command"] == ["sh", "-c", 'cd "$0" && exec "$@"', "/etc/kubebench/spec",
                                      "torchrun", "--nproc-per-node=8", *cnn]
    else:  # 16 ranks over 2 workers of 8 slots; the launcher runs none and holds no GPU
        assert spec["slotsPerWorker"] == 8 and spec["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
        (launcher,) = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
        assert launcher["command"] == ["mpirun", "-np", "16", "python", *cnn]
        assert launcher["resources"] == {"requests": {"cpu": "250m", "memory": "256Mi"}}
        (worker,) = spec["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
        assert worker["resources"]["limits"] == {"nvidia.com/gpu": "8"}


def test_data_outside_the_claim_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="is not on the shared storage.*storage.local_path"):
        rendered(tmp_path, shorthand("Job", 1) + "data_root: ../elsewhere\n")


def test_render_cli_prints_valid_manifests_for_the_kubernetes_backend(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBEBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(shorthand("PyTorchJob", 2)) + "backend: local\n")
    result = CliRunner().invoke(app, ["render", str(spec), "--backend", "kubernetes", "--set", "pool=[a, b]"])
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.output) if d]
    assert len(docs) == 2
    for doc in docs:
        assert errors_of(doc) == []
        assert doc["metadata"]["namespace"] == "default"  # no kubeconfig: the default namespace
        assert doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"] \
            == {"claimName": "kubebench"}


def deploy(*args: str) -> list[dict]:
    result = CliRunner().invoke(app, ["deploy", "manifests", *args])
    assert result.exit_code == 0, result.output
    return list(yaml.safe_load_all(result.output))


def pod_templates_of(doc: dict) -> list[dict]:
    spec = doc.get("spec") or {}
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return [spec["template"]] if "template" in spec else []


def test_deploy_manifests_validate_and_grant_only_what_kubebench_uses(tmp_path: Path) -> None:
    spec = tmp_path / "benchmark.yaml"
    spec.write_text("name: b\njob: {kind: Job, command: [python, post.py]}\nbackend: kubernetes\n")
    (tmp_path / "params.yaml").write_text("batch_size: [1, 2]\n")
    (tmp_path / "post.py").write_text("print('a script the spec needs')\n")
    docs = deploy("-n", "ml", "--image", "reg/kubebench:1", "--storage-size", "50Gi", "--spec", str(spec), "--id", "nightly")
    assert [d["kind"] for d in docs] == ["Namespace", "PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding",
                                         "ClusterRole", "ClusterRoleBinding",
                                         "ServiceAccount", "Role", "RoleBinding", "Job",  # makes the store's Secret
                                         "Service", "StatefulSet", "NetworkPolicy",
                                         "ConfigMap", "Job", "ServiceAccount", "Deployment", "Service"]
    for doc in docs:
        assert errors_of(doc) == [], doc["kind"]
        assert doc["metadata"].get("namespace", "ml") == "ml"
    by_kind = {d["kind"]: d for d in docs if d["metadata"]["name"] in ("kubebench", "kubebench-spec")
               or d["kind"] in ("ClusterRole", "Deployment", "Job") and "store-secret" not in d["metadata"]["name"]}
    assert by_kind["PersistentVolumeClaim"]["spec"]["resources"]["requests"]["storage"] == "50Gi"
    role = by_kind["Role"]
    verbs = {(g, r): set(rule["verbs"]) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}
    assert verbs[("kubeflow.org", "pytorchjobs")] == {"create", "get", "list", "watch", "delete"}
    assert verbs[("", "pods")] == {"get", "list", "watch", "delete"} and verbs[("", "pods/log")] == {"get"}
    assert verbs[("", "events")] == {"list"}
    # kind: Serving: the server's Deployment is followed as the jobs are, its Service only made and deleted
    assert verbs[("apps", "deployments")] == {"create", "get", "list", "watch", "delete"}
    assert verbs[("", "services")] == {"create", "get", "delete"}
    assert all("*" not in v and not v & {"update", "patch", "deletecollection"} for v in verbs.values())
    assert by_kind["ClusterRole"]["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    assert by_kind["ConfigMap"]["data"] == {"benchmark.yaml": spec.read_text(), "params.yaml": "batch_size: [1, 2]\n",
                                            "post.py": "print('a script the spec needs')\n"}
    job = by_kind["Job"]
    assert job["metadata"]["name"] == "kubebench-run-nightly"  # stable: a restarted runner resumes it
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "kubebench" and pod["containers"][0]["image"] == "reg/kubebench:1"
    assert pod["containers"][0]["command"] == ["kubebench", "run", "/etc/kubebench/spec/benchmark.yaml",
                                               "--backend", "kubernetes", "--id", "nightly"]
    env = {e["name"]: e.get("value", e.get("valueFrom")) for e in pod["containers"][0]["env"]}
    assert env["KUBEBENCH_STORE"] == {"secretKeyRef": {"name": "kubebench-store", "key": "url"}}  # it holds the password
    dashboard = by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert dashboard["command"][:2] == ["kubebench", "serve"] and "--read-only" in dashboard["command"]


def test_every_pod_kubebench_deploys_is_restricted_and_out_of_istio(tmp_path: Path) -> None:
    from support.cluster.podsecurity import violations

    for args in ([], ["--schedule", "0 2 * * *", "--store-url", "postgresql+psycopg://u@db:5432/k"]):
        docs = deploy(*args)
        templates = [t for d in docs for t in pod_templates_of(d)]
        # runner (Job or CronJob), dashboard, PostgreSQL and the Job making its Secret
        assert len(templates) == (4 if not args else 2)
        for template in templates:
            assert violations(template["spec"]) == [], template["metadata"]["labels"]
            assert template["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
            assert all("runAsUser" not in (c.get("securityContext") or {}) for c in template["spec"]["containers"])
        runner = [t for t in templates if t["metadata"]["labels"]["app.kubernetes.io/component"] == "runner"][0]
        assert "runAsUser" not in runner["spec"]["securityContext"]  # no fixed uid (OpenShift's restricted-v2)


def test_a_scheduled_deployment_is_a_cronjob_starting_a_new_experiment_each_time(tmp_path: Path) -> None:
    docs = deploy("--schedule", "0 2 * * *", "--store-url", "postgresql+psycopg://u@db:5432/k", "--no-dashboard")
    assert [d["kind"] for d in docs][-1] == "CronJob" and "StatefulSet" not in [d["kind"] for d in docs]
    cron = docs[-1]
    assert cron["spec"]["schedule"] == "0 2 * * *" and cron["spec"]["concurrencyPolicy"] == "Forbid"
    command = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    assert "--id" not in command


def test_labels_given_to_deploy_label_every_experiment_the_runner_starts(tmp_path: Path) -> None:
    # the nightly series grows by itself, each point labelled (kubebench history shows the labels)
    for args, kind in ((["--schedule", "@daily"], "CronJob"), ([], "Job")):
        docs = deploy(*args, "--label", "version=1.4.2", "--label", "team=ml", "--no-dashboard")
        runner = [d for d in docs if d["kind"] == kind][-1]
        template = runner["spec"]["jobTemplate"]["spec"]["template"] if kind == "CronJob" else runner["spec"]["template"]
        command = template["spec"]["containers"][0]["command"]
        assert command[:2] == ["kubebench", "run"]
        assert " ".join(command).count("--label") == 2
        assert ["--label", "version=1.4.2", "--label", "team=ml"] == command[command.index("--label"):][:4]


@pytest.mark.parametrize(("args", "message"), [
    (["--label", "no-equals"], "invalid --label 'no-equals': expected KEY=VALUE"),
    (["--schedule", "every night"], "invalid --schedule 'every night': expected five cron fields"),
    (["--schedule", "0 2 * *"], "invalid --schedule '0 2 * *'"),
])
def test_a_bad_label_or_schedule_is_refused_before_any_manifest(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["deploy", "manifests", *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert "apiVersion" not in result.output


def test_the_podsecurity_check_catches_what_restricted_refuses() -> None:
    from support.cluster.podsecurity import violations

    assert violations({"containers": [{"name": "c", "image": "i"}]}) == [
        "c: allowPrivilegeEscalation != false", "c: capabilities must drop ALL", "c: runAsNonRoot != true",
        "c: seccompProfile must be RuntimeDefault or Localhost"]
    assert violations({"hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}], "containers": []}) == [
        "host namespace hostNetwork", "volume h is not an allowed type"]


def test_job_fields_added_for_kubernetes_keep_the_fingerprints_of_older_specs(tmp_path: Path) -> None:
    from kubebench.plan.plan import digest
    from kubebench.render.job import job_fingerprint

    (tmp_path / "spec.yaml").write_text("name: b\njob: {kind: Job, workers: 2, command: [echo]}\n")
    loaded = load_spec(tmp_path / "spec.yaml")
    before = {k: v for k, v in loaded.spec.job.model_dump().items()
              if k not in ("node_selector", "tolerations", "mpi_api_version", "server", "runtime", "gang", "topology",
                           "processes_per_replica")}
    assert job_fingerprint(loaded) == digest(before, None)  # what it was before these fields existed
    (tmp_path / "spec.yaml").write_text("name: b\njob: {kind: Job, workers: 2, command: [echo], node_selector: {a: b}}\n")
    assert job_fingerprint(load_spec(tmp_path / "spec.yaml")) != digest(before, None)
    (tmp_path / "spec.yaml").write_text("name: b\njob: {kind: TrainJob, workers: 2, command: [echo], runtime: jax-distributed}\n")
    trainjob = load_spec(tmp_path / "spec.yaml")
    assert job_fingerprint(trainjob) != digest({**before, "kind": "TrainJob"}, None)  # another runtime, another job
    (tmp_path / "spec.yaml").write_text("name: b\njob: {kind: PyTorchJob, workers: 2, command: [echo], "
                                        "gang: {scheduler: volcano}}\n")
    ganged = load_spec(tmp_path / "spec.yaml")
    assert job_fingerprint(ganged) != digest({**before, "kind": "PyTorchJob"}, None)  # a gang is another job
    (tmp_path / "spec.yaml").write_text("name: b\njob: {kind: Job, workers: 2, command: [echo], processes_per_replica: 1}\n")
    assert job_fingerprint(load_spec(tmp_path / "spec.yaml")) != digest(before, None)  # said: another job


def test_in_the_cluster_job_pods_run_from_the_spec_folder_of_the_configmap(tmp_path: Path, monkeypatch) -> None:
    # what `kubebench deploy manifests --spec …` gives the runner: its spec's folder as a ConfigMap
    monkeypatch.setenv("KUBEBENCH_SPEC_CONFIGMAP", "kubebench-spec")
    monkeypatch.setenv("KUBEBENCH_SPEC_DIR", "/etc/kubebench/spec")
    manifest = rendered(tmp_path, shorthand("Job", 2))
    assert errors_of(manifest) == []
    spec = manifest["spec"]["template"]["spec"]
    assert {"name": "kubebench-spec", "configMap": {"name": "kubebench-spec"}} in spec["volumes"]
    (container,) = spec["containers"]
    assert container["workingDir"] == "/etc/kubebench/spec"  # `python runner.py` finds the example's script
    assert {"name": "kubebench-spec", "mountPath": "/etc/kubebench/spec", "readOnly": True} in container["volumeMounts"]
