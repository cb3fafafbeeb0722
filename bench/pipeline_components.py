"""The sizes of kubebench's pipeline steps as ``kubebench deploy`` emits them (issue #32): the Kubeflow
Pipelines components (run, check, and the two as a pipeline with its platform spec), the Argo
WorkflowTemplate and the Tekton Task, in bytes of YAML and of compact JSON; and the size of the
outputs a step reports (the KFP executor output of a run with 4 declared metrics, the Tekton results),
against Tekton's 4 KiB termination message.

    .venv/bin/python bench/pipeline_components.py
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.pipelines.kfp import ExecutorInput, executor_output
from kubebench.pipelines.outputs import RunOutputs

COMMANDS = {
    "KFP component kubebench-run": ["deploy", "kfp-component", "--step", "run"],
    "KFP component kubebench-check": ["deploy", "kfp-component", "--step", "check"],
    "KFP pipeline kubebench-benchmark (+ platform spec)": ["deploy", "kfp-component", "--step", "pipeline"],
    "Argo WorkflowTemplate": ["deploy", "argo-template"],
    "Tekton Task": ["deploy", "tekton-task"],
}


def main() -> None:
    import yaml

    runner = CliRunner()
    print(f"{'step':52} {'YAML bytes':>10} {'JSON bytes':>10}")
    for name, args in COMMANDS.items():
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        docs = list(yaml.safe_load_all(result.output))
        compact = sum(len(json.dumps(d, separators=(",", ":"))) for d in docs)
        print(f"{name:52} {len(result.output):>10} {compact:>10}")
    # a run step's outputs: 4 declared metrics (median, CI) and the run counts
    metrics = {f"{m}{s}": 1234.5678 for m in ("images_per_sec", "step_time_s", "mfu", "joules_per_image")
               for s in ("", "_ci_low", "_ci_high")} | {"runs_succeeded": 24.0, "runs_failed": 0.0, "runs_cancelled": 0.0}
    given = ExecutorInput({}, "/tmp/o.json", {"metrics": ("metrics", "minio://mlpipeline/v2/artifacts/p/" + "x" * 36 + "/kubebench-run/1234/metrics")})
    out = executor_output(given, {"experiment": "x" * 36}, metrics)
    files = RunOutputs("x" * 63, metrics, "images_per_sec").files() | {"verdict": "nothing-to-compare"}
    print(f"KFP executor output of a run (4 metrics): {len(json.dumps(out))} bytes")
    print(f"Tekton results (every one, longest values): {sum(len(k) + len(v) for k, v in files.items())} bytes of 4096")


if __name__ == "__main__":
    main()
