"""The Kubernetes backend's cost: API calls to track many concurrent jobs, and overhead per run.

Runs kubebench's real code path (plan → render → create → watch → logs → delete → collect → store)
through the official client against the test suite's API emulator on loopback, with the operator
stand-in "running" each job for a fixed time without a process (so that only kubebench is measured).

1. API calls to track N concurrent jobs to completion (parallelism N), counted in the emulator's
   request log, for N = 10 and 100: the list + watch calls that track the jobs stay constant (plus
   the pre-flight check and one node read, once); the calls per job (create, one log stream per
   container, the final list of its pods, each pod's events once, delete) grow with jobs; status checks
   read the watch's cache.
2. Overhead per run: N runs one after another; per run, kubebench's wall time minus the time the
   job existed on the "cluster" (from its creation to its completion as the stand-in saw them).
3. Log following at scale (``--workers``): every container of every pod is followed by a thread of its
   own, over its own HTTP connection, into its own open file, for as long as it runs. The peak number
   of log streams of N concurrent jobs of W pods each, and the runner's soft limit of open files
   (``RLIMIT_NOFILE``) that they count against (two descriptors each: the socket and the file).

    .venv/bin/python bench/k8s_api_calls.py [--jobs 100] [--job-seconds 5] [--runs 30] [--rounds 3] [--workers 8]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.cluster.emulator import Emulator  # noqa: E402
from support.cluster.standin import CLAIMS, OperatorStandIn  # noqa: E402

from kubebench.backends.kube.backend import KubernetesBackend  # noqa: E402
from kubebench.runner import execute, plan_experiment  # noqa: E402
from kubebench.settings import settings  # noqa: E402
from kubebench.spec.load import load_spec  # noqa: E402
from kubebench.store.store import open_store  # noqa: E402

SPEC = """name: k8s-bench
job: {kind: Job, command: [run-benchmark], workers: %d}
repeats: %d
parallelism: %d
timeout: 10m
backend: {kind: kubernetes, namespace: bench}
"""


def category(request) -> str:
    if request.watch:
        return "watch"
    if request.path.endswith("/log"):
        return "log"
    if request.method == "GET" and "kubebench.io/run=" in request.query.get("labelSelector", ""):
        return "run pods"  # the final list of a run's pods, once per job
    if request.method == "GET" and "involvedObject.uid=" in request.query.get("fieldSelector", ""):
        return "pod events"  # each pod's events once, for the run's timeline (docs/overhead.md)
    if request.method == "GET" and (request.path.count("/") <= 3 or "/nodes/" in request.path
                                    or request.path.count("/") == 4):
        return "once"  # pre-flight (discovery, namespace) and the node read for provenance
    return {"POST": "create", "DELETE": "delete"}.get(request.method, "list" if request.path.endswith("s") else "get")


def experiment(folder: Path, runs: int, parallelism: int, job_seconds: float, name: str, workers: int = 1) -> dict:
    """Run one experiment against a fresh emulator; its request counts and timings, and the most log
    streams that were open at once (each a ``kubebench-log-…`` thread)."""
    emulator = Emulator().start()
    emulator.namespace("bench")
    home = folder / name
    home.mkdir()
    os.environ["KUBECONFIG"] = str(emulator.kubeconfig(folder / f"{name}.kubeconfig", "bench"))
    emulator.store.create(CLAIMS, "bench", {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                            "metadata": {"name": "kubebench"}, "spec": {}})
    operator = OperatorStandIn(emulator, home, folder, folder / f"{name}-logs", simulate=job_seconds).start()
    checks = Counter()
    status = KubernetesBackend.status

    def counted(self, handle):
        checks["status"] += 1
        return status(self, handle)

    KubernetesBackend.status = counted
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], sum(t.name.startswith("kubebench-log-") for t in threading.enumerate()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        (folder / "spec.yaml").write_text(SPEC % (workers, runs, parallelism))
        config = settings(home=home)
        store = open_store(config.store_url)
        plan = plan_experiment(load_spec(folder / "spec.yaml"), config, name)
        started = time.perf_counter()
        execute(plan, store)
        wall = time.perf_counter() - started
        failed = [r.reason for r in store.runs(name) if r.status != "succeeded"]
        if failed:
            raise SystemExit(f"{len(failed)} runs failed: {failed[0]}")
        calls = Counter(category(r) for r in emulator.requests)
        active = [end - start for start, end in operator.timings.values()]
        return {"calls": calls, "wall": wall, "active": active, "checks": checks["status"],
                "max_active": operator.max_active, "streams": peak[0]}
    finally:
        done.set()
        sampler.join()
        KubernetesBackend.status = status
        operator.stop()
        emulator.stop()


def report_calls(result: dict, jobs: int) -> None:
    calls = result["calls"]
    tracking = calls["list"] + calls["watch"] + calls["once"]
    per_job = calls["create"] + calls["log"] + calls["delete"] + calls["get"] + calls["run pods"] + calls["pod events"]
    print(f"{jobs:>5} {result['max_active']:>7} {sum(calls.values()):>6} {tracking:>9} {per_job:>8} "
          f"{per_job / jobs:>8.2f} {result['checks']:>13}   {dict(sorted(calls.items()))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--job-seconds", type=float, default=5.0)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="also measure log streams of jobs of this many pods")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubebench-k8s-bench-") as tmp:
        folder = Path(tmp)
        experiment(folder, 2, 1, 0.0, "warm-up")  # imports and first-call costs out of the figures
        print("API calls to track concurrent jobs to completion (each job 'runs' "
              f"{args.job_seconds:g} s; parallelism = jobs)")
        print(f"{'jobs':>5} {'in fl.':>7} {'calls':>6} {'tracking':>9} {'per job':>8} {'per job':>8} "
              f"{'status checks':>13}   by kind")
        results = {}
        for jobs in sorted({10, args.jobs}):
            results[jobs] = experiment(folder, jobs, jobs, args.job_seconds, f"calls-{jobs}")
            report_calls(results[jobs], jobs)
        big = results[args.jobs]
        print(f"→ {sum(big['calls'].values())} API calls for {args.jobs} concurrent jobs: "
              f"{big['calls']['list'] + big['calls']['watch'] + big['calls']['once']} to track them all (one list + "
              "one watch per kind, the pre-flight, version and node reads), the rest create, stream logs, list a "
              f"run's pods and each pod's events, and delete; {big['checks']} status checks made no call.")

        rounds = [experiment(folder, args.runs, 1, 0.0, f"overhead-{i}") for i in range(args.rounds)]
        overhead = statistics.median((r["wall"] - sum(r["active"])) / args.runs for r in rounds)
        per_run = statistics.median(r["wall"] / args.runs for r in rounds)
        active = statistics.median(statistics.mean(r["active"]) for r in rounds)
        print(f"overhead per run, one after another (median of {args.rounds} rounds of {args.runs} runs, a "
              f"1-replica batch Job each): {overhead * 1000:.1f} ms (kubebench's wall time {per_run * 1000:.1f} ms "
              f"per run, of which the job existed on the cluster {active * 1000:.1f} ms)")
        if args.workers:
            report_streams(experiment(folder, args.jobs, args.jobs, args.job_seconds, "streams", args.workers),
                           args.jobs, args.workers)


def report_streams(result: dict, jobs: int, workers: int) -> None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    streams = result["streams"]
    print(f"log streams of {jobs} concurrent jobs of {workers} pods: at most {streams} open at once (one thread, one "
          f"connection and one open file each: about {2 * streams} file descriptors); this runner's soft limit of "
          f"open files is {soft}")


if __name__ == "__main__":
    main()
