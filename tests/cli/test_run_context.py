"""What `kubebench run`, `show` and `experiments` tell at the end and where people look, on real runs
of tiny workloads (review 2026-12-02 findings 6, 8, 13, 15, 18, 21, 25, 31), at 80 and 200 columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ux_home
from typer.testing import CliRunner

from kubebench.cli import app

FAILING = """
name: crashes
job:
  command: [python, -c, "import sys, kubebench; print('loading'); n = {{ n }}; sys.exit('CUDA error: out of memory') if n == 2 else kubebench.report(v=1)"]
parameters: {n: [1, 2], model: small}
repeats: 1
metrics: [{name: v}]
"""

TYPO = """
name: typo
job:
  command: [python, -c, "import kubebench; kubebench.report(ops_per_sec={{ n }}, latency_p50=0.1)"]
parameters: {n: [1, 2, 3]}
repeats: 2
metrics: [{name: ops_per_seconds, primary: true}]
"""


def invoke(columns: int, *args: str):
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, list(args))


@pytest.mark.parametrize("columns", [80, 200])
def test_a_failed_run_ends_with_its_last_log_line_and_a_pointer_to_show(home: Path, write, columns: int) -> None:
    """#13: `run` ended with "worker-0 exited with code 1" and nothing else; #25: the progress line
    named the fixed parameters (model=small) of the run."""
    result = invoke(columns, "run", str(write("crash.yaml", FAILING)), "--id", "crash-1")
    assert result.exit_code == 1, result.output
    out = result.output
    progress = [line for line in out.splitlines() if line.startswith("✗ ")]
    assert progress == ["✗ n=2 (repeat 0): failed: worker-0 exited with code 1"]  # the swept parameter only
    assert "│ CUDA error: out of memory" in out  # the log's last line under it
    (bar,) = [line for line in out.splitlines() if " eta " in line]  # #25: the time left, and what differs
    assert bar.startswith("n=") and "model=small" not in bar and "2/2" in bar
    failures = out.split("failed runs")[1]
    assert "worker-0 exited with code 1" in failures and "CUDA error: out of memory" in failures
    assert "see: kubebench show crash-1" in out
    assert "model=small" not in out.split("failed runs")[0].split("fixed:")[0]


def test_a_spec_whose_first_runs_all_miss_a_declared_metric_stops_early(home: Path, write) -> None:
    """#13: a metric-name typo ran the whole sweep (here 6 runs), each failing the same way."""
    result = invoke(200, "run", str(write("typo.yaml", TYPO)), "--id", "typo-1")
    assert result.exit_code == 2, result.output
    assert "stopped after the first 3 runs of typo-1: each ended with metric 'ops_per_seconds' missing" in result.output
    assert "(they reported: latency_p50, ops_per_sec)" in result.output and "3 runs not started" in result.output
    runs = json.loads(invoke(200, "results", "typo-1", "-f", "json").output)
    assert sorted(r["status"] for r in runs) == ["failed"] * 3 + ["pending"] * 3
    shown = invoke(200, "show", "typo-1").output
    assert "state: interrupted" in shown and f"kubebench run {home.parent / 'typo.yaml'} --id typo-1" in shown


def test_a_run_refuses_a_label_given_twice(home: Path, write) -> None:
    """#31: `--label v=1 --label v=2` was accepted silently."""
    result = invoke(200, "run", str(write("crash.yaml", FAILING)), "--label", "v=1", "--label", "v=2")
    assert result.exit_code == 2 and "--label v given twice: v=1 and v=2" in result.output


@pytest.fixture(scope="module")
def ux_url(tmp_path_factory) -> str:
    from kubebench.store.series import set_note
    from kubebench.store.store import open_store

    url = f"sqlite:///{tmp_path_factory.mktemp('ux-run') / 'kb.db'}"
    store = open_store(url)
    ux_home.build(store)
    set_note(store, "nightly-13", note="the new allocator", tags=["nightly", "gpu"])
    ux_home.record(store, "renamed-1", ux_home.NIGHTLY_SPEC.format(slow=1.0).replace("name: nightly", "name: other"),
                   lambda params, repeat: ("succeeded", {"ops_per_sec": 1e6 + repeat, "latency_p50": 0.02}))
    ux_home.record(store, "half-1", ux_home.CNN_SPEC, lambda params, repeat: (
        ("succeeded", {"images_per_sec": 100.0}) if params["workers"] == 1 else ("pending", {})))
    store.engine.dispose()
    return url


