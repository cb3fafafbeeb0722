"""The JAX workload: its transformer is llm_train's (parameters and FLOPs as kubebench counts them),
its command line and environment fail before JAX loads, it imports nothing of kubebench's server
side, and a TrainJob on the jax-distributed runtime trains as one job on the local backend."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from support.replicas import assert_replicas_in_sync, output_logs
from support.skips import require_module
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.efficiency.flops import flops_per_token, total_params
from kubebench.workloads.jax_train import parse_args
from kubebench.workloads.llm_options import PRESETS

SHAPES = {"tiny": PRESETS["tiny"], "gqa-gelu-untied": replace(PRESETS["tiny"], kv_heads=2, mlp="gelu",
                                                              tied_embeddings=False),
          "small": PRESETS["small"], "1b": PRESETS["1b"]}
#: Libraries a workload inside a job has no use for (kubebench's server side), and the other framework.
SERVER_SIDE = ("fastapi", "sqlalchemy", "kubernetes", "plotly", "typer", "uvicorn", "alembic")


@pytest.fixture(scope="module")
def jax_model():
    require_module("jax", "jax")
    from kubebench.workloads import jax_model

    return jax_model


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_jax_model_has_the_parameters_kubebench_counts(jax_model, name: str) -> None:
    import jax

    shape = SHAPES[name]
    params = jax.eval_shape(lambda: jax_model.init_params(jax.random.key(0), shape))
    assert jax_model.count_params(params) == total_params(shape)
    assert ("head" in params) == (not shape.tied_embeddings)


@pytest.mark.slow
def test_the_jax_models_training_flops_are_the_formulas_within_xlas_elementwise_work(jax_model) -> None:
    import jax
    import jax.numpy as jnp

    shape = SHAPES["gqa-gelu-untied"]
    params = jax_model.init_params(jax.random.key(0), shape)
    batch = jnp.zeros((2, shape.seq_len + 1), jnp.int32)
    grad = jax.jit(jax.grad(lambda p, b: jax_model.loss_of(p, b, shape)))
    cost = grad.lower(params, batch).compile().cost_analysis()
    counted = (cost[0] if isinstance(cost, list) else cost)["flops"] / (2 * shape.seq_len)
    # XLA counts every operation: the formula's matmuls plus norms, softmax and the optimizer-free rest
    assert flops_per_token(shape) <= counted <= 1.06 * flops_per_token(shape)


def test_a_bad_argument_is_refused_before_jax_loads() -> None:
    with pytest.raises(SystemExit) as info:
        parse_args(["--heads", "5"])  # d_model 64 is not a multiple of 5
    assert info.value.code == 2
    assert parse_args(["--parallel", "fsdp", "--layers", "1"]).shape.layers == 1


def probe(code: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter (the test's environment plus ``env``); its last line as JSON."""
    import os

    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_partial_environment_fails_with_one_line_before_jax_loads() -> None:
    found = probe("""
        import json, sys
        from kubebench.workloads import jax_train
        try:
            jax_train.main(["--steps", "1"])
        except SystemExit as e:
            print(json.dumps({"exit": str(e.code), "jax": "jax" in sys.modules}))
        """, {"COORDINATOR_ADDRESS": "job-worker-0", "NUM_PROCESSES": "2", "PROCESS_ID": "1"})
    assert found == {"exit": "jax_train: COORDINATOR_ADDRESS, NUM_PROCESSES, PROCESS_ID set (JAXJob) but not "
                             "COORDINATOR_PORT", "jax": False}


def test_the_workloads_import_nothing_of_kubebenchs_server_side() -> None:
    require_module("jax", "jax")
    require_module("xgboost", "xgboost")
    loaded = probe(f"""
        import json, sys
        import kubebench.workloads.jax_steps, kubebench.workloads.xgb_train, xgboost, xgboost.tracker
        print(json.dumps(sorted(m for m in {(*SERVER_SIDE, "torch", "tensorflow")!r} if m in sys.modules)))
        """)
    assert loaded == []


@pytest.mark.slow
def test_a_trainjob_on_the_jax_runtime_trains_as_one_job_on_the_local_backend(home: Path, write) -> None:
    require_module("jax", "jax")
    spec = write("spec.yaml", """
        name: jax-trainjob
        job:
          kind: TrainJob
          runtime: jax-distributed
          workers: 2
          command: [python, -m, kubebench.workloads.jax_train, --steps, "3", --warmup-steps, "1", --batch-size, "4",
                    --layers, "1", --threads, "1"]
        metrics: [{name: tokens_per_sec, primary: true}]
        timeout: 3m
        """)
    result = CliRunner().invoke(app, ["run", str(spec), "--id", "jt"])
    assert result.exit_code == 0, result.output
    (record,) = json.loads(CliRunner().invoke(app, ["results", "jt", "-f", "json"]).stdout)
    logs = output_logs(home / "experiments" / "jt" / record["run_id"] / "output")
    assert len(logs) == 2 and "processes=2" in logs[0]  # node-0, node-1: one jax.distributed group
    assert_replicas_in_sync(logs, 2, record["metrics"]["tokens_per_sec"])
    for log in logs:  # every rank marks the moments that make the run's phases (#31)
        marks = [line.split()[1] for line in log.splitlines() if line.startswith("KUBEBENCH_MARK ")]
        assert marks == ["imports_done", "rendezvous_done", "first_step", "last_step"], marks
    assert {"imports_seconds", "rendezvous_seconds", "init_seconds", "train_seconds"} <= set(record["metrics"])
