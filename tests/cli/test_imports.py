"""What `kubebench run` imports: only what the spec in hand needs (its timing is in bench/peers.py).

Each run of a Process spec paid ~0.5 s to import NumPy and SciPy for the steady-state metrics of
``output/step_times.json``, a file that most jobs never write; a dry run paid for SQLAlchemy too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.runs import workload_metrics

#: Libraries that a run of a plain Process spec has no use for.
UNNEEDED = ("numpy", "scipy", "pandas", "plotly", "kubernetes", "alembic", "fastapi", "uvicorn", "jinja2",
            "_jsonnet", "fsspec", "pyarrow", "mlflow", "prometheus_client")

# Runs the CLI in a fresh interpreter and prints, last, the modules it imported of those asked for.
RUN_AND_LIST = """
import json, sys
from kubebench.cli import app
try:
    app(sys.argv[2:])
except SystemExit as e:
    assert e.code in (0, None), e.code
print(json.dumps(sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)))
"""


def imported(modules: tuple[str, ...], *args: str) -> list[str]:
    """Which of ``modules`` ``kubebench ARGS`` imported (run in a fresh interpreter)."""
    done = subprocess.run([sys.executable, "-c", RUN_AND_LIST, json.dumps(modules), *args],
                          capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def results(exp_id: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "kubebench", "results", exp_id, "-f", "json"],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def spec(write, command: list[str]) -> str:
    return str(write("spec.yaml", f"name: one\njob:\n  kind: Process\n  command: {json.dumps(command)}\n"))


def test_a_process_run_imports_only_what_it_needs(home: Path, write) -> None:
    path = spec(write, ["python", "-c", "import kubebench; kubebench.report(score=3.5)"])
    assert imported(UNNEEDED, "run", path, "--id", "plain") == []
    [run] = results("plain")
    assert (run["status"], workload_metrics(run["metrics"])) == ("succeeded", {"score": 3.5})


def test_a_dry_run_does_not_open_the_store(home: Path, write) -> None:
    path = spec(write, ["python", "-c", "pass"])
    assert imported((*UNNEEDED, "sqlalchemy"), "run", path, "--dry-run") == []


def test_a_run_that_writes_step_times_still_gets_its_steady_state_metrics(home: Path, write) -> None:
    steps = "[0.5] * 10 + [0.1] * 40"  # a warm-up of 10 slow steps, then steady
    job = ("import json, os; json.dump({'step_seconds': " + steps + ", 'items_per_step': 8}, "
           "open(os.path.join(os.environ['KUBEBENCH_EXP_OUTPUT_PATH'], 'step_times.json'), 'w'))")
    path = spec(write, ["python", "-c", job])
    assert imported(("numpy", "scipy"), "run", path, "--id", "steps") == ["numpy", "scipy"]
    [run] = results("steps")
    assert run["metrics"]["warmup_steps_detected"] == 10
    assert abs(run["metrics"]["steady_items_per_sec"] - 80) < 1e-6


def test_history_finds_a_change_without_importing_scipy(home: Path) -> None:
    # importing scipy.special (for the t distribution) cost ~0.4 s of the second `history` takes
    import numpy as np

    from kubebench.settings import settings
    from kubebench.store.store import open_store
    from kubebench.testing.series import store_experiment

    store = open_store(settings().store_url)
    rng = np.random.default_rng(3)
    for i in range(12):
        level = 100.0 if i < 6 else 90.0  # a 10% step at the 7th experiment
        store_experiment(store, f"step-{i:02d}", "stepping", {"ips": [list(level + rng.normal(0, 1, 10))]},
                         created_at=1_700_000_000.0 + i)
    assert imported(("scipy",), "history", "stepping") == []
    done = subprocess.run([sys.executable, "-m", "kubebench", "history", "stepping", "-f", "json"],
                          capture_output=True, text=True, timeout=120, check=True)
    [trial] = json.loads(done.stdout)["trials"]
    assert [(c["experiment"], c["verdict"]) for c in trial["changes"]] == [("step-06", "regressed")]
