"""`kubebench history` and the history page over a series of 500 experiments × 20 trials (SQLite).

The store holds series ``scale``: 500 experiments, each 20 trials (``bs`` swept) × 5 runs of two
metrics (CV 2%), trial bs=1 stepping down 3% at experiment 300, every experiment labelled with a
commit. Times:

- ``kubebench history scale`` as a user runs it (a new process, table and JSON output), and in-process
  the two halves (reading the series, analysing it). Target: < 1 s.
- the history page in headless Chromium, served by ``kubebench serve`` in its own process: from
  navigation start to the changes table filled (``history-ready``) and to the plot drawn
  (``history-plotted``); the first load (the server computes the history) apart, then ``--rounds``
  loads after 3 warm-up loads (the server's cache of the series and the browser's cache warm, as for
  a user coming back). Target: p95 < 300 ms.

    PYTHONPATH=src python bench/history_scale.py [--experiments 500] [--trials 20] [--rounds 20]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

TARGET_CLI_S = 1.0
TARGET_PAGE_MS = 300
MARKS = "['history-ready', 'history-plotted'].map((n) => performance.getEntriesByName(n)[0]?.startTime ?? null)"


def seed(url: str, experiments: int, trials: int, runs: int = 5) -> None:
    """The series ``scale`` (see the module docstring)."""
    store = open_store(url)
    rng = np.random.default_rng(0)
    params = [{"bs": b + 1} for b in range(trials)]
    step_at = experiments * 3 // 5
    for i in range(experiments):
        levels = np.array([1000.0 * (0.97 if (t == 0 and i >= step_at) else 1.0) for t in range(trials)])
        ips = levels[:, None] * (1 + 0.02 * rng.standard_normal((trials, runs)))
        latency = 10 * (1 + 0.02 * rng.standard_normal((trials, runs)))
        store_experiment(store, f"s{i:04d}", "scale", {"ips": ips.tolist(), "latency_ms": latency.tolist()},
                         params=params, created_at=1_700_000_000.0 + 3600 * i, labels={"commit": f"c{i:04d}"},
                         goals={"latency_ms": "minimize"})
    store.engine.dispose()


def cli_times(url: str, rounds: int) -> dict[str, list[float]]:
    """Wall times (s) of ``kubebench history scale`` (table, JSON) in new processes, alternated round by
    round with two baselines of this moment's machine: ``kubebench --help`` and ``python -c pass``."""
    env = {**os.environ, "COLUMNS": "200"}
    commands = {
        "kubebench history scale": ["-m", "kubebench", "history", "scale", "--store", url],
        "kubebench history scale -f json": ["-m", "kubebench", "history", "scale", "--store", url, "-f", "json"],
        "baseline: kubebench --help": ["-m", "kubebench", "--help"],
        "baseline: python -c pass": ["-c", "pass"],
    }
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(rounds):
        for label, args in commands.items():
            start = time.perf_counter()
            done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
            times[label].append(time.perf_counter() - start)
            if done.returncode != 0:
                raise RuntimeError(done.stderr)
    return times


def phases(url: str) -> tuple[float, float]:
    """(read the series, analyse it) in seconds, in this process (imports done before)."""
    from kubebench.analyse.history import history
    from kubebench.store.series import read_series

    store = open_store(url)
    start = time.perf_counter()
    data = read_series(store, "scale", environments=True)
    read = time.perf_counter() - start
    start = time.perf_counter()
    found = history(data, "ips", "maximize")
    analyse = time.perf_counter() - start
    assert any(h.changes for h in found), "the step of bs=1 was not found"
    store.engine.dispose()
    return read, analyse


def page_times(url: str, home: Path, rounds: int):
    # web_page is in this folder: `kubebench serve` in a process of its own
    from playwright.sync_api import sync_playwright
    from web_page import served

    executable = os.environ.get("KUBEBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not executable:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with served(url, home) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        loads = [load(page, base + "/history/scale") for _ in range(rounds + 4)]
        browser.close()
    return loads[0], loads[4:]


def load(page, url: str) -> tuple[float, float]:
    # polled from here: wait_for_function evaluates a string in the page, which its CSP forbids
    page.goto(url, wait_until="load")
    deadline = time.monotonic() + 60
    while None in (marks := page.evaluate(MARKS)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}: the page did not mark history-ready and history-plotted in 60 s")
        time.sleep(0.02)
    ready, plotted = marks
    return ready, plotted


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=500)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kubebench-history-bench-"))
    url = f"sqlite:///{folder / 'bench.db'}"
    try:
        start = time.perf_counter()
        seed(url, args.experiments, args.trials)
        print(f"seeded {args.experiments} experiments × {args.trials} trials × 5 runs in {time.perf_counter() - start:.0f} s")
        read, analyse = phases(url)
        cli = cli_times(url, 7)
        first, loads = page_times(url, folder, args.rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    one, five, _ = os.getloadavg()
    print(f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs")
    print(f"in-process: read the series {read * 1000:.0f} ms, analyse {args.trials} trials {analyse * 1000:.0f} ms")
    for label, times in cli.items():
        verdict = "" if label.startswith("baseline") else (
            f" (target < {TARGET_CLI_S:.0f} s: {'ok' if statistics.median(times) < TARGET_CLI_S else 'MISSED'})")
        print(f"{label}: median {statistics.median(times):.2f} s of {len(times)}, min {min(times):.2f} s{verdict}")
    ready, plotted = [r for r, _ in loads], [p for _, p in loads]
    print(f"history page, first load (server computes): table {first[0]:.0f} ms, plot {first[1]:.0f} ms")
    print(f"history page, {args.rounds} loads: table p50 {statistics.median(ready):.0f} ms / p95 "
          f"{percentile(ready, 0.95):.0f} ms; plot drawn p50 {statistics.median(plotted):.0f} ms / p95 "
          f"{percentile(plotted, 0.95):.0f} ms (target p95 < {TARGET_PAGE_MS} ms)")


if __name__ == "__main__":
    main()
