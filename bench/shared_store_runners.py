"""Two runners on one shared PostgreSQL store, 20 times in a row beside a CPU hog (issue #27, N5).

Each round is the check of ``tests/security/test_shared_store.py`` (:mod:`kubebench.testing.shared_store`)
in a fresh database of one throwaway PostgreSQL server: runner A (one ``KUBEBENCH_HOME``) starts an
experiment of 6 runs; runner B (another home, as on another machine) is started while A runs and must
be refused; A is killed with its jobs mid-run; once A's lease (1 s) has expired B takes it over and
ends the experiment. A round passes when every run is stored succeeded once, each executed once
(the one A was killed in: redone once, never beside itself), B was refused and then took over.
Meanwhile ``--hogs`` processes ``yes > /dev/null`` keep CPUs busy, so that heartbeats, start-ups and
polls meet a loaded machine. Exit 0 when all rounds pass.

    .venv/bin/python bench/shared_store_runners.py [--rounds 20] [--hogs 1]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import load_line

from kubebench.testing.postgres import PostgresServer
from kubebench.testing.shared_store import check


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--hogs", type=int, default=1, help="processes of `yes > /dev/null` beside the runners")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kubebench-shared-"))
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.hogs)]
    passed, times = 0, []
    try:
        print(f"{args.rounds} rounds, {args.hogs} CPU hog(s) (`yes > /dev/null`); {load_line()}", flush=True)
        with PostgresServer() as server:
            for i in range(args.rounds):
                started = time.monotonic()
                outcome = check(server.create_database(f"round_{i}"), folder / f"round-{i}")
                times.append(time.monotonic() - started)
                ok = not outcome.problems
                passed += ok
                print(f"round {i + 1:2d}: {'pass' if ok else 'FAIL'} in {times[-1]:.1f} s; runs {outcome.statuses}, "
                      f"executions {sum(outcome.starts.values())} (killed mid-run: {outcome.killed_run or '-'}); "
                      f"{load_line()}", flush=True)
                for problem in outcome.problems:
                    print("    " + problem, flush=True)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    print(f"{passed}/{args.rounds} rounds passed in a row" if passed == args.rounds
          else f"{passed}/{args.rounds} rounds passed; runner folders kept in {folder}")
    if passed == args.rounds:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if passed == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
