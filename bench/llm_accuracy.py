"""How exactly the LLM load generator measures a server of known behaviour.

Starts kubebench.testing.llm_fake (first token ``TTFT`` s after a request arrives, then one every
``TPOT`` s; no slot limit) and runs ``python -m kubebench.workloads.llm_load`` against it, each in
its own process, at 1, 10 and 50 requests/s; prints the measured TTFT and TPOT medians against the
truth, then the achieved rate of a 60 s run against the configured one. Prints the load average
before and after: on a shared machine, say how busy it was with the figures.

    .venv/bin/python bench/llm_accuracy.py [--duration 20] [--rates 1,10,50] [--long 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from kubebench.serving.metrics import serving_metrics
from kubebench.serving.records import read_records
from kubebench.serving.validate import send_rate
from kubebench.testing.postgres import free_port

TTFT, TPOT, TOKENS = 0.2, 0.02, 32


def start_server(port: int) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-m", "kubebench.testing.llm_fake", "--port", str(port),
                               "--ttft", str(TTFT), "--tpot", str(TPOT)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return server
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the fake server did not start")


def load(port: int, folder: Path, *extra: str) -> tuple[dict, object]:
    path = folder / f"requests-{time.monotonic_ns()}.parquet"
    argv = [sys.executable, "-m", "kubebench.workloads.llm_load", "--endpoint", f"http://127.0.0.1:{port}/v1",
            "--output-tokens", str(TOKENS), "--input-tokens", "64", "--records", str(path), "--allow-invalid",
            "--scrape-interval", "60", *extra]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    data = read_records(path)
    return serving_metrics(data), data


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--rates", default="1,10,50")
    parser.add_argument("--long", type=float, default=60.0)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}  cpus: {os.cpu_count()}")
    port = free_port()
    server = start_server(port)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            print(f"truth: TTFT {TTFT * 1e3:.1f} ms, TPOT {TPOT * 1e3:.1f} ms, {TOKENS} output tokens")
            for rate in (float(r) for r in args.rates.split(",")):
                m, data = load(port, folder, "--rate", str(rate), "--duration", str(args.duration), "--warmup", "1")
                c = data.meta["client"]
                print(f"rate {rate:5g}/s: TTFT p50 {m['ttft_p50'] * 1e3:7.2f} ms ({(m['ttft_p50'] / TTFT - 1):+.2%})  "
                      f"TPOT p50 {m['tpot_p50'] * 1e3:6.2f} ms ({(m['tpot_p50'] / TPOT - 1):+.2%})  "
                      f"n={int(m['requests_measured'])}  lag p99 {c.get('client_lag_p99', 0) * 1e3:.1f} ms  "
                      f"loop p99 {c.get('loop_delay_p99', 0) * 1e3:.1f} ms  valid={data.meta['valid']}")
            if args.long > 0:
                for law in ("constant", "poisson"):
                    m, data = load(port, folder, "--rate", "10", "--duration", str(args.long), "--arrivals", law)
                    achieved = send_rate(data.records, "sent", data.window)
                    scheduled = send_rate(data.records, "scheduled", data.window)
                    print(f"{law} 10/s over {args.long:g} s: achieved {achieved:.4f}/s ({achieved / 10 - 1:+.2%} of "
                          f"configured, {achieved / scheduled - 1:+.3%} of the schedule's own rate {scheduled:.4f}/s)"
                          f"  KS p={data.meta['client'].get('arrival_ks_pvalue', float('nan')):.3g}"
                          f"  gap CV {data.meta['client'].get('arrival_gap_cv', float('nan')):.2g}")
    finally:
        server.terminate()
        server.wait()
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
