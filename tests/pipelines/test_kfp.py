"""The Kubeflow Pipelines components of ``kubebench deploy kfp-component`` and the steps they run
(``kubebench kfp run|check``), checked with KFP's own protos (kfp-pipeline-spec, kfp-kubernetes) in
.venv-kfp, which ``make test`` builds: their protobuf 6 cannot live beside the project's protobuf 7.

The executor input is the one the v2 driver builds (kubeflow/pipelines 2.17.0,
``backend/src/v2/driver/driver.go`` ``provisionOutputs``: each output parameter's file
``/tmp/kfp/outputs/NAME``, each output artifact's name, type and URI under the task's root, and
``outputFile`` there as ``output_metadata.json``), with the defaults the launcher adds
(``launcher_v2.go`` ``addDefaultParams``) before it substitutes ``{{$}}``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from support.skips import under_ci
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.store.store import open_store

runner = CliRunner(env={"COLUMNS": "200"})
ROOT = Path(__file__).resolve().parents[2]
KFP_PYTHON = Path(os.environ.get("KUBEBENCH_KFP_VENV") or ROOT / ".venv-kfp") / "bin" / "python"

SPEC = """
name: kfp-bench
job:
  kind: Process
  command: [python, -c, "import kubebench; kubebench.report(ips={{ n }} * 100 + {{ kubebench.repeat }}, lat=1.0 / {{ n }})"]
parameters:
  n: [1, 2]
repeats: 3
metrics:
  - {name: ips, primary: true}
  - {name: lat, goal: minimize}
"""


def protos(*documents: tuple[str, dict]) -> list[dict]:
    """Each ``(message, document)`` parsed by KFP's protos: ``{"ok": …}`` or ``{"error": …}``."""
    if not KFP_PYTHON.is_file():
        if under_ci():
            pytest.fail(f"{KFP_PYTHON} is missing: `make test` builds .venv-kfp")
        pytest.skip(f"{KFP_PYTHON} is missing (make .venv-kfp/.installed builds it)")
    done = subprocess.run([str(KFP_PYTHON), str(Path(__file__).with_name("kfp_protos.py"))], input=json.dumps(documents),
                          capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def emitted(*args: str) -> list[dict]:
    result = runner.invoke(app, ["deploy", "kfp-component", *args])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# PIPELINE DEFINITION\n")
    return list(yaml.safe_load_all(result.output))


def test_the_components_and_the_pipeline_parse_with_kfps_protos() -> None:
    run, check = emitted("--step", "run"), emitted("--step", "check")
    pipeline, platform = emitted("--step", "pipeline", "--store-secret", "kb-store")
    executors = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    found = protos(("PipelineSpec", run[0]), ("PipelineSpec", check[0]), ("PipelineSpec", pipeline),
                   ("PlatformSpec", platform), *(("KubernetesExecutorConfig", c) for c in executors.values()),
                   ("PipelineSpec", {**run[0], "cache": True}))  # the parser is strict: an unknown field is refused
    assert [sorted(f) for f in found] == [["ok"]] * 6 + [["error"]], found
    assert 'no field named "cache"' in found[-1]["error"]
    assert found[0]["ok"]["components"]["comp-kubebench-run"]["outputDefinitions"]["artifacts"]["metrics"] == {
        "artifactType": {"schemaTitle": "system.Metrics", "schemaVersion": "0.0.1"}}


def test_caching_is_off_and_the_experiment_id_comes_from_the_pipeline_run() -> None:
    (run,), (pipeline, platform) = emitted(), emitted("--step", "pipeline")
    tasks = [*run["root"]["dag"]["tasks"].values(), *pipeline["root"]["dag"]["tasks"].values()]
    assert len(tasks) == 3 and all(t["cachingOptions"] == {} for t in tasks)  # no enableCache: off
    dag = pipeline["root"]["dag"]["tasks"]
    assert dag["kubebench-run"]["inputs"]["parameters"]["experiment_id"] == {"runtimeValue": {"constant": "{{$.pipeline_job_uuid}}"}}
    assert dag["kubebench-check"]["dependentTasks"] == ["kubebench-run"]
    assert dag["kubebench-check"]["inputs"]["parameters"]["experiment"] == {
        "taskOutputParameter": {"producerTask": "kubebench-run", "outputParameterKey": "experiment"}}
    assert run["components"]["comp-kubebench-run"]["inputDefinitions"]["parameters"]["experiment_id"] == {"parameterType": "STRING"}
    container = run["deploymentSpec"]["executors"]["exec-kubebench-run"]["container"]
    assert container["command"] == ["kubebench"] and container["args"][:4] == ["kfp", "run", "--executor-input", "{{$}}"]
    # the store's URL holds its password: never an argument; the platform spec gives KUBEBENCH_STORE from
    # the Secret of deploy manifests (kubebench-store) unless another is named
    assert container["args"][4:] == []
    config = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]["exec-kubebench-check"]
    assert config["pvcMount"][0]["mountPath"] == "/kubebench"
    assert [e["secretName"] for e in config["secretAsEnv"]] == ["kubebench-store"]
    assert config["podMetadata"]["labels"]["app.kubernetes.io/part-of"] == "kubebench"
    secret = emitted("--step", "pipeline", "--store-secret", "kb-store")
    assert "--store" not in secret[0]["deploymentSpec"]["executors"]["exec-kubebench-run"]["container"]["args"]
    [env] = secret[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]["exec-kubebench-run"]["secretAsEnv"]
    assert env["keyToEnv"] == [{"secretKey": "url", "envVar": "KUBEBENCH_STORE"}] and env["secretName"] == "kb-store"