@pytest.mark.parametrize("columns", [80, 200])
def test_experiments_is_one_line_each_with_state_labels_and_primary_metric(ux_url: str, columns: int) -> None:
    """#18: at 80 columns name and backend folded into stubs (`nam/e`), "failed" became `fai…`, and
    there was no state, labels or primary metric; #6: labels, note and tags nowhere but the history."""
    out = invoke(columns, "experiments", "--store", ux_url).output
    lines = out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= columns
    rows = {line.split()[0]: line for line in lines[3:]}
    assert set(rows) == {"half-1", "renamed-1", "nightly-15", "nightly-14", "nightly-13", "nightly-12", "nightly-11", "nightly-10",
                         ux_home.INFERENCE, ux_home.SERVING, ux_home.CNN}  # one line each
    assert "succeeded" in rows["nightly-13"] and "6/6" in rows["nightly-13"] and "version=1.3" in rows["nightly-13"]
    assert "interrupted" in rows["half-1"] and "4/8" in rows["half-1"]
    assert "…" not in "".join(rows) and "fai…" not in out
    if columns == 200:
        assert "3.09 M ops/s" in rows["nightly-13"] and "commit=c13" in rows["nightly-13"]
    listed = {e["id"]: e for e in json.loads(invoke(200, "experiments", "--store", ux_url, "-f", "json").output)}
    assert listed["nightly-13"]["labels"] == {"version": "1.3", "commit": "c13"}
    assert (listed["nightly-13"]["note"], listed["nightly-13"]["tags"]) == ("the new allocator", ["gpu", "nightly"])
    assert listed["half-1"]["state"] == "interrupted"


@pytest.mark.parametrize("columns", [80, 200])
def test_show_gives_labels_note_tags_and_the_resume_command(ux_url: str, columns: int) -> None:
    """#6 and #8: `show` had no labels, note or tags; an interrupted experiment read `pending`, and its
    resume hint could not be pasted."""
    shown = invoke(columns, "show", "nightly-13", "--store", ux_url).output
    assert "labels: version=1.3 commit=c13 · tags: #gpu #nightly" in shown
    assert "note: the new allocator" in shown and "state: succeeded" in shown
    half = invoke(columns, "show", "half-1", "--store", ux_url).output.splitlines()
    assert "state: interrupted" in half
    command = half[half.index("resume it (with the --params/--set it was started with):") + 1]
    assert command == "  kubebench run examples/pytorch-cnn/benchmark.yaml --id half-1"  # whole, on one line


def test_an_empty_home_lists_nothing_and_makes_no_store(tmp_path: Path) -> None:
    """#31: `experiments` on a new home created kubebench.db as a side effect."""
    url = f"sqlite:///{tmp_path / 'new' / 'kubebench.db'}"
    result = invoke(200, "experiments", "--store", url)
    assert result.exit_code == 0 and result.output.startswith("no experiments in")
    assert not (tmp_path / "new" / "kubebench.db").exists()


def test_compare_notes_when_the_experiments_are_of_different_benchmarks(ux_url: str) -> None:
    """#31: `compare` across different benchmarks (nightly vs mybench) went on without a note."""
    result = CliRunner().invoke(app, ["compare", "nightly-12", "renamed-1", "--store", ux_url])
    assert result.exit_code == 0, result.output
    assert "note: nightly-12 and renamed-1 are of different benchmarks (nightly and other)" in result.stderr
    assert "different benchmarks" not in CliRunner().invoke(app, ["compare", "nightly-11", "nightly-12",
                                                                  "--store", ux_url]).stderr


@pytest.mark.parametrize("columns", [80, 200])
def test_show_gives_the_capacity_search_s_answer(tmp_path: Path, columns: int) -> None:
    """#15: the capacity ("above range, meets at 32") was in the report and on the page, not in `run` or `show`."""
    ux_home.capacity_store(tmp_path).engine.dispose()
    shown = invoke(columns, "show", "web-serving-1", "--store", f"sqlite:///{tmp_path / 'kubebench.db'}").output
    lines = shown.splitlines()
    start = lines.index("capacity: highest rate with ttft_p99 ≤ 1")
    assert lines[start + 1].startswith("  batch=4: found") and "meets 4.00" in lines[start + 1]
    assert lines[start + 2].startswith("  batch=8: found") and "fails" in lines[start + 2]
