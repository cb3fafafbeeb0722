"""The JPEG example's data-wait fraction at 0, 1 and 2 DataLoader workers: ``examples/jpeg-loader``
run by kubebench itself (its prepare step makes the JPEGs once; the runs alternate the worker counts
round by round), then each trial's median ``data_wait_fraction`` and ``images_per_sec`` read back
from the store, with the data step's time, recorded apart from the runs'.

    .venv/bin/python bench/data_loader.py [--repeats 5] [--images 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import load_line

from kubebench.settings import settings
from kubebench.store.store import open_store

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "jpeg-loader" / "benchmark.yaml"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--images", type=int, default=2000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "KUBEBENCH_HOME": home}
        done = subprocess.run([sys.executable, "-m", "kubebench", "run", str(EXAMPLE), "--id", "jpeg",
                               "--repeats", str(a.repeats), "--set", f"images={a.images}"], env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(done.stdout + done.stderr)
        db = open_store(settings(home=home).store_url)
        runs = [r for r in db.runs("jpeg") if r.status == "succeeded"]
        [data] = db.data("jpeg")
        record = db.experiment("jpeg")
    print(f"dataset {data.name}: {data.files:,} JPEGs, {data.bytes / 1e6:.1f} MB, prepared in {data.seconds:.1f} s "
          f"(data step {record.data_prepare_seconds:.1f} s, before the runs)")
    print("loader workers   data_wait_fraction (median, runs)   images/s (median)   data wait p50")
    for workers in sorted({int(r.params["loader_workers"]) for r in runs}):  # type: ignore[call-overload]
        mine = [r for r in runs if int(r.params["loader_workers"]) == workers]  # type: ignore[call-overload]
        fractions = sorted(r.metrics["data_wait_fraction"] for r in mine)
        print(f"{workers:>14}   {statistics.median(fractions):>8.3f}  ({', '.join(f'{f:.3f}' for f in fractions)})"
              f"   {statistics.median(r.metrics['images_per_sec'] for r in mine):>10.0f}"
              f"   {statistics.median(r.metrics['data_wait_p50'] for r in mine) * 1000:>8.1f} ms")
    print(load_line())


if __name__ == "__main__":
    main()
