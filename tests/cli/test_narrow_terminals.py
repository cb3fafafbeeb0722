"""The CLI at 80 and 200 columns, on the experiments the 2026-12-02 UX review used (tests/support/ux_home.py):
the column that tells trials apart is never dropped, ids are never folded, numbers carry SI prefixes and
units on every command (review findings 4, 5, 18, 19, 21, 22, 28)."""

from __future__ import annotations

import pytest
from support import ux_home
from typer.testing import CliRunner

from kubebench.cli import app

WIDTHS = (80, 200)


@pytest.fixture(scope="module")
def store_url(tmp_path_factory) -> str:
    from kubebench.store.store import open_store

    url = f"sqlite:///{tmp_path_factory.mktemp('ux') / 'kb.db'}"
    store = open_store(url)
    ux_home.build(store)
    store.engine.dispose()
    return url


def invoke(url: str, columns: int, *args: str):
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(app, [*args, "--store", url])
    assert result.exit_code in (0, 1), result.output
    too_long = [line for line in result.output.splitlines() if len(line.rstrip()) > columns]
    assert not too_long, too_long
    return result.output


@pytest.mark.parametrize("columns", WIDTHS)
def test_results_never_drop_the_swept_parameter(store_url: str, columns: int) -> None:
    """#4: at 80 columns the `target_qps` column was dropped and the CI cut to `±4…`."""
    out = invoke(store_url, columns, "results", ux_home.INFERENCE)
    assert "…" not in out.replace(", …", "")  # nothing cut (the "also measured" list ends in ", …")
    if columns == 80:  # one block per trial, headed by what tells the trials apart
        lines = out.splitlines()
        first, second = lines.index("target_qps=80"), lines.index("target_qps=400")
        assert "969 µs" in lines[first + 1] and "95% CI ±43.0%" in lines[first + 1]
        assert "samples_per_sec" in lines[first + 3] and "5.78 k samples/s" in lines[first + 3]
        assert "494 µs" in lines[second + 1]
    else:
        header, rows = out.split("───")[0], out.split("───")[-1]
        assert "target_qps" in header and "latency_p90" in header
        assert [line.split()[0] for line in rows.strip().splitlines()[1:3]] == ["80", "400"]
    assert "results of ux-inference-1: 2 trials × 2 runs" in out


@pytest.mark.parametrize("columns", WIDTHS)
def test_history_writes_si_numbers_with_the_unit_and_keeps_the_trial(store_url: str, columns: int) -> None:
    """#5: `history` printed `8.662e+05` and `3.397e+06 … 3.401e+06`."""
    out = invoke(store_url, columns, "history", "nightly", "--last", "2")
    assert "e+0" not in out and "e-0" not in out and "ops/s" in out
    trial = out.split("n=20000", 1)[1].split("n=80000")[0]
    assert "3.09 M" in trial and "3.08 … 3.11 M" in trial and "nightly-15" in trial and "▼−9.1%@nightly-13" in trial
    points = out.split("nightly · ops_per_sec · n=20000")[1]
    assert "version=1.5 commit=c15" in points and "3.09 M" in points


LLM_TRAIN = """\
name: llm-train
job: {command: [python, -m, kubebench.workloads.llm_train]}
parameters:
  parallel: [ddp, fsdp]
  workers: [1, 2]
  threads: 1
exclude:
  - {parallel: fsdp, workers: 1}
repeats: 2
metrics: [{name: tokens_per_sec, unit: tokens/s, primary: true}]
"""


@pytest.mark.parametrize("columns", WIDTHS)
def test_scaling_refuses_an_efficiency_without_a_one_worker_baseline(tmp_path, columns: int) -> None:
    """#10: llm-train's fsdp, run at 2 workers only, read "speedup 1.000, efficiency 100.0%"."""
    from kubebench.store.store import open_store

    url = f"sqlite:///{tmp_path / 'kb.db'}"
    rate = {("ddp", 1): 1000.0, ("ddp", 2): 1800.0, ("fsdp", 2): 1500.0}
    ux_home.record(open_store(url), "train-1", LLM_TRAIN, lambda p, r: (
        "succeeded", {"tokens_per_sec": rate[(p["parallel"], p["workers"])] + r}))
    out = invoke(url, columns, "scaling", "train-1")
    rows = [line.split() for line in out.splitlines() if line.startswith(("ddp ", "fsdp "))]
    assert [r[:2] for r in rows] == [["ddp", "1"], ["ddp", "2"], ["fsdp", "2"]]
    assert "90%" in " ".join(rows[1]) and "100.0%" not in " ".join(rows[2]) and rows[2].count("–") >= 3
    text = " ".join(out.split())
    assert "no 1-worker baseline for parallel=fsdp: its efficiency is not measured" in text
    assert "parallel=ddp has one, but is another configuration" in text
