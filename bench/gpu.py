"""The GPU check, in one go: CNN and LLM training throughput, MFU and energy, through kubebench and bare.

On a GPU (under 8 minutes on one):

- CNN: ResNet-50, bf16 autocast, channels-last, synthetic 224×224 images, batch 256 (images/s);
- LLM: the ``1b`` preset of ``kubebench.workloads.llm_train`` (TinyLlama-1.1B's shape, bf16, batch 8 ×
  2048 tokens): tokens/s and MFU against the table's peak for the GPU;

each run bare (the command started directly) and through kubebench (local backend, telemetry on),
alternated round by round (the order flips every round, as bench/harness.py does); the kubebench/bare
ratio is the median of the rounds' ratios with a bootstrap CI. Energy: a thread reads every GPU's NVML
total-energy counter and power every 0.1 s around each run; energy per item is the counter's advance
over the workload's measured steps (the window ends when the workload writes ``step_times.json`` and
lasts as long as its measured steps), divided by the items of those steps. The same samples check the
counter against power sampled and integrated (trapezoids) over the whole run: they should agree within
10%. Published figures are printed beside.

On a machine without a GPU (or with ``--fast``) the same script runs the small CNN and the ``tiny`` LLM
preset on the CPU in seconds, so CI exercises it; energy is then reported as unavailable, with why.

    .venv/bin/python bench/gpu.py [--fast] [--rounds 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import load_line, paired_ratio, pin

from kubebench.collect.metrics import parse_metric_lines
from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import Store, open_store

PYTHON = sys.executable
SAMPLE_S = 0.1
#: Published figures printed beside the measured ones.
REFERENCES = {
    "cnn": "ResNet-50 mixed precision: ~2,470 images/s on 1x A100 80GB (NVIDIA DeepLearningExamples, "
           "PyTorch ResNet50 v1.5, AMP, batch 256); MLPerf Training-tuned H100: ~7,000 images/s per GPU",
    "llm": "TinyLlama 1.1B: 24,000 tokens/s per A100-40GB, 56% MFU (TinyLlama README; fused kernels, "
           "FlashAttention-2, no activation checkpointing)",
}


@dataclass(frozen=True)
class Case:
    """One workload of the check: its command, its throughput metric and what one item is."""

    name: str
    argv: tuple[str, ...]
    metric: str
    item: str


def cases(fast: bool, steps: int | None = None) -> list[Case]:
    """The CNN and LLM commands, full size on a GPU or tiny on a CPU (``fast``); ``steps`` measured steps
    instead of the defaults (longer runs narrow the kubebench/bare CI)."""
    if fast:
        cnn = ("--model", "small", "--batch-size", "16", "--steps", "10", "--warmup-steps", "2", "--threads", "1")
        llm = ("--preset", "tiny", "--batch-size", "8", "--steps", "12", "--warmup-steps", "2", "--threads", "1")
    else:
        cnn = ("--model", "resnet50", "--batch-size", "256", "--amp", "bf16", "--channels-last", "--image-size", "224",
               "--num-classes", "1000", "--steps", "40", "--warmup-steps", "10")
        llm = ("--preset", "1b", "--batch-size", "8", "--amp", "bf16", "--steps", "30", "--warmup-steps", "5")
    if steps:
        cnn, llm = (a[:a.index("--steps") + 1] + (str(steps),) + a[a.index("--steps") + 2:] for a in (cnn, llm))
    return [Case("cnn", ("-m", "kubebench.workloads.cnn", *cnn), "images_per_sec", "image"),
            Case("llm", ("-m", "kubebench.workloads.llm_train", *llm), "tokens_per_sec", "token")]


class GpuSampler:
    """Every GPU's NVML energy counter (J) and power (W), summed, every ``SAMPLE_S`` seconds."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []  # (unix time, joules, watts)
        self.error = ""
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self._read()
        except Exception as e:  # no library, no driver, no GPU, a GPU without the counter
            self.error, self._handles = f"NVML unavailable ({str(e) or type(e).__name__})", []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _read(self) -> tuple[float, float, float]:
        nv = self._nvml
        joules = sum(nv.nvmlDeviceGetTotalEnergyConsumption(h) for h in self._handles) / 1000
        watts = sum(nv.nvmlDeviceGetPowerUsage(h) for h in self._handles) / 1000
        return time.time(), joules, watts

    def __enter__(self) -> GpuSampler:
        if self._handles:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while True:
            self.samples.append(self._read())
            if self._stop.wait(SAMPLE_S):
                self.samples.append(self._read())
                return

    def counter_at(self, t: float) -> float:
        """The energy counter at time ``t``, interpolated between samples."""
        s = self.samples
        for (t0, j0, _), (t1, j1, _) in zip(s, s[1:]):
            if t0 <= t <= t1:
                return j0 + (j1 - j0) * (t - t0) / (t1 - t0) if t1 > t0 else j0
        raise ValueError(f"time {t:.3f} is outside the samples ({s[0][0]:.3f} … {s[-1][0]:.3f})")

    def counter_and_integrated(self) -> tuple[float, float]:
        """Joules over all samples: the counter's advance, and power integrated with trapezoids."""
        s = self.samples
        integrated = sum((t1 - t0) * (w0 + w1) / 2 for (t0, _, w0), (t1, _, w1) in zip(s, s[1:]))
        return s[-1][1] - s[0][1], integrated


