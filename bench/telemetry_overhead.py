"""Cost of run telemetry: the sampler's CPU at 1 s, and a workload's throughput with telemetry on and off.

1. The sampler samples a running process tree (a parent and a child) plus the machine every second
   for ``--seconds`` (default 30); its thread's CPU time over that wall time is its cost in % of one
   core (target: under 1%).
2. A CPU-bound workload (a pure-Python loop for a fixed time, reporting its iterations per second)
   runs through kubebench with ``telemetry: {enabled: true, interval: 1s}`` and with
   ``enabled: false``, alternated for ``--rounds`` rounds in one process so that machine noise hits
   both alike; prints the median throughput of each and their ratio (target: within 1%), per wall
   second and per CPU second of the workload (the latter is immune to other load on the machine).

    .venv/bin/python bench/telemetry_overhead.py [--seconds 30] [--rounds 8] [--run-seconds 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kubebench.monitor.sampler import Sampler
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

TREE = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(3600)'])"
WORKLOAD = ("import time, kubebench\\nn = 0\\nt = time.perf_counter()\\nc = time.process_time()\\n"
            "while time.perf_counter() - t < {s}: n += 1\\n"
            "kubebench.report(ops_per_s=n / (time.perf_counter() - t), ops_per_cpu_s=n / (time.process_time() - c))")
SPEC = """
name: telemetry-{mode}
job:
  command: [python, -c, "{workload}"]
metrics: [{{name: ops_per_s}}]
telemetry: {{enabled: {enabled}, interval: 1s}}
"""


def sampler_cost(seconds: float) -> tuple[float, int]:
    """% of one core the sampler's thread used at 1 s, and the number of samples."""
    tree = subprocess.Popen([sys.executable, "-c", TREE], start_new_session=True)
    try:
        time.sleep(0.5)
        sampler = Sampler([tree.pid], interval=1.0).start()
        started = time.monotonic()
        time.sleep(seconds)
        samples = sampler.stop()
        wall = time.monotonic() - started
    finally:
        os.killpg(tree.pid, signal.SIGKILL)
        tree.wait()
    return 100 * sampler.cpu_seconds / wall, len({t for _, t, _ in samples})


def throughput(rounds: int, run_seconds: float) -> dict[str, list[tuple[float, float]]]:
    """(ops per wall second, ops per CPU second) of each run, telemetry on and off, alternating
    (the order flips every round).
    """
    found: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as folder:
        config = settings(f"sqlite:///{folder}/kb.db", home=folder)
        store = open_store(config.store_url)
        specs = {}
        for mode, enabled in (("on", "true"), ("off", "false")):
            path = Path(folder) / f"{mode}.yaml"
            path.write_text(SPEC.format(mode=mode, enabled=enabled, workload=WORKLOAD.format(s=run_seconds)))
            specs[mode] = load_spec(path)
        for round_ in range(rounds):
            for mode in (("on", "off") if round_ % 2 == 0 else ("off", "on")):
                experiment = plan_experiment(specs[mode], config, f"{mode}-{round_}")
                execute(experiment, store)
                run = store.runs(experiment.plan.experiment_id)[0]
                assert run.status == "succeeded", run.reason
                found[mode].append((run.metrics["ops_per_s"], run.metrics["ops_per_cpu_s"]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--run-seconds", type=float, default=3.0)
    args = parser.parse_args()
    cost, samples = sampler_cost(args.seconds)
    print(f"sampler at 1 s: {cost:.3f}% of one core over {args.seconds:g} s ({samples} samples)  [target < 1%]")
    found = throughput(args.rounds, args.run_seconds)
    for index, unit in ((0, "ops/s"), (1, "ops per CPU s")):
        on = statistics.median(v[index] for v in found["on"])
        off = statistics.median(v[index] for v in found["off"])
        spread = 100 * statistics.stdev(v[index] for v in found["off"]) / off
        print(f"workload throughput ({unit}), median of {args.rounds} runs each: telemetry on {on:,.0f}, "
              f"off {off:,.0f}; on/off = {on / off:.4f} ({100 * (on / off - 1):+.2f}%), spread of off runs "
              f"{spread:.1f}%  [target within 1%]")


if __name__ == "__main__":
    main()
