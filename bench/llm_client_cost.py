"""The load generator's own cost: CPU seconds per streamed request, so requests/s one core can drive.

The fake server answers at once (TTFT = TPOT = 0) with ``--tokens`` chunks per request; the load
generator runs closed loop at ``--concurrency`` in its own process; its CPU time (user + system,
from the kernel) over the requests it completed is the client's cost. Server and client are pinned
to different cores when there are two.

    .venv/bin/python bench/llm_client_cost.py [--requests 2000] [--tokens 16,64]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from kubebench.serving.records import read_records
from kubebench.testing.postgres import free_port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--tokens", default="16,64")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    print(f"load average before: {os.getloadavg()}  cpus: {len(cpus)}")
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", str(cpus[0]), sys.executable, "-m", "kubebench.testing.llm_fake",
                               "--port", str(port), "--ttft", "0", "--tpot", "0"])
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        with tempfile.TemporaryDirectory() as tmp:
            for tokens in (int(t) for t in args.tokens.split(",")):
                path = Path(tmp) / f"r{tokens}.parquet"
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                subprocess.run(["taskset", "-c", str(cpus[-1]), sys.executable, "-m", "kubebench.workloads.llm_load",
                                "--endpoint", f"http://127.0.0.1:{port}/v1", "--model", "m",
                                "--concurrency", str(args.concurrency), "--requests", str(args.requests),
                                "--output-tokens", str(tokens), "--records", str(path), "--allow-invalid"],
                               check=True, stdout=subprocess.DEVNULL)
                wall = time.perf_counter() - started
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                records = read_records(path).records
                ok = sum(r.ok for r in records)
                # the process's start-up (imports) is charged too: a conservative figure
                print(f"{tokens:4d} tokens/request: {ok} requests, client CPU {cpu:.2f} s ({cpu / ok * 1e3:.2f} ms/request,"
                      f" {ok / cpu:.0f} requests/s per core incl. start-up), wall {wall:.1f} s")
    finally:
        server.terminate()
        server.wait()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