@dataclass
class Arm:
    """What one arm measured over the rounds."""

    rates: list[float] = field(default_factory=list)
    mfu: list[float] = field(default_factory=list)
    joules_per_item: list[float] = field(default_factory=list)
    energy_check: list[float] = field(default_factory=list)  # counter / integrated power, per run
    notes: set[str] = field(default_factory=set)


def window_energy(sampler: GpuSampler, output: Path, items_per_step: float) -> float | None:
    """Joules per item over the workload's measured steps (see the module docstring); None without NVML."""
    if not sampler.samples:
        return None
    record = json.loads((output / "step_times.json").read_text())
    measured = record["step_seconds"][record["warmup_steps"]:]
    end = (output / "step_times.json").stat().st_mtime
    joules = sampler.counter_at(end) - sampler.counter_at(end - sum(measured))
    return joules / (items_per_step * len(measured))


def record(arm: Arm, case: Case, metrics: dict[str, float], sampler: GpuSampler, output: Path) -> None:
    arm.rates.append(metrics[case.metric])
    if "mfu" in metrics:
        arm.mfu.append(metrics["mfu"])
    if sampler.error:
        arm.notes.add(sampler.error)
        return
    items = json.loads((output / "step_times.json").read_text())["items_per_step"]
    arm.joules_per_item.append(window_energy(sampler, output, items))
    counter, integrated = sampler.counter_and_integrated()
    arm.energy_check.append(counter / integrated)


def bare(case: Case, folder: Path, arm: Arm) -> None:
    """The command started directly, its outputs in a folder of its own."""
    output = Path(tempfile.mkdtemp(dir=folder))
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["KUBEBENCH_EXP_OUTPUT_PATH"] = str(output)
    with GpuSampler() as sampler:
        done = subprocess.run([PYTHON, *case.argv], env=env, capture_output=True, text=True, start_new_session=True)
    if done.returncode:
        raise SystemExit(f"{case.name} (bare) failed:\n{done.stderr[-3000:]}")
    record(arm, case, parse_metric_lines(done.stdout.splitlines()), sampler, output)


def through(case: Case, folder: Path, store: Store, arm: Arm, i: int) -> None:
    """The same command as a kubebench run (local backend, telemetry on)."""
    name = f"gpu-{case.name}-{i}"
    spec = folder / f"{name}.yaml"
    spec.write_text(f"name: {name}\njob:\n  command: {json.dumps(['python', *case.argv])}\n"
                    f"metrics: [{{name: {case.metric}, primary: true}}]\ntelemetry: {{enabled: true, interval: 1s}}\n")
    experiment = plan_experiment(load_spec(spec), settings(home=folder / "home"), name)
    with GpuSampler() as sampler:
        execute(experiment, store)
    (run,) = store.runs(name)
    if run.status != "succeeded":
        raise SystemExit(f"{case.name} (kubebench) failed: {run.reason}\n{run.log_tail}")
    record(arm, case, run.metrics, sampler, folder / "home" / "experiments" / name / run.run_id / "output")
    arm.notes.update(v for k, v in run.info.items() if k in ("energy_unavailable", "mfu_unavailable"))


