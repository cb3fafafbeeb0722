"""The dashboard's experiments page in a real browser, with 10,000 experiments in the store.

Headless Chromium (Debian's ``chromium``, driven by Playwright) opens ``/`` served by
``kubebench serve`` (its own process) on loopback and times, from navigation start to the moment the page's JS has filled the table (the
``experiments-ready`` performance mark that ``static/experiments.js`` sets), the default first page,
a page filtered by state and backend, a search and a deep page. Each case is loaded ``--rounds``
times after 3 warm-up loads (the browser cache is on, as for a user coming back); the very first,
cold load (nothing cached, Python's caches cold too) is reported on its own. For reading the
figures it also gives the API request's own time (resource timing) and the HTML shell's.

The store is built as ``bench/web_list.py`` builds it (bulk inserts: 10,000 experiments × 9 runs in
a mix of states). Target: p95 < 300 ms.

    .venv/bin/python bench/web_page.py [--experiments 10000] [--rounds 30] [--store URL]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from web_list import seed  # same folder: the API helper's store builder

from kubebench.settings import settings as make_settings
from kubebench.store.store import open_store

TARGET_MS = 300
CASES = (  # label, query string
    ("first page (50 of 10,000)", ""),
    ("filtered: state=failed, backend=local", "?state=failed&backend=local"),
    ("search: q=00042", "?q=00042"),
    ("deep page: offset=9000", "?offset=9000"),
)
# A function, not an expression: Playwright evaluates an expression with eval, which the page's CSP forbids.
READY = "() => performance.getEntriesByName('experiments-ready')[0]?.startTime ?? null"
PARTS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const api = performance.getEntriesByType('resource').find((e) => e.name.includes('/api/experiments'));
  return {shell: nav.responseEnd - nav.startTime, api: api ? api.duration : null};
}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--store", default=None, help="store URL (default: a new SQLite file)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kubebench-web-page-bench-"))
    try:
        config = make_settings(home=folder, store=args.store or f"sqlite:///{folder / 'bench.db'}")
        store = open_store(config.store_url)
        seed(store, args.experiments)
        store.engine.dispose()
        cold, rows, floor = serve_and_measure(config.store_url, folder, args.rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report(cold, rows, floor, args.experiments, args.rounds)


def serve_and_measure(store_url: str, home: Path, rounds: int):
    from playwright.sync_api import sync_playwright

    executable = os.environ.get("KUBEBENCH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not executable:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with served(store_url, home) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True,
                                             args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        cold = load(page, url + "/")
        rows = [(label, [load(page, url + "/" + query) for _ in range(rounds + 3)][3:]) for label, query in CASES]
        floor = [floor_load(page, url + "/experiments/no-such-experiment") for _ in range(rounds + 3)][3:]
        browser.close()
    return cold, rows, floor


@contextmanager
def served(store_url: str, home: Path) -> Iterator[str]:
    """``kubebench serve`` in a process of its own, as users run it (not a thread sharing our GIL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "kubebench", "serve", "--store", store_url, "--port", str(port), "--token", "bench"]
    server = subprocess.Popen(command, env={**os.environ, "KUBEBENCH_HOME": str(home)}, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(url + "/api/config", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("kubebench serve did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def load(page, url: str) -> tuple[float, float, float]:
    """(ready, shell, API) in ms for one navigation to ``url``."""
    # waiting for "load" and then polling slowly keeps Playwright off the page's main thread while it
    # loads (polling every animation frame from the start slows the page down by itself); the figure
    # is the page's own performance mark, whenever it is read
    page.goto(url, wait_until="load")
    page.wait_for_function(READY, polling=100, timeout=30_000)
    ready = page.evaluate(READY)
    parts = page.evaluate(PARTS)
    rows = page.eval_on_selector_all("#experiments-table tbody tr[data-id]", "rows => rows.length")
    assert rows > 0, f"no rows rendered at {url}"
    return ready, parts["shell"], parts["api"] or float("nan")


def floor_load(page, url: str) -> float:
    """DOMContentLoaded (ms) of the same page shell without its scripts (the 404 page): what any
    navigation costs on this machine now, to read the figures against."""
    page.goto(url, wait_until="load")
    return page.evaluate("performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q * len(ordered)) - 1))]


def report(cold, rows, floor, experiments: int, rounds: int) -> None:
    one, five, _ = os.getloadavg()
    print(f"\nexperiments page in headless Chromium: {experiments:,} experiments in the store; {rounds} loads per "
          f"case after 3 warm-up loads; load average {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs")
    print(f"cold first load: {cold[0]:.0f} ms to a filled table (HTML shell {cold[1]:.0f} ms, API {cold[2]:.0f} ms)")
    print("| page | p50 ms | p95 ms | max ms | shell p50 ms | API p50 ms | target p95 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for label, loads in rows:
        ready = [r for r, _, _ in loads]
        p95 = percentile(ready, 0.95)
        verdicts.append(p95 < TARGET_MS)
        print(f"| {label} | {statistics.median(ready):.0f} | {p95:.0f} | {max(ready):.0f} | "
              f"{statistics.median(s for _, s, _ in loads):.0f} | {statistics.median(a for _, _, a in loads):.0f} | "
              f"< {TARGET_MS} ms ({'ok' if verdicts[-1] else 'MISSED'}) |")
    print(f"| for reference: the shell without scripts (404 page), DOMContentLoaded | {statistics.median(floor):.0f} | "
          f"{percentile(floor, 0.95):.0f} | {max(floor):.0f} | – | – | – |")
    print("target: " + ("PASS" if all(verdicts) else "FAIL"))


if __name__ == "__main__":
    main()
