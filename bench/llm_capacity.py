"""The capacity search against a server whose saturation rate is known, through kubebench's runner.

The server is kubebench.testing.llm_fake with ``--slots 4 --ttft 0.05 --tpot 0.02`` and 10 output
tokens: it serves 4 / (0.05 + 9 × 0.02) = 17.4 requests/s at most. Arrivals are constant (a D/D/c
queue: no waiting below saturation, a growing queue above it), so the SLO ``ttft_p99 ≤ 250 ms``
breaks right past saturation. Prints the answer, its interval, the probes and runs it took, and the
probes of a fixed grid of the same resolution.

    .venv/bin/python bench/llm_capacity.py [--resolution 0.05] [--duration 6]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from kubebench.capacity.driver import answers, sweep_points
from kubebench.capacity.search import grid_probes
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

SLOTS, TTFT, TPOT, TOKENS = 4, 0.05, 0.02, 10
SPEC = """
name: capacity-bench
job:
  kind: Serving
  command: [python, -m, kubebench.workloads.llm_load, --rate, "{{{{ rate }}}}", --arrivals, constant,
            --duration, "{duration}", --output-tokens, "{tokens}", --input-tokens, "8", --max-lag, "0.5",
            --scrape-interval, "60"]
  server:
    command: [python, -m, kubebench.testing.llm_fake, --port, "$(KUBEBENCH_SERVER_PORT)", --ttft, "{ttft}",
              --tpot, "{tpot}", --slots, "{slots}"]
search: {{parameter: rate, low: 2, high: 64, resolution: {resolution}, min: 2, max: 4, slo: {{ttft_p99: 250ms}}}}
telemetry: {{enabled: false}}
timeout: 2m
metrics: [{{name: ttft_p99, goal: minimize}}]
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--resolution", type=float, default=0.05)
    parser.add_argument("--duration", type=float, default=6.0)
    args = parser.parse_args()
    truth = SLOTS / (TTFT + (TOKENS - 1) * TPOT)
    print(f"load average before: {os.getloadavg()}; known saturation {truth:.2f} requests/s")
    folder = Path(tempfile.mkdtemp(prefix="kubebench-capacity-"))
    try:
        spec = folder / "spec.yaml"
        spec.write_text(SPEC.format(duration=args.duration, tokens=TOKENS, ttft=TTFT, tpot=TPOT, slots=SLOTS,
                                    resolution=args.resolution))
        config = settings(home=folder / "home")
        store = open_store(config.store_url)
        loaded = load_spec(spec)
        experiment = plan_experiment(loaded, config, "capacity-bench")
        started = time.monotonic()
        execute(experiment, store)
        elapsed = time.monotonic() - started
        (answer,) = answers(loaded.spec.search, sweep_points(loaded.spec, experiment.plan), store.runs("capacity-bench"))
        for x, verdict, why in answer.steps:
            print(f"  probe rate {x:g}: {verdict} ({why})")
        print(f"{answer.status}: meets at {answer.meets}, fails at {answer.fails}; estimate {answer.estimate:.3g} "
              f"[{answer.ci[0]:.3g}, {answer.ci[1]:.3g}] ({answer.estimate / truth - 1:+.1%} of the truth; bracket "
              f"{answer.meets / truth - 1:+.1%} … {answer.fails / truth - 1:+.1%})")
        print(f"{answer.probes} probes, {answer.runs} runs in {elapsed:.0f} s; a grid of the same resolution: "
              f"{grid_probes(loaded.spec.search)} probes")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
