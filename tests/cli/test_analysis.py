"""`kubebench compare`, `scaling` and `overhead` on experiments of a noisy synthetic workload."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubebench.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

# Throughput 100 × speed × size × √workers with 2% noise, seeded by the run id so the test is deterministic.
NOISY = """
name: noisy
job:
  command: [python, -m, kubebench.workloads.synthetic, noisy, --metric, throughput,
            --mean, "{{ 100 * speed * size * workers ** 0.5 }}", --noise, 0.02]
parameters:
  size: [1, 2]
  speed: SPEED
  workers: 1
repeats: 10
metrics:
  - {name: throughput, goal: maximize, primary: true}
"""


def run_noisy(write, exp_id: str, speed: float, workers: str = "1", repeats: int = 10) -> None:
    spec = write(f"{exp_id}.yaml", NOISY.replace("SPEED", str(speed)).replace("workers: 1", f"workers: {workers}")
                 .replace("repeats: 10", f"repeats: {repeats}"))
    result = runner.invoke(app, ["run", str(spec), "--id", exp_id])
    assert result.exit_code == 0, result.output


def compare_json(base: str, candidate: str, *extra: str):
    result = runner.invoke(app, ["compare", base, candidate, "--format", "json", *extra])
    assert result.stdout.startswith("["), result.output
    return result, json.loads(result.stdout)


@pytest.mark.slow
def test_a_5_percent_slower_candidate_regresses_and_fails_the_gate(home: Path, write) -> None:
    run_noisy(write, "base", 1.0)
    run_noisy(write, "same", 1.0)
    run_noisy(write, "slower", 0.95)

    result, rows = compare_json("base", "slower")
    assert result.exit_code == 0
    assert [r["verdict"] for r in rows] == ["regressed", "regressed"]
    assert [r["params"]["size"] for r in rows] == [1, 2]
    for row in rows:
        assert row["metric"] == "throughput"
        assert 0.93 < row["ratio"] < 0.97
        assert row["ratio_ci"][0] < row["ratio"] < row["ratio_ci"][1]
        assert row["p_value"] < 0.05
        assert row["base"]["n"] == row["candidate"]["n"] == 10

    gate, _ = compare_json("base", "slower", "--fail-on", "throughput:-3%")
    assert gate.exit_code == 1
    loose, _ = compare_json("base", "slower", "--fail-on", "throughput:-10%")
    assert loose.exit_code == 0

    equal, rows = compare_json("base", "same", "--fail-on", "throughput:-3%")
    assert equal.exit_code == 0
    # Equal experiments are never "regressed"; "unchanged" needs the whole CI within ±2%, which 10 runs
    # at 2% noise rarely give: then "inconclusive", with the reason.
    assert {r["verdict"] for r in rows} <= {"unchanged", "inconclusive"}
    assert all(r["reason"] for r in rows)

    improved, rows = compare_json("slower", "base")
    assert [r["verdict"] for r in rows] == ["improved", "improved"]

    table = runner.invoke(app, ["compare", "base", "slower"])
    assert table.exit_code == 0 and "regressed" in table.output
    assert "base: speed=1.0 · candidate: speed=0.95" in table.output and "fixed: workers=1" in table.output

    overhead = runner.invoke(app, ["overhead", "base", "slower"])
    assert overhead.exit_code == 0
    assert len(re.findall(r"  \+[456]\.\d% ± ", overhead.output)) == 2


def test_scaling_efficiency_of_a_workers_sweep(home: Path, write) -> None:
    spec = write("scale.yaml", NOISY.replace("SPEED", "1").replace("workers: 1", "workers: [1, 2, 4]")
                 .replace("size: [1, 2]", "size: 1").replace("repeats: 10", "repeats: 4"))
    assert runner.invoke(app, ["run", str(spec), "--id", "scale"]).exit_code == 0
    result = runner.invoke(app, ["scaling", "scale"])
    assert result.exit_code == 0, result.output
    assert "fixed: size=1, speed=1" in result.output
    lines = [line.split() for line in result.output.splitlines() if line.split()[:1] in (["1"], ["2"], ["4"])]
    assert [line[0] for line in lines] == ["1", "2", "4"]
    # throughput ∝ √N, so efficiency is √N / N: 100%, ~71%, ~50%.
    efficiency = [float(line[3].rstrip("%")) for line in lines]
    assert efficiency[0] == 100.0
    assert efficiency[1] == pytest.approx(70.7, abs=3)
    assert efficiency[2] == pytest.approx(50.0, abs=3)


def test_analysis_errors_are_clear(home: Path, write) -> None:
    run_noisy(write, "one", 1.0, repeats=2)
    assert "no experiment 'nope'" in runner.invoke(app, ["compare", "one", "nope"]).output
    runner.invoke(app, ["run", str(write("p.yaml", "name: p\njob: {command: [python, -c, 'import kubebench; kubebench.report(t=1)']}\nmetrics: [{name: t}]\n")), "--id", "plain"])
    missing = runner.invoke(app, ["scaling", "plain"])
    assert missing.exit_code == 2 and "no swept parameter holds a number of workers" in missing.output
    named = runner.invoke(app, ["scaling", "plain", "--workers-param", "workers"])
    assert named.exit_code == 2 and "parameter 'workers' is not swept" in named.output
    bad_gate = runner.invoke(app, ["compare", "one", "one", "--fail-on", "throughput"])
    assert bad_gate.exit_code == 2 and "expected METRIC:-N%" in bad_gate.output


def test_compare_warns_when_environments_differ(home: Path, write) -> None:
    from sqlalchemy import insert, update

    from kubebench.settings import settings
    from kubebench.store import schema
    from kubebench.store.store import open_store

    run_noisy(write, "env-a", 1.0, repeats=3)
    run_noisy(write, "env-b", 1.0, repeats=3)
    quiet = runner.invoke(app, ["compare", "env-a", "env-b"])
    assert quiet.exit_code == 0 and "environments differ" not in quiet.output
    store = open_store(settings().store_url)
    data, _ = store.environments("env-b")[0]
    other = {**data, "python": "3.99.0"}
    with store.engine.begin() as conn:
        conn.execute(insert(schema.provenance).values(id="other-env", data=other, created_at=0.0))
        conn.execute(update(schema.runs).where(schema.runs.c.experiment_id == "env-b").values(provenance_id="other-env"))
    warned = runner.invoke(app, ["compare", "env-a", "env-b"])
    assert warned.exit_code == 0
    assert "warning: environments differ: python:" in warned.output and "3.99.0" in warned.output


# A deterministic workload: throughput 100 × size; with `broken: 1` every run of size 2 fails.
GATED = """
name: gated
job:
  command: [python, -c, "import sys, kubebench; sys.exit(3) if {{ broken }} and {{ size }} == 2 else kubebench.report(throughput=100.0 * {{ size }})"]