def median(values: list) -> str:
    values = [v for v in values if v is not None]
    return f"{statistics.median(values):,.4g}" if values else "–"


def table(results: dict[str, dict[str, Arm]], all_cases: list[Case]) -> tuple[str, dict]:
    """The markdown table, and the same figures as JSON."""
    lines = ["| workload | arm | rate (median) | MFU | J per item (measured steps) | NVML counter / integrated power |"
             " kubebench / bare [95% CI] |", "|---|---|---|---|---|---|---|"]
    data: dict = {}
    for case in all_cases:
        arms = results[case.name]
        ratio = paired_ratio(arms["kubebench"].rates, arms["bare"].rates)
        data[case.name] = {"ratio": ratio.median, "ratio_ci": ratio.ci, "rounds": ratio.rounds}
        for name, arm in arms.items():
            mfu = median(arm.mfu) if arm.mfu else "–"
            check = median(arm.energy_check) if arm.energy_check else "–"
            lines.append(f"| {case.name} | {name} | {median(arm.rates)} {case.metric.replace('_per_sec', '/s')} | "
                         f"{mfu} | {median(arm.joules_per_item)} J/{case.item} | {check} | "
                         f"{ratio.text() if name == 'kubebench' else ''} |")
            data[case.name][name] = {"rates": arm.rates, "mfu": arm.mfu, "joules_per_item": arm.joules_per_item,
                                     "energy_check": arm.energy_check, "notes": sorted(arm.notes)}
    notes = sorted({n for arms in results.values() for arm in arms.values() for n in arm.notes})
    lines += [""] + [f"- published: {REFERENCES[c.name]}" for c in all_cases] + [f"- note: {n}" for n in notes]
    return "\n".join(lines), data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="tiny CPU workloads (the default without a GPU)")
    parser.add_argument("--rounds", type=int, default=2, help="alternated rounds of bare and kubebench runs")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--cases", default="cnn,llm", help="which workloads, comma-separated (cnn, llm)")
    parser.add_argument("--cpus", default="", help="pin to these CPUs ('1', '0,1', 'last'; as bench/harness.py): "
                                                   "both arms then compete for the same core")
    parser.add_argument("--steps", type=int, help="measured steps per run instead of the defaults (10/12 fast, "
                                                  "40/30 full); longer runs narrow the ratio's CI")
    args = parser.parse_args()
    import torch

    fast = args.fast or not torch.cuda.is_available()
    pinned = pin(args.cpus)
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    print(f"bench/gpu.py: {'fast (CPU)' if fast else 'full'} check on {device}; CPUs {pinned}; {load_line()}",
          flush=True)
    wanted = set(args.cases.split(","))
    started, all_cases = time.monotonic(), [c for c in cases(fast, args.steps) if c.name in wanted]
    folder = Path(tempfile.mkdtemp(prefix="kubebench-gpu-bench-"))
    results = {c.name: {"bare": Arm(), "kubebench": Arm()} for c in all_cases}
    try:
        store = open_store(settings(home=folder / "home").store_url)
        for i in range(args.rounds):
            for case in all_cases:
                for arm in (("bare", "kubebench") if i % 2 == 0 else ("kubebench", "bare")):
                    if arm == "bare":
                        bare(case, folder, results[case.name]["bare"])
                    else:
                        through(case, folder, store, results[case.name]["kubebench"], i)
                print(f"  round {i} {case.name}: bare {results[case.name]['bare'].rates[-1]:,.1f}, kubebench "
                      f"{results[case.name]['kubebench'].rates[-1]:,.1f} {case.metric} ({load_line()})", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text, data = table(results, all_cases)
    print("\n" + text)
    print(f"\n{time.monotonic() - started:.0f} s; {'fast (CPU) mode' if fast else device}; at the end: {load_line()}")
    if args.json:
        args.json.write_text(json.dumps({"device": device, "fast": fast, **data}, indent=1) + "\n")


if __name__ == "__main__":
    main()
