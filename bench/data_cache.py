"""The cost of the data step when the dataset is already cached: a 10,000-file dataset made once by a
prepare step, then the whole data step of a second experiment timed (its cache key, the lock, the
check of the marker and of every file's size, the store's record), round after round.

    .venv/bin/python bench/data_cache.py [--files 10000] [--rounds 20]

Prints the median and the largest of the rounds, and the part of it that is the check of the files
(``DataCache.ready``). The issue's bound: under 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchlib import load_line

from kubebench.data.cache import DataCache
from kubebench.data.prepare import data_root, prepare_data
from kubebench.runner import make_backend, plan_experiment, record_experiment
from kubebench.settings import settings
from kubebench.spec.load import load_spec
from kubebench.store.store import open_store

MAKE = """
import os, sys
from pathlib import Path
root = Path(os.environ["KUBEBENCH_DATA_PATH"])
for i in range(int(sys.argv[1])):
    folder = root / f"class-{i % 100:03d}"
    folder.mkdir(exist_ok=True)
    (folder / f"{i:06d}.bin").write_bytes(os.urandom(64))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=20)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "make.py").write_text(MAKE)
        (base / "spec.yaml").write_text(textwrap.dedent(f"""
            name: cache-bench
            job: {{kind: Process, command: [python, -c, "pass"]}}
            data:
              prepare:
                - {{name: many, command: [python, make.py, "{a.files}"], timeout: 10m}}
            """))
        config = settings(home=base / "home")
        db = open_store(config.store_url)
        loaded = load_spec(base / "spec.yaml")
        backend = make_backend(loaded)
        started = time.monotonic()
        first = plan_experiment(loaded, config, "made")
        record_experiment(first, db)
        [made] = prepare_data(first, backend, db)
        print(f"prepared {made.files:,} files ({made.bytes:,} bytes) in {time.monotonic() - started:.1f} s")
        steps, checks = [], []
        cache = DataCache(data_root(first))
        for i in range(a.rounds):
            experiment = plan_experiment(loaded, config, f"again-{i}")
            record_experiment(experiment, db)
            t0 = time.perf_counter()
            [found] = prepare_data(experiment, backend, db)
            steps.append(time.perf_counter() - t0)
            assert not found.prepared, "the dataset was prepared again: the cache missed"
            t0 = time.perf_counter()
            assert cache.ready("many", made.key) is not None
            checks.append(time.perf_counter() - t0)
        backend.close()
    print(f"cached data step, {a.files:,} files, {a.rounds} rounds: median {statistics.median(steps) * 1000:.0f} ms, "
          f"max {max(steps) * 1000:.0f} ms; of which the check of the files: median "
          f"{statistics.median(checks) * 1000:.0f} ms")
    print(load_line())
    sys.exit(0 if max(steps) < 1.0 else 1)


if __name__ == "__main__":
    main()