parameters:
  size: SIZES
  broken: BROKEN
repeats: 2
metrics:
  - {name: throughput, unit: images/s, primary: true}
"""


def run_gated(write, exp_id: str, sizes: str = "[1, 2]", broken: int = 0) -> None:
    spec = write(f"{exp_id}.yaml", GATED.replace("SIZES", sizes).replace("BROKEN", str(broken)))
    result = runner.invoke(app, ["run", str(spec), "--id", exp_id])
    assert result.exit_code == (1 if broken else 0), result.output


def test_the_gate_fails_when_the_candidate_lacks_a_trial_or_all_its_runs_failed(home: Path, write) -> None:
    run_gated(write, "g-base")
    run_gated(write, "g-same")
    run_gated(write, "g-fewer", sizes="1")
    run_gated(write, "g-broken", broken=1)

    same = runner.invoke(app, ["compare", "g-base", "g-same", "--fail-on", "throughput:-3%"])
    assert same.exit_code == 0, same.output

    fewer = runner.invoke(app, ["compare", "g-base", "g-fewer", "--fail-on", "throughput:-3%"])
    assert fewer.exit_code == 1, fewer.output
    assert "gate throughput:-3% failed" in fewer.output and "size=2: the trial is missing from the candidate" in fewer.output
    _, rows = compare_json("g-base", "g-fewer")
    assert [(r["params"]["size"], r["missing"], r["verdict"]) for r in rows] == [(1, False, "unchanged"),
                                                                                (2, True, "inconclusive")]

    broken = runner.invoke(app, ["compare", "g-base", "g-broken", "--fail-on", "throughput:-3%"])
    assert broken.exit_code == 1, broken.output
    assert "size=2: every candidate run of the trial failed (2)" in broken.output
    assert "base: broken=0 · candidate: broken=1" in broken.output  # what differs is shown
    assert runner.invoke(app, ["compare", "g-base", "g-broken"]).exit_code == 0  # no gate: a report only


def test_unknown_metrics_are_usage_errors_that_name_the_metrics(home: Path, write, tmp_path: Path) -> None:
    run_gated(write, "m-base")
    for args in (["compare", "m-base", "m-base", "--metric", "nope"],
                 ["compare", "m-base", "m-base", "--fail-on", "nope:-3%"],
                 ["report", "m-base", "--metric", "nope", "-o", str(tmp_path / "r.html")],
                 ["results", "m-base", "--metric", "nope"],
                 ["scaling", "m-base", "--metric", "nope", "--workers-param", "size"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert "no run has a metric 'nope'; metrics: throughput" in result.output, args
    assert not (tmp_path / "r.html").exists()


BANNER = """
name: banner
job:
  command: [python, -c, "import kubebench; print('cnn: world_size={{ workers }}, threads={{ 3 - workers }}', flush=True); kubebench.report(ips=100.0 * {{ workers }} ** 1.5)"]
