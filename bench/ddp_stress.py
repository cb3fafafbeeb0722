"""Two-worker DDP runs of the CNN through `kubebench run`, with CPU hogs beside them, and the number
that fail. Before the orderly end of distributed workloads (``Group.end``), 2–7 of 20 such runs
aborted at exit with SIGABRT on a busy 2-core machine (review ux.md B4).

    .venv/bin/python bench/ddp_stress.py [--runs 100] [--hogs 1]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import load_line, machine_line

SPEC = """\
apiVersion: kubebench/v1
kind: Benchmark
name: ddp-stress
job:
  kind: PyTorchJob
  workers: 2
  command: [python, -m, kubebench.workloads.cnn, --batch-size, "16", --steps, "20", --warmup-steps, "5", --threads, "1"]
repeats: {runs}
timeout: 5m
metrics:
  - {{name: images_per_sec, unit: images/s, goal: maximize, primary: true}}
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--hogs", type=int, default=1, help="processes spinning on a CPU beside the runs")
    args = p.parse_args()
    print(machine_line(sorted(os.sched_getaffinity(0))))
    kubebench = [sys.executable, "-m", "kubebench"]
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "KUBEBENCH_HOME": home}
        spec = Path(home) / "stress.yaml"
        spec.write_text(SPEC.format(runs=args.runs))
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
        start = time.monotonic()
        try:
            subprocess.run([*kubebench, "run", str(spec), "--id", "ddp-stress"], env=env, stdout=subprocess.DEVNULL)
        finally:
            for hog in hogs:
                hog.kill()
        elapsed = time.monotonic() - start
        out = subprocess.run([*kubebench, "results", "ddp-stress", "-f", "json"], env=env, capture_output=True, text=True)
    runs = json.loads(out.stdout)
    reasons = collections.Counter(r["reason"] for r in runs if r["status"] != "succeeded")
    failed = sum(reasons.values())
    print(load_line())
    print(f"{len(runs)} two-worker DDP runs beside {args.hogs} CPU hog(s) in {elapsed:.0f} s: {failed} failed")
    for reason, count in reasons.most_common():
        print(f"  {count} × {reason}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
