"""How well a run's phases are recovered: on the operator stand-in with known injected delays, and
locally for a real 2-worker CNN.

1. Stand-in (``--seeds 10``): for each seed, the stand-in's scheduling, image pull and container
   start delays and the workload's rendezvous are drawn at random (0.2–1.5 s, 0.2–2 s, 0.1–1 s,
   0.1–1 s); one 2-worker PyTorchJob runs through kubebench's real code path (official client,
   API emulator, watches, events); the reported ``scheduling_seconds``, ``image_pull_seconds``,
   ``container_start_seconds`` and ``rendezvous_seconds`` are compared with what was injected
   (bound: 50 ms or 5%, whichever is larger), and the sum of every phase with the run's wall time
   as the store records it (``started_at`` → ``finished_at``; bound 2%).
2. Local (``--local``): a 2-worker CNN PyTorchJob and a 1-process ``kind: Process`` run of the same
   workload on the local backend; the phases' sum against the wall time, and ``kubebench
   overhead``'s split of the difference by phase.

    .venv/bin/python bench/startup_phases.py [--seeds 10] [--local] [--timeline]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.cluster.emulator import Emulator  # noqa: E402
from support.cluster.standin import CLAIMS, OperatorStandIn  # noqa: E402

from kubebench.runner import execute, plan_experiment  # noqa: E402
from kubebench.settings import settings  # noqa: E402
from kubebench.spec.load import load_spec  # noqa: E402
from kubebench.store.store import open_store  # noqa: E402
from kubebench.timeline import CHAIN  # noqa: E402

MARKED = ("import time, kubebench; kubebench.mark('imports_done'); time.sleep({rendezvous:.3f}); "
          "kubebench.mark('rendezvous_done'); kubebench.mark('first_step'); time.sleep(0.5); "
          "kubebench.mark('last_step'); kubebench.report(v=1)")
STANDIN_SPEC = """name: phases-{seed}
job:
  kind: PyTorchJob
  workers: 2
  image: bench/marked:{seed}
  command: [python, -c, "{code}"]
  resources: {{cpu: 1}}
