"""Cost of run telemetry: the sampler's CPU at 1 s, and a workload's throughput with telemetry on and off.

1. The sampler samples a running process tree (a parent and a child) plus the machine every second
   for ``--seconds`` (default 30); its thread's CPU time over that wall time is its cost in % of one
   core (target: under 1%).
2. The CPU-bound reference workload (``kubebench.workloads.synthetic reference``, ``--steps`` steps
   of fixed work) runs through kubebench with ``telemetry: {enabled: true, interval: 1s}`` and with
   ``enabled: false``, alternated for ``--rounds`` rounds in one process, pinned to one CPU
   (``--cpus``) so that the sampler competes with the workload for its core; prints the median of
   the rounds' on/off throughput ratios with a bootstrap 95% CI (target: within 1%), per wall
   second and per CPU second of the workload (the latter is immune to waiting for the CPU).

    .venv/bin/python bench/telemetry_overhead.py [--seconds 30] [--rounds 16] [--steps 60] [--cpus last]
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

from benchlib import machine_line, paired_ratio, pin

from kubebench.monitor.sampler import Sampler
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

TREE = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(3600)'])"
SPEC = """
name: telemetry-{mode}
job:
  command: [python, -m, kubebench.workloads.synthetic, reference, --steps, {steps}, --work, 250000]
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


def throughput(rounds: int, steps: int) -> dict[str, list[tuple[float, float]]]:
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
            path.write_text(SPEC.format(mode=mode, enabled=enabled, steps=steps))
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
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=60, help="measured steps of the reference workload")
    parser.add_argument("--cpus", default="last", help="CPUs to pin to: a list, 'last', or 'none'")
    args = parser.parse_args()
    print(machine_line(pin(args.cpus)), flush=True)
    cost, samples = sampler_cost(args.seconds)
    print(f"sampler at 1 s: {cost:.3f}% of one core over {args.seconds:g} s ({samples} samples)  [target < 1%]")
    found = throughput(args.rounds, args.steps)
    for index, unit in ((0, "ops/s"), (1, "ops per CPU s")):
        on = statistics.median(v[index] for v in found["on"])
        off = statistics.median(v[index] for v in found["off"])
        spread = 100 * statistics.stdev(v[index] for v in found["off"]) / off
        ratio = paired_ratio([v[index] for v in found["on"]], [v[index] for v in found["off"]], seed=index)
        print(f"workload throughput ({unit}), medians of {args.rounds} runs each: telemetry on {on:,.0f}, "
              f"off {off:,.0f}; on/off {ratio.text(4)} (median of the rounds' ratios [95% CI]), spread of "
              f"off runs {spread:.1f}%  [target within 1%]")


if __name__ == "__main__":
    main()
