"""Fidelity of the CNN workload run through kubebench, and its 1 → 2 worker scaling efficiency.

Fidelity: images/sec of ``kubebench.workloads.cnn`` launched by kubebench (plan → render → local
backend → collect → store, telemetry on; the figure read back from the store) against a bare
~20-line PyTorch loop training the same model on the same batch with the same threads and steps,
each in a fresh process. The arms alternate (their order rotates every round) for ``--rounds``
rounds in one process, all pinned to one CPU (``--cpus``; children inherit the mask), so that
machine noise hits them alike and the harness's threads compete with the workload for the same
core. The figure is the median of the rounds' kubebench / bare ratios with a bootstrap 95% CI.
Target: within 3%.

Arms (``--arms``, default ``bare,kubebench``): ``bare`` (the loop), ``module`` (``python -m kubebench.workloads.cnn`` started
directly: the workload's code without the harness), ``kubebench`` (telemetry on, the default) and
``kubebench-off`` (telemetry off). ``module`` / ``bare`` isolates the workload's code, ``kubebench`` /
``module`` the harness. Four views of each run: images/sec over the measured steps; batch / the
median step; batch / the fastest step (least disturbed by other load); images per CPU second of
the process (immune to waiting for the CPU). Then ``bench/cnn_steps.py`` compares the workload's
training step with the bare loop's interleaved step by step in one process, which cancels the
machine's noise, and the runner's own CPU per second of a run bounds what the harness can take.

Scaling: the same workload as a PyTorchJob with 1 and 2 workers (DDP over gloo, same per-worker
batch and threads: half the CPUs each; no pinning), efficiency = rate(2) / (2 × rate(1)).

    .venv/bin/python bench/cnn_fidelity.py [--rounds 20] [--cpus last] [--arms bare,module,kubebench,kubebench-off]
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
import time
from pathlib import Path

from benchlib import load_line, machine_line, paired_ratio, pin, spread, verdict

from kubebench.runner import execute, plan_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

# The bare loop: the clock runs over the measured steps, as the workload's does (each step timed,
# wall and process CPU); prints the step times as JSON.
BARE = """
import json, sys, time, torch
from torch import nn
from kubebench.workloads.models import build_model
name, (batch, steps, warmup, threads, size) = sys.argv[1], map(int, sys.argv[2:])
torch.set_num_threads(threads)
torch.manual_seed(0)
model = build_model(name, 3, 10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
images, labels = torch.randn(batch, 3, size, size), torch.randint(0, 10, (batch,))
wall, cpu = [], []
for step in range(warmup + steps):
    w, c = time.perf_counter(), time.process_time()
    optimizer.zero_grad(set_to_none=True)
    loss_fn(model(images), labels).backward()
    optimizer.step()
    wall.append(time.perf_counter() - w)
    cpu.append(time.process_time() - c)
print(json.dumps({"step_seconds": wall, "step_cpu_seconds": cpu}))
"""
VIEWS = ("images/sec", "batch / median step", "batch / fastest step", "images per CPU s")
ARMS = ("bare", "module", "kubebench", "kubebench-off")
Rates = tuple[float, float, float, float]
#: CPU seconds of this process (the runner: plan, wait loop, sampler, collect, store) for each kubebench
#: run: immune to machine noise, an upper bound of what it can take from the job (most of it is spent
#: before the job starts or after it ends).
RUNNER_CPU: list[float] = []


def rates(record: dict, warmup: int, images_per_step: int) -> Rates:
    """The four views of one run's step times (measured steps only)."""
    wall = record["step_seconds"][warmup:]
    cpu = record["step_cpu_seconds"][warmup:]
    return (images_per_step * len(wall) / sum(wall), images_per_step / statistics.median(wall),
            images_per_step / min(wall), images_per_step * len(cpu) / sum(cpu))


def cnn_args(args: argparse.Namespace, threads: int) -> list[str]:
    return ["-m", "kubebench.workloads.cnn", "--model", args.model, "--batch-size", str(args.batch_size),
            "--steps", str(args.steps), "--warmup-steps", str(args.warmup_steps), "--image-size", str(args.image_size),
            "--threads", str(threads)]


def bare(args: argparse.Namespace, folder: Path, name: str) -> Rates:
    argv = [args.model, args.batch_size, args.steps, args.warmup_steps, args.threads, args.image_size]
    # A session of its own, as the local backend gives its replicas: with the kernel's autogroup
    # scheduling each session is one group in the CPU's fair share, so all arms compete alike.
    done = subprocess.run([sys.executable, "-c", BARE, *map(str, argv)], check=True, capture_output=True, text=True,
                          start_new_session=True)
    return rates(json.loads(done.stdout.splitlines()[-1]), args.warmup_steps, args.batch_size)


def module(args: argparse.Namespace, folder: Path, name: str) -> Rates:
    """The workload's own code started directly, its step times from the file it writes."""
    out = folder / name
    env = {**os.environ, "KUBEBENCH_EXP_OUTPUT_PATH": str(out)}
    subprocess.run([sys.executable, *cnn_args(args, args.threads)], check=True, capture_output=True, env=env,
                   start_new_session=True)
    return rates(json.loads((out / "step_times.json").read_text()), args.warmup_steps, args.batch_size)


def through_kubebench(args: argparse.Namespace, folder: Path, name: str, kind: str = "Process", workers: int = 1,
                      threads: int | None = None, telemetry: bool = True) -> Rates:
    """Run the CNN through kubebench's real code path; images/sec as stored, the other views from
    the step times the run wrote.
    """
    command = ["python", *cnn_args(args, threads or args.threads)]
    spec = folder / f"{name}.yaml"
    quoted = ", ".join(f'"{c}"' for c in command)
    spec.write_text(f"name: {name}\njob:\n  kind: {kind}\n  workers: {workers}\n  command: [{quoted}]\n"
                    f"metrics:\n  - {{name: images_per_sec}}\ntelemetry: {{enabled: {str(telemetry).lower()}}}\n")
    config = settings(home=folder / "home")
    store = open_store(config.store_url)
    experiment = plan_experiment(load_spec(spec), config, name)
    cpu = time.process_time()
    execute(experiment, store)
    RUNNER_CPU.append(time.process_time() - cpu)
    (run,) = store.runs(experiment.plan.experiment_id)
    if run.status != "succeeded":
        raise SystemExit(f"{name}: {run.status}: {run.reason}")
    record = json.loads((Path(run.path) / "output" / "step_times.json").read_text())
    views = rates(record, args.warmup_steps, args.batch_size * workers)
    return (run.metrics["images_per_sec"], *views[1:])


RUNNERS = {
    "bare": bare,
    "module": module,
    "kubebench": through_kubebench,
    "kubebench-off": lambda args, folder, name: through_kubebench(args, folder, name, telemetry=False),
}


def fidelity(args: argparse.Namespace, folder: Path) -> bool:
    arms = args.arms.split(",")
    found: dict[str, list[Rates]] = {arm: [] for arm in arms}
    for i in range(args.rounds):
        # Rotate the order every round, so that a drifting machine and a warm cache favour no arm.
        for arm in arms[i % len(arms):] + arms[:i % len(arms)]:
            found[arm].append(RUNNERS[arm](args, folder, f"{arm}-{i}"))
        print(f"round {i:>2}: " + "  ".join(f"{arm} {found[arm][-1][0]:7.1f}" for arm in arms)
              + f"  images/s  ({load_line()})", flush=True)
    print(f"\nsetup: model {args.model}, batch {args.batch_size}, image {args.image_size}px, {args.threads} thread(s), "
          f"{args.steps} steps after {args.warmup_steps} warm-up, {args.rounds} rounds")
    for arm in arms:
        print(f"  {arm:<14} images/sec over the rounds: {spread([r[0] for r in found[arm]])}")
    print(f"\n{'ratio (median of rounds [95% CI]; geometric mean)':<52}" + "".join(f"{v:>28}" for v in VIEWS))
    comparisons = [(arm, "bare") for arm in arms[1:]]
    comparisons += [(a, b) for a, b in (("kubebench", "module"), ("kubebench", "kubebench-off")) if {a, b} <= set(arms)]
    for arm, over in comparisons:
        cells = []
        for k in range(len(VIEWS)):
            r = paired_ratio([x[k] for x in found[arm]], [x[k] for x in found[over]])
            cells.append(f"{r.text()}; {r.geomean:.3f}")
        print(f"{arm + ' / ' + over:<52}" + "".join(f"{c:>28}" for c in cells))
    passed = True
    if "kubebench" in arms and "bare" in arms:
        r = paired_ratio([x[0] for x in found["kubebench"]], [x[0] for x in found["bare"]])
        passed = abs(r.median - 1) <= 0.03
        print(f"\nfidelity: kubebench / bare images/sec = {r.text()} over {r.rounds} rounds — target within 3%: "
              f"{verdict(passed)}")
    if RUNNER_CPU:
        print(f"the runner's own CPU per kubebench run (plan to stored result): {1000 * statistics.median(RUNNER_CPU):.0f}"
              f" ms (median; the first run, which imports, {1000 * RUNNER_CPU[0]:.0f} ms)")
    return passed


def step_ab(args: argparse.Namespace) -> None:
    """The workload's step against the bare loop's, interleaved in one process (bench/cnn_steps.py)."""
    script = Path(__file__).with_name("cnn_steps.py")
    subprocess.run([sys.executable, str(script), "--model", args.model, "--batch-size", str(args.batch_size),
                    "--image-size", str(args.image_size), "--threads", str(args.threads), "--steps", "200"],
                   check=True, start_new_session=True)


def scaling(args: argparse.Namespace, folder: Path, cpus: list[int]) -> None:
    # Weak scaling: every worker gets the same CPUs in both runs (half the machine, like pods with a
    # fixed CPU limit), so that the efficiency measures the cost of synchronising, not of sharing.
    os.sched_setaffinity(0, cpus)
    threads = max(1, len(cpus) // 2)
    found: dict[int, list[Rates]] = {1: [], 2: []}
    for i in range(args.scaling_rounds):
        for workers in ((1, 2) if i % 2 == 0 else (2, 1)):
            found[workers].append(through_kubebench(args, folder, f"scaling-{workers}-{i}", "PyTorchJob", workers, threads))
        print(f"round {i}: images/s 1 worker {found[1][-1][0]:8.1f}  2 workers {found[2][-1][0]:8.1f}  ({load_line()})",
              flush=True)
    for k, name in enumerate(VIEWS[:3]):
        one, two = statistics.median(r[k] for r in found[1]), statistics.median(r[k] for r in found[2])
        r = paired_ratio([r[k] for r in found[2]], [2 * r[k] for r in found[1]])
        print(f"scaling 1 → 2 workers, {name}: {one:.1f} → {two:.1f}, efficiency {r.median:.1%} "
              f"[{r.ci[0]:.1%}, {r.ci[1]:.1%}] (median of rounds; {threads} thread(s) per worker; DDP over gloo)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="small")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup-steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cpus", default="last", help="pin the fidelity arms: CPU list, 'last', or 'none'")
    parser.add_argument("--threads", type=int, default=0, help="PyTorch threads (0: the pinned CPUs)")
    parser.add_argument("--arms", default="bare,kubebench", help=f"comma-separated, bare first: {', '.join(ARMS)}")
    parser.add_argument("--scaling-rounds", type=int, default=6)
    parser.add_argument("--skip-scaling", action="store_true")
    parser.add_argument("--skip-fidelity", action="store_true")
    args = parser.parse_args()
    if not args.arms.startswith("bare") or not set(args.arms.split(",")) <= set(ARMS):
        parser.error(f"--arms: bare first, then any of {', '.join(ARMS[1:])}")
    everything = sorted(os.sched_getaffinity(0))
    folder = Path(tempfile.mkdtemp(prefix="kubebench-cnn-"))
    started = time.monotonic()
    try:
        pinned = pin(args.cpus)
        args.threads = args.threads or len(pinned)
        print(machine_line(pinned), flush=True)
        bare(args, folder, "warm")  # warm the page cache: the first import of torch reads it from disk
        passed = True if args.skip_fidelity else fidelity(args, folder)
        if not args.skip_fidelity:
            print("\nthe workload's code alone, step-interleaved with the bare loop in one process:", flush=True)
            step_ab(args)
        if not args.skip_scaling:
            print(f"\nscaling (unpinned, CPUs {','.join(map(str, everything))}):", flush=True)
            scaling(args, folder, everything)
        print(f"\n{time.monotonic() - started:.0f} s; at the end: {load_line()}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(0 if passed else 1)


if __name__ == "__main__":
    main()
