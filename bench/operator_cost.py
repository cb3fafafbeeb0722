"""The Benchmark controller's cost (issue #32): API calls for N Benchmarks, time per reconcile, and
the size of the generated CRD.

Runs the real controller (``kubebench.operator.controller``) through the official client against the
test suite's API emulator on loopback, without the operator stand-in: the runner Jobs it creates are
marked Complete directly in the emulator's store, as the Job controller would, so that only the
controller is measured (its runner's own calls are ``bench/k8s_api_calls.py``'s).

1. API calls for N Benchmarks from creation to Succeeded, by verb and resource, from the emulator's log;
2. wall time per reconcile (``Controller.reconcile``: the caches, the spec's load and plan, the writes),
   and of the pure decision alone (``reconcile.decide``);
3. the CRD's size (YAML and JSON bytes, and without descriptions).

    .venv/bin/python bench/operator_cost.py [--benchmarks 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.cluster.emulator import Emulator  # noqa: E402

from kubebench.attempts import dump_yaml  # noqa: E402
from kubebench.backends.kube.config import KubernetesConfig  # noqa: E402
from kubebench.operator import API_VERSION, GROUP, PLURAL, VERSION  # noqa: E402
from kubebench.operator.controller import Controller, Options  # noqa: E402
from kubebench.operator.crd import crd  # noqa: E402
from kubebench.operator.reconcile import Observed, decide  # noqa: E402
from kubebench.operator.validate import check  # noqa: E402

BENCHMARKS = (GROUP, VERSION, PLURAL)
JOBS = ("batch", "v1", "jobs")
SPEC = {"name": "b", "job": {"kind": "Job", "command": ["python", "-c", "pass"]}, "parameters": {"bs": [16, 32, 64]},
        "repeats": 3, "metrics": [{"name": "v", "primary": True}], "backend": "kubernetes"}


def category(request) -> str:
    resource = request.path.rstrip("/").split("/")
    if request.watch:
        return f"WATCH {resource[-1]}"
    if "benchmarks" in resource and resource[-1] == "status":
        return f"{request.method} benchmarks/status"
    plural = next((p for p in reversed(resource) if p in ("benchmarks", "jobs", "cronjobs", "configmaps", "leases")), resource[-1])
    named = resource[-1] != plural
    return f"{request.method} {plural}{' (one)' if named and request.method == 'GET' else ''}"


def wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def states(emu: Emulator) -> Counter:
    return Counter((o.get("status") or {}).get("state") for (k, _, _), o in list(emu.store.objects.items()) if k == BENCHMARKS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=100)
    args = parser.parse_args()
    n = args.benchmarks
    emu = Emulator().start()
    emu.namespace("bench")
    emu.store.create(("apiextensions.k8s.io", "v1", "customresourcedefinitions"), "", crd())
    with tempfile.TemporaryDirectory() as folder:
        os.environ["KUBECONFIG"] = str(emu.kubeconfig(Path(folder) / "kubeconfig", "bench"))
        controller = Controller(KubernetesConfig(), Options("bench", workers=2))
        timings: list[float] = []
        inner = controller.reconcile

        def timed(name: str):
            t0 = time.perf_counter()
            try:
                return inner(name)
            finally:
                timings.append(time.perf_counter() - t0)

        controller.reconcile = timed  # type: ignore[method-assign]
        controller.start()
        t0 = time.monotonic()
        for i in range(n):
            emu.store.create(BENCHMARKS, "bench", {"apiVersion": API_VERSION, "kind": "Benchmark",
                                                  "metadata": {"name": f"b-{i}"}, "spec": {"benchmark": SPEC}})
        wait(lambda: states(emu).get("Pending", 0) == n, 300, "every Benchmark Pending with its runner Job")
        accepted = time.monotonic() - t0
        created = Counter(category(r) for r in emu.requests)
        for k, ns, name in list(emu.store.objects):
            if k == JOBS:
                emu.store.update(JOBS, ns, name, lambda o: {**o, "status": {"startTime": "2026-12-02T00:00:00Z", "completionTime": "2026-12-02T00:01:00Z",
                                                                            "conditions": [{"type": "Complete", "status": "True"}]}}, status=True)
        wait(lambda: states(emu).get("Succeeded", 0) == n, 300, "every Benchmark Succeeded")
        total = Counter(category(r) for r in emu.requests)
        controller.stop()
    emu.stop()
    print(f"{n} Benchmarks: all Pending with their runner Job in {accepted:.1f} s; {controller.reconciles} reconciles, "
          f"{controller.errors} errors")
    print(f"API calls, creation to Pending ({sum(created.values())}):", dict(sorted(created.items())))
    print(f"API calls, creation to Succeeded ({sum(total.values())}, {sum(total.values()) / n:.2f} per Benchmark):",
          dict(sorted(total.items())))
    print(f"reconcile wall time: median {statistics.median(timings) * 1e3:.2f} ms, p90 "
          f"{statistics.quantiles(timings, n=10)[-1] * 1e3:.2f} ms, max {max(timings) * 1e3:.1f} ms over {len(timings)}")
    cr = {"apiVersion": API_VERSION, "kind": "Benchmark", "metadata": {"name": "b", "namespace": "bench", "uid": "0" * 12,
                                                                       "generation": 1}, "spec": {"benchmark": SPEC}}
    t1 = time.perf_counter()
    verdict = check(cr, None, "spec.benchmark")
    check_ms = (time.perf_counter() - t1) * 1e3
    t1 = time.perf_counter()
    for _ in range(1000):
        decide(Observed(cr, verdict, None, now=0))
    print(f"spec load + plan (once per generation): {check_ms:.1f} ms; pure decision: {(time.perf_counter() - t1):.3f} ms each "
          f"(1000 in {(time.perf_counter() - t1) * 1e3:.0f} ms)")
    full, bare = crd(), crd(describe=False)
    print(f"CRD: {len(dump_yaml(full))} bytes of YAML, {len(json.dumps(full))} of JSON; "
          f"{len(json.dumps(bare))} JSON bytes without descriptions")


if __name__ == "__main__":
    main()
