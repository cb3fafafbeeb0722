"""`kubebench history` and `history accept` over a stored series; `run --label` on a real run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

runner = CliRunner(env={"COLUMNS": "200"})


def seeded_series(url: str, points: int = 30, step_at: int = 15, step: float = -0.04, seed: int = 1) -> None:
    """``bench``: trials bs=8 and bs=16, 5 runs each at CV 2%; bs=8 steps by ``step`` at ``step_at``."""
    rng = np.random.default_rng(seed)
    store = open_store(url)
    for i in range(points):
        level8 = 1000 * (1 + step) if i >= step_at else 1000.0
        values = [(level8 * (1 + 0.02 * rng.standard_normal(5))).tolist(),
                  (2000 * (1 + 0.02 * rng.standard_normal(5))).tolist()]
        latency = [(10 * (1 + 0.02 * rng.standard_normal(5))).tolist() for _ in range(2)]
        store_experiment(store, f"e{i:02d}", "bench", {"ips": values, "latency_ms": latency},
                         params=[{"bs": 8}, {"bs": 16}], created_at=1_000_000.0 + 3600 * i,
                         labels={"commit": f"c{i:02d}"}, goals={"latency_ms": "minimize"})
    store.engine.dispose()


@pytest.fixture
def series_url(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{home / 'kb.db'}"
    monkeypatch.setenv("KUBEBENCH_STORE", url)
    seeded_series(url)
    return url


def history_json(*args: str) -> dict:
    result = runner.invoke(app, ["history", *args, "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_history_finds_the_step_of_one_trial_with_its_labels(series_url: str) -> None:
    found = history_json("bench")
    assert found["series"] == "bench"
    by_bs = {t["params"]["bs"]: t for t in found["trials"]}
    assert len(by_bs[8]["points"]) == len(by_bs[16]["points"]) == 30
    assert by_bs[16]["changes"] == []
    [change] = by_bs[8]["changes"]
    assert change["experiment"] in ("e14", "e15", "e16") and change["verdict"] == "regressed"
    assert -0.055 < change["change"] < -0.025 and change["change_ci"][0] < change["change"] < change["change_ci"][1]
    assert change["between"].startswith("commit c") and " → " in change["between"]
    assert change["p_value"] < 0.01 and change["text"].startswith("between commit")
    point = by_bs[8]["points"][0]
    assert point["experiment"] == "e00" and point["n"] == 5 and point["labels"] == {"commit": "c00"}
    assert point["ci_low"] < point["mean"] < point["ci_high"]


def test_history_table_csv_trial_filter_and_since(series_url: str) -> None:
    table = runner.invoke(app, ["history", "bench", "--trial", "bs=8", "--last", "5"])
    assert table.exit_code == 0, table.output
    assert "bs=8" in table.output and "bs=16" not in table.output
    assert "… 25 earlier" in table.output and "regressed" in table.output and "between commit" in table.output
    csv = runner.invoke(app, ["history", "bench", "-f", "csv", "--metric", "latency_ms"])
    lines = csv.stdout.splitlines()
    assert lines[0].startswith("params,metric,experiment") and len(lines) == 1 + 60
    recent = history_json("bench", "--since", "1970-01-13T00:00+00:00")
    assert [len(t["points"]) for t in recent["trials"]] == [19, 19]
    by_experiment = history_json("e03")  # an experiment id names its series
    assert by_experiment["series"] == "bench"


def test_an_accepted_change_is_shown_as_accepted_and_later_measured_from(series_url: str) -> None:
    first = history_json("bench", "--trial", "bs=8")["trials"][0]["changes"][0]["experiment"]
    done = runner.invoke(app, ["history", "accept", "bench", "--at", first, "--note", "smaller batches"])
    assert done.exit_code == 0 and "accepted" in done.output
    [change] = history_json("bench", "--trial", "bs=8")["trials"][0]["changes"]
    assert (change["experiment"], change["accepted"], change["note"]) == (first, True, "smaller batches")
    assert "accepted: smaller batches" in change["text"]


@pytest.mark.parametrize("args, message", [
    (["history", "nope"], "no series or experiment 'nope'"),
    (["history", "bench", "--since", "yesterday"], "invalid --since"),
    (["history", "bench", "--trial", "bs"], "invalid --trial"),
    (["history", "bench", "--trial", "bs=3"], "no values of 'ips' for trials bs=3"),
    (["history", "accept", "bench", "--at", "e99"], "no experiment 'e99'"),
])
def test_bad_input_is_one_clear_error(series_url: str, args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2 or (result.exit_code != 0 and "no " in message), result.output
    assert message in result.output and "Traceback" not in result.output


def test_run_labels_the_experiment(home: Path, write) -> None:
    spec = write("s.yaml", """
        name: labelled
        series: nightly
        job:
          command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, ips, --mean, "100", --noise, "0.01"]
        repeats: 2
        metrics: [{name: ips, primary: true}]
        """)
    result = runner.invoke(app, ["run", str(spec), "--id", "lab-1", "--label", "version=1.4.2", "--label", "commit=abc123"])
    assert result.exit_code == 0, result.output
    store = open_store(f"sqlite:///{home / 'kubebench.db'}") if (home / "kubebench.db").exists() else None
    from kubebench.settings import settings

    store = store or open_store(settings().store_url)
    record = store.experiment("lab-1")
    assert (record.series, record.labels) == ("nightly", {"version": "1.4.2", "commit": "abc123"})
    bad = runner.invoke(app, ["run", str(spec), "--label", "version"])
    assert bad.exit_code == 2 and "invalid --label 'version'" in bad.output
