"""How long the JAX and XGBoost examples take, and what they measure: each example through
``kubebench run`` (a fresh process and store, the local backend), with its parameter file unless
``--full``, timed wall to wall; then every trial's median rate, and the model's quality.

The issue's bound: each example runs in under 3 minutes on the development VM with its parameter file.

    .venv/bin/python bench/frameworks.py [--examples jax-train xgb-train] [--repeats 1] [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
#: The example's primary metric and the figures printed beside it.
SHOWN = {"jax-train": ("tokens_per_sec", ("mfu", "loss_final")),
         "xgb-train": ("rows_per_sec", ("rounds_per_sec", "valid_auc", "valid_logloss"))}


def run(name: str, repeats: int, full: bool, home: Path) -> dict:
    """One example through the CLI: its wall seconds and every trial's medians."""
    folder = EXAMPLES / name
    args = [sys.executable, "-m", "kubebench", "run", str(folder / "benchmark.yaml"), "--repeats", str(repeats),
            "--id", name]
    if not full:
        args += ["--params", str(folder / "params.yaml")]
    env = {**os.environ, "KUBEBENCH_HOME": str(home)}
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{name} failed:\n{done.stdout}\n{done.stderr}")
    listed = subprocess.run([sys.executable, "-m", "kubebench", "results", name, "-f", "json"], capture_output=True,
                            text=True, env=env, check=True)
    primary, extra = SHOWN[name]
    trials: dict[str, list[dict]] = {}
    for record in json.loads(listed.stdout):
        trials.setdefault(json.dumps(record["params"], sort_keys=True), []).append(record["metrics"])
    medians = {key: {m: statistics.median(r[m] for r in runs) for m in (primary, *extra)} for key, runs in trials.items()}
    return {"example": name, "seconds": round(seconds, 1), "runs": sum(len(r) for r in trials.values()),
            "trials": medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", nargs="+", default=sorted(SHOWN), choices=sorted(SHOWN))
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--full", action="store_true", help="the examples' own sizes, not their parameter files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        for name in args.examples:
            result = run(name, args.repeats, args.full, Path(home))
            print(f"{name}: {result['runs']} runs in {result['seconds']} s")
            for params, figures in result["trials"].items():
                print(f"  {params}: " + ", ".join(f"{k}={v:.4g}" for k, v in figures.items()))
            print(json.dumps(result))


if __name__ == "__main__":
    main()