def executor_input(tmp_path: Path, task: str, parameters: dict, outputs: dict, artifacts: tuple[str, ...] = ()) -> dict:
    """An executor input as the driver builds it for ``task`` (see the module's docstring)."""
    root = f"minio://mlpipeline/v2/artifacts/kubebench-benchmark/5d0e2f4c-run/{task}/8f1c"
    return {"inputs": {"parameterValues": parameters},
            "outputs": {"parameters": {n: {"outputFile": f"/tmp/kfp/outputs/{n}"} for n in outputs},
                        "artifacts": {a: {"artifacts": [{"name": a, "type": {"schemaTitle": "system.Metrics", "schemaVersion": "0.0.1"},
                                                         "uri": f"{root}/{a}", "metadata": {}}]} for a in artifacts},
                        "outputFile": str(tmp_path / "minio" / task / "output_metadata.json")}}


def launch(component: dict, step: str, given: dict, store: str):
    """What the launcher runs: the component's arguments with ``{{$}}`` replaced (its store: the test's)."""
    args = component["deploymentSpec"]["executors"][f"exec-kubebench-{step}"]["container"]["args"]
    args = [a.replace("{{$}}", json.dumps(given)) for a in args]
    assert "--store" not in args  # the pod's KUBEBENCH_STORE comes from a Secret
    return runner.invoke(app, [*args, "--store", store])


def test_the_run_and_check_steps_write_the_executor_output_the_launcher_reads(home: Path, write, tmp_path: Path) -> None:
    spec, store = write("bench/benchmark.yaml", SPEC), f"sqlite:///{home / 'kb.db'}"
    (run,), (check,) = emitted(), emitted("--step", "check")
    inputs = {"spec": str(spec), "experiment_id": "5d0e2f4c-run", "labels": {"commit": "abc123"}, "params": {},
              "backend": "local", "repeats": 0}
    given = executor_input(tmp_path, "kubebench-run", inputs, {"experiment": 1}, ("metrics",))
    result = launch(run, "run", given, store)
    assert result.exit_code == 0, result.output
    output = json.loads(Path(given["outputs"]["outputFile"]).read_text())
    check_given = executor_input(tmp_path / "gate", "kubebench-check", {"experiment": "5d0e2f4c-run"}, {"verdict": 1})
    result = launch(check, "check", check_given, store)
    assert result.exit_code == 0, result.output  # the first of its series: nothing to compare with, passes
    gate = json.loads(Path(check_given["outputs"]["outputFile"]).read_text())
    parsed = protos(("ExecutorInput", given), ("ExecutorOutput", output), ("ExecutorInput", check_given), ("ExecutorOutput", gate))
    assert [sorted(p) for p in parsed] == [["ok"]] * 4, parsed
    assert output["parameterValues"] == {"experiment": "5d0e2f4c-run"} and gate["parameterValues"] == {"verdict": "nothing-to-compare"}
    [artifact] = output["artifacts"]["metrics"]["artifacts"]
    assert (artifact["name"], artifact["uri"]) == ("metrics", given["outputs"]["artifacts"]["metrics"]["artifacts"][0]["uri"])
    # the best trial (n=2): the medians kubebench results reports, its CI, and the run counts
    runs = json.loads(runner.invoke(app, ["results", "5d0e2f4c-run", "-f", "json", "--store", store]).output)
    best = [r["metrics"] for r in runs if r["params"]["n"] == 2]
    metadata = artifact["metadata"]
    assert (metadata["ips"], metadata["lat"]) == (sorted(m["ips"] for m in best)[1], 0.5)
    assert metadata["ips_ci_low"] < metadata["ips"] < metadata["ips_ci_high"]
    assert (metadata["runs_succeeded"], metadata["runs_failed"], metadata["runs_cancelled"]) == (6, 0, 0)
    assert list(metadata)[:3] == ["ips", "ips_ci_low", "ips_ci_high"]  # the primary first
    assert open_store(store).experiment("5d0e2f4c-run").labels == {"commit": "abc123"}