backend: {{kind: kubernetes, namespace: bench, unschedulable_grace: 60s}}
metrics: [{{name: v}}]
timeout: 2m
"""
CNN = ("[python, -m, kubebench.workloads.cnn, --batch-size, '16', --threads, '1', --steps, '20', "
       "--warmup-steps, '5']")
LOCAL_SPEC = """name: {name}
job: {{kind: {kind}, workers: {workers}, command: {command}}}
repeats: {repeats}
timeout: 5m
metrics: [{{name: images_per_sec, primary: true}}]
backend: local
"""
KNOWN = ("scheduling_seconds", "image_pull_seconds", "container_start_seconds", "rendezvous_seconds")


def within(found: float, expected: float) -> bool:
    return abs(found - expected) <= max(0.05, 0.05 * expected)


def run(folder: Path, text: str, experiment_id: str):
    (folder / f"{experiment_id}.yaml").write_text(text)
    store = open_store(settings().store_url)
    execute(plan_experiment(load_spec(folder / f"{experiment_id}.yaml"), settings(), experiment_id), store)
    return store, store.runs(experiment_id)


def print_timeline(store, run) -> None:
    """Every reading of each moment of ``run``, seconds after its submit (what docs/overhead.md shows)."""
    timeline = store.timelines([run.run_id])[run.run_id]
    origin = min(b.t for b in timeline if b.name == "submitted")
    print(f"timeline of run {run.run_id}:")
    for b in timeline:
        print(f"  {b.t - origin:8.3f}  {b.name:16} {b.replica or 'run':9} {b.source:9} {b.precision:<6g} {b.origin}")


def standin(seeds: int, folder: Path, show: bool = False) -> bool:
    emulator = Emulator().start()
    emulator.namespace("bench")
    os.environ["KUBECONFIG"] = str(emulator.kubeconfig(folder / "kubeconfig", "bench"))
    home = folder / "home"
    home.mkdir()
    os.environ["KUBEBENCH_HOME"] = str(home)
    emulator.store.create(CLAIMS, "bench", {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                            "metadata": {"name": "kubebench"}, "spec": {}})
    operator = OperatorStandIn(emulator, home, folder, folder / "node-logs").start()
    ok, errors, sums = True, {k: [] for k in KNOWN}, []
    print(f"{'seed':>4} " + " ".join(f"{k.removesuffix('_seconds'):>22}" for k in KNOWN) + f" {'Σ phases / wall':>16}")
    try:
        for seed in range(seeds):
            rng = random.Random(seed)
            injected = dict(zip(KNOWN, (rng.uniform(0.2, 1.5), rng.uniform(0.2, 2.0), rng.uniform(0.1, 1.0),
                                        rng.uniform(0.1, 1.0))))
            delays = operator.kubelet.delays
            delays.schedule, delays.pull, delays.start = (injected[k] for k in KNOWN[:3])
            code = MARKED.format(rendezvous=injected["rendezvous_seconds"])
            store, (result,) = run(folder, STANDIN_SPEC.format(seed=seed, code=code), f"phases-{seed}")
            if show and seed == 0:
                print_timeline(store, result)
            m = result.metrics
            if result.status != "succeeded":
                print(f"seed {seed}: {result.status} {result.reason}")
                ok = False
                continue
            chain = sum(m[k] for _, k in CHAIN if k in m)
            ratio = chain / result.duration_s
            sums.append(ratio)
            cells = []
            for k in KNOWN:
                errors[k].append(m[k] - injected[k])
                good = within(m[k], injected[k])
                ok &= good
                cells.append(f"{injected[k]:.3f}→{m[k]:.3f} {'ok' if good else 'MISS'}".rjust(22))
            ok &= abs(ratio - 1) <= 0.02
            print(f"{seed:>4} " + " ".join(cells) + f" {ratio:>15.4f}{' ' if abs(ratio - 1) <= 0.02 else '!'}")
    finally:
        operator.stop()
        emulator.stop()
    for k, found in errors.items():
        if found:
            print(f"{k}: error mean {sum(found) / len(found) * 1000:+.1f} ms, "
                  f"largest |error| {max(abs(e) for e in found) * 1000:.1f} ms")
    if sums:
        print(f"Σ phases / wall: {min(sums):.4f} … {max(sums):.4f}")
    return ok


def local(folder: Path, repeats: int, show: bool = False) -> bool:
    home = folder / "local-home"
    home.mkdir()
    os.environ["KUBEBENCH_HOME"] = str(home)
    ok = True
    ids = {}
    for name, kind, workers in (("bare", "Process", 1), ("platform", "PyTorchJob", 2)):
        store, runs = run(folder, LOCAL_SPEC.format(name=name, kind=kind, workers=workers, command=CNN,
                                                    repeats=repeats), name)
        ids[name] = name
        if show:
            print_timeline(store, runs[0])
        for r in runs:
            m = r.metrics
            chain = sum(m[k] for _, k in CHAIN if k in m)
            ratio = chain / r.duration_s
            ok &= r.status == "succeeded" and abs(ratio - 1) <= 0.02
            print(f"{name} ({kind}, {workers} worker(s)): end to end {m.get('end_to_end_seconds', 0):.2f} s, "
                  f"wall {r.duration_s:.2f} s, Σ phases / wall {ratio:.4f}; " + ", ".join(
                      f"{k.removesuffix('_seconds')} {m[k]:.2f}" for _, k in CHAIN if k in m))
    from kubebench.analyse.startup import phase_overheads
    from kubebench.present.startup import overhead_split

    store = open_store(settings().store_url)
    for _params, split in phase_overheads(store.runs("bare"), store.runs("platform")):
        print("overhead by phase:", overhead_split(split))
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--local", action="store_true", help="also the local 2-worker CNN runs")
    parser.add_argument("--repeats", type=int, default=3, help="runs per local experiment")
    parser.add_argument("--timeline", action="store_true", help="print a run's every moment (seed 0, first local runs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ok = standin(args.seeds, Path(tmp), args.timeline) if args.seeds else True
        if args.local:
            ok &= local(Path(tmp), args.repeats, args.timeline)
    print("all within bounds" if ok else "SOME OUT OF BOUNDS")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