parameters:
  workers: [1, 2]
repeats: 2
metrics:
  - {name: ips, unit: images/s}
"""


def test_scaling_shows_the_threads_per_replica_and_warns_when_they_differ_or_efficiency_passes_100(
        home: Path, write) -> None:
    assert runner.invoke(app, ["run", str(write("banner.yaml", BANNER)), "--id", "banner"]).exit_code == 0
    result = runner.invoke(app, ["scaling", "banner"])
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert [(r[0], r[1]) for r in rows] == [("1", "2"), ("2", "1")]  # workers, threads from the banner
    text = " ".join(result.output.split())
    assert "warning: efficiency 141% at 2 workers is above 100% (superlinear)" in text
    assert "warning: the threads per replica differ between worker counts" in text

    fixed = write("threads.yaml", BANNER.replace("{{ 3 - workers }}", "{{ threads }}")
                  .replace("workers: [1, 2]", "workers: [1, 2]\n  threads: 1"))
    assert runner.invoke(app, ["run", str(fixed), "--id", "threads"]).exit_code == 0
    result = runner.invoke(app, ["scaling", "threads"])
    assert "fixed: threads=1" in result.output and "threads per replica differ" not in result.output
    assert [line.split()[1] for line in result.output.splitlines() if line.split()[:1] in (["1"], ["2"])] == ["1", "1"]


def test_three_runs_a_side_fail_compare_s_and_check_s_gates(home: Path) -> None:
    # UX review 2026-12-02 #1: ratio 0.904 [0.898–0.905] with 3 runs a side read "inconclusive" and both gates exited 0
    from kubebench.settings import settings
    from kubebench.store.store import open_store
    from kubebench.testing.series import store_experiment

    store = open_store(settings().store_url)
    base = [866_200.0, 868_900.0, 864_100.0]
    store_experiment(store, "nightly-1-2", "nightly", {"ops_per_sec": [base]}, created_at=1.0)
    store_experiment(store, "nightly-1-3", "nightly", {"ops_per_sec": [[v * 0.904 for v in base]]}, created_at=2.0)
    gated = runner.invoke(app, ["compare", "nightly-1-2", "nightly-1-3", "--fail-on", "ops_per_sec:-3%"])
    assert gated.exit_code == 1, gated.output
    assert "regressed" in gated.stdout and "gate ops_per_sec:-3% failed" in gated.stderr
    checked = runner.invoke(app, ["check", "nightly-1-2", "nightly-1-3"])
    assert checked.exit_code == 1 and checked.stderr.startswith("FAIL: 1 regression beyond threshold")
