"""The GitHub Actions job of examples/pipelines/github-actions.yml, its kubebench steps run as the
runner runs them (``bash --noprofile --norc -eo pipefail``, ``${{ … }}`` expressions substituted
first) on a small spec: the first workflow run passes its gate, a slower second one fails it and
says why in the job's summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "pipelines" / "github-actions.yml"

SPEC = """
name: gh-bench
job:
  kind: Process
  command: [python, -c, "import kubebench, os; kubebench.report(ips=100 / float(os.environ.get('SLOW', '1')) + {{ kubebench.repeat }} * 0.1)"]
repeats: 4
metrics:
  - {name: ips, primary: true}
"""


def steps() -> list[str]:
    """The scripts of the job's steps that run kubebench (not the install step)."""
    job = yaml.safe_load(WORKFLOW.read_text())["jobs"]["benchmark"]
    return [s["run"] for s in job["steps"] if "run" in s and s["run"].startswith("kubebench ")]


def expand(script: str, context: dict[str, str]) -> str:
    """The script with its ``${{ name }}`` expressions replaced, as the runner does before bash sees it."""
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: context[m[1]], script)


def workflow_run(run_id: int, env: dict[str, str], cwd: Path) -> list[subprocess.CompletedProcess]:
    context = {"github.run_id": str(run_id), "github.sha": f"c0ffee{run_id}", "github.ref_name": "main"}
    done = []
    for script in steps():
        done.append(subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(script, context)],
                                   cwd=cwd, env=env, capture_output=True, text=True, timeout=120))
        if done[-1].returncode:
            break  # a failed step ends the job
    return done


@pytest.mark.slow
def test_the_workflow_gates_the_second_run_on_the_first(tmp_path: Path, write) -> None:
    spec = write("bench.yaml", SPEC)
    bin_dir = Path(sys.executable).parent
    summary = tmp_path / "summary.md"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
           "BENCHMARK": str(spec), "KUBEBENCH_HOME": str(tmp_path / "home"),
           "KUBEBENCH_STORE": f"sqlite:///{tmp_path / 'kb.db'}", "GITHUB_STEP_SUMMARY": str(summary)}
    first = workflow_run(101, env, tmp_path)
    assert [d.returncode for d in first] == [0, 0], [d.stderr for d in first]
    assert "PASS: nothing to compare with" in first[1].stderr
    assert (tmp_path / "kubebench-outputs" / "experiment-id").read_text() == "gh-101"
    second = workflow_run(102, env | {"SLOW": "2"}, tmp_path)
    assert [d.returncode for d in second] == [0, 1], [d.stderr for d in second]
    assert "**FAIL: 1 regression beyond threshold" in summary.read_text()
    assert "gh-102" in summary.read_text() and (tmp_path / "kubebench-check.xml").is_file()
    assert (tmp_path / "kubebench-outputs" / "primary-median").read_text() == "50.15"