def test_a_second_pipeline_run_is_gated_against_the_first(home: Path, write, tmp_path: Path) -> None:
    spec, store = write("bench/benchmark.yaml", SPEC), f"sqlite:///{home / 'kb.db'}"
    (run,), (check,) = emitted(), emitted("--step", "check")
    for exp in ("run-1", "run-2"):
        given = executor_input(tmp_path / exp, "kubebench-run", {"spec": str(spec), "experiment_id": exp, "backend": "local",
                                                                  "params": {"n": [2]}}, {"experiment": 1}, ("metrics",))
        assert launch(run, "run", given, store).exit_code == 0
    gate = executor_input(tmp_path, "kubebench-check", {"experiment": "run-2", "threshold": 0.5}, {"verdict": 1})
    result = launch(check, "check", gate, store)
    assert result.exit_code == 0, result.output
    assert "1 earlier experiment of series kfp-bench" in result.output  # against run-1 only, trial n=2 only
    verdict = json.loads(Path(gate["outputs"]["outputFile"]).read_text())["parameterValues"]["verdict"]
    assert verdict in ("unchanged", "inconclusive")


@pytest.mark.parametrize(("given", "message"), [
    ("{not json", "--executor-input: not JSON"),
    ('{"inputs": {}}', "no outputs.outputFile"),
    ('{"outputs": {"outputFile": "/tmp/x"}, "inputs": {"parameterValues": {"spec": "s.yaml"}}}', "input 'experiment_id' is required"),
    ('{"outputs": {"outputFile": "/tmp/x"}, "inputs": {"parameterValues": {"spec": "s.yaml", "experiment_id": "a", "repeats": 1.5}}}',
     "input 'repeats' must be NUMBER_INTEGER, got 1.5"),
    ('{"outputs": {"outputFile": "/tmp/x"}, "inputs": {"parameterValues": {"spec": "s.yaml", "experiment_id": "Bad_Id"}}}',
     "input experiment_id 'Bad_Id' is not valid"),
])
def test_a_bad_executor_input_is_one_clear_error(home: Path, given: str, message: str) -> None:
    result = runner.invoke(app, ["kfp", "run", "--executor-input", given])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_a_step_that_fails_before_its_experiment_exists_writes_no_output(home: Path, tmp_path: Path) -> None:
    given = executor_input(tmp_path, "kubebench-run", {"spec": str(tmp_path / "missing.yaml"), "experiment_id": "e1"},
                           {"experiment": 1}, ("metrics",))
    result = runner.invoke(app, ["kfp", "run", "--executor-input", json.dumps(given)])
    assert result.exit_code == 2 and "missing.yaml" in result.output, result.output
    assert not Path(given["outputs"]["outputFile"]).exists()
    bad = executor_input(tmp_path, "kubebench-check", {"experiment": "e1", "correction": "fdr"}, {"verdict": 1})
    result = runner.invoke(app, ["kfp", "check", "--executor-input", json.dumps(bad)])
    assert result.exit_code == 2 and "input 'correction' must be holm or bh, got 'fdr'" in result.output


def test_an_executor_output_that_cannot_be_written_is_one_clear_error(home: Path, write, tmp_path: Path) -> None:
    spec, store = write("bench/benchmark.yaml", SPEC), f"sqlite:///{home / 'kb.db'}"
    (tmp_path / "taken").write_text("")
    given = executor_input(tmp_path, "kubebench-run", {"spec": str(spec), "experiment_id": "e2", "backend": "local",
                                                       "params": {"n": [1]}, "repeats": 1}, {"experiment": 1}, ("metrics",))
    given["outputs"]["outputFile"] = str(tmp_path / "taken" / "output_metadata.json")
    result = runner.invoke(app, ["kfp", "run", "--executor-input", json.dumps(given), "--store", store])
    assert result.exit_code == 2 and "cannot write the executor output" in result.output, result.output
