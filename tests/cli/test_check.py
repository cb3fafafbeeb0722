"""`kubebench check`: exit codes, Markdown summary ($GITHUB_STEP_SUMMARY), JUnit XML, accepted changes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

runner = CliRunner(env={"COLUMNS": "200"})


def add(url: str, exp_id: str, level: float, at: float, seed: int, runs: int = 8) -> None:
    """An experiment of 2 trials × 2 metrics; trial bs=8's ips at ``level`` (×1000), everything else flat."""
    rng = np.random.default_rng(seed)
    store = open_store(url)
    noisy = lambda mean: (mean * (1 + 0.01 * rng.standard_normal(runs))).tolist()  # noqa: E731
    store_experiment(store, exp_id, "bench", {"ips": [noisy(1000 * level), noisy(2000)],
                                              "latency_ms": [noisy(10), noisy(20)]},
                     params=[{"bs": 8}, {"bs": 16}], created_at=at, labels={"commit": exp_id},
                     goals={"latency_ms": "minimize"})
    store.engine.dispose()


@pytest.fixture
def url(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{home / 'kb.db'}"
    monkeypatch.setenv("KUBEBENCH_STORE", url)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for i in range(6):
        add(url, f"e{i}", 1.0, 1000.0 + i, seed=i)
    return url


def test_a_steady_candidate_passes_with_a_summary_and_junit(url: str, tmp_path: Path, monkeypatch) -> None:
    add(url, "new", 1.0, 2000.0, seed=99)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = runner.invoke(app, ["check", "bench", "--junit", str(tmp_path / "junit.xml"), "-f", "markdown"])
    assert result.exit_code == 0, result.output
    assert "**PASS: no regression beyond threshold" in result.stdout and "Holm (family-wise error rate)" in result.stdout
    assert "6 earlier experiments of series bench" in result.stdout  # plain text, escaped (N13)
    assert summary.read_text().startswith("earlier step\n### kubebench check: bench · new")
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "0")
    assert sorted(c.get("name") for c in suite.iter("testcase")) == [
        "ips[bs=16]", "ips[bs=8]", "latency_ms[bs=16]", "latency_ms[bs=8]"]


def test_a_regression_fails_with_exit_1_and_a_junit_failure(url: str, tmp_path: Path) -> None:
    add(url, "slow", 0.95, 2000.0, seed=98)
    result = runner.invoke(app, ["check", "bench", "--junit", str(tmp_path / "junit.xml"), "--correction", "bh",
                                 "-f", "markdown"])
    assert result.exit_code == 1, result.output
    assert "**FAIL: 1 regression beyond threshold" in result.stdout and "Benjamini–Hochberg" in result.stdout
    assert "| ❌ | `ips` | bs=8 |" in result.stdout
    [failure] = ET.parse(tmp_path / "junit.xml").getroot().iter("failure")
    assert failure.get("type") == "regression" and failure.get("message").startswith("regressed: −")
    # against one experiment of the series, and with an explicit base
    assert runner.invoke(app, ["check", "e0", "slow"]).exit_code == 1
    assert runner.invoke(app, ["check", "e0", "e1"]).exit_code == 0
    assert runner.invoke(app, ["check", "e3"]).exit_code == 0  # e3 against e0–e2
    # a large enough threshold lets a 5% loss pass
    assert runner.invoke(app, ["check", "bench", "--threshold", "0.08"]).exit_code == 0


def test_an_accepted_change_becomes_the_new_baseline(url: str) -> None:
    for i, exp_id in enumerate(("s1", "s2", "s3")):
        add(url, exp_id, 0.95, 2000.0 + i, seed=50 + i)
    assert runner.invoke(app, ["check", "bench"]).exit_code == 1  # s3 against e0–e5: the level before s1
    assert runner.invoke(app, ["history", "accept", "bench", "--at", "s1", "--note", "slower, safer"]).exit_code == 0
    result = runner.invoke(app, ["check", "bench"])
    assert result.exit_code == 0 and "2 earlier experiments" in result.stdout


def test_a_regression_keeps_failing_night_after_night_until_accepted_or_fixed(url: str) -> None:
    # UX review 2026-12-02 #2: the night after a step, the baseline window straddled it and check passed
    for night, exp_id in enumerate(("s1", "s2", "s3")):
        add(url, exp_id, 0.95, 2000.0 + night, seed=50 + night)
        result = runner.invoke(app, ["check", "bench", "-f", "markdown"])
        assert result.exit_code == 1, (exp_id, result.output)
        # a window of 3 held s3 against s1, s2 and e5, mostly the new level, and passed it
        assert runner.invoke(app, ["check", "bench", "--window", "3"]).exit_code == 1, exp_id
        if night == 2:
            assert ("earlier experiments of series bench; a trial with a change not accepted is measured against its "
                    "level before it (at s1: kubebench history accept bench --at s1 makes the change the new level)"
                    ) in result.stdout
    add(url, "fixed", 1.0, 2010.0, seed=60)  # back at the old level: passes
    assert runner.invoke(app, ["check", "bench"]).exit_code == 0
    add(url, "again", 0.95, 2011.0, seed=61)
    assert runner.invoke(app, ["check", "bench"]).exit_code == 1
    assert runner.invoke(app, ["history", "accept", "bench", "--at", "again"]).exit_code == 0
    assert runner.invoke(app, ["check", "bench"]).exit_code == 2  # nothing after the accepted change but itself


@pytest.mark.parametrize("columns", [80, 200])
def test_a_terminal_gets_a_table_and_markdown_only_when_asked(url: str, tmp_path: Path, monkeypatch, columns: int) -> None:
    """Review 2026-12-02 #19 and #5: no Markdown (`###`, `**`, `<details>`, pipes) or e-notation on a
    terminal; the trial named by what varies only (not the candidate's fixed parameters); SI numbers."""
    store = open_store(url)
    store_experiment(store, "slower", "bench", {"ips": [[950.0, 951, 949, 950, 952, 948, 950, 951], [2000.0] * 8],
                                                "latency_ms": [[10.0] * 8, [20.0] * 8]},
                     params=[{"bs": 8, "slow": 1.1}, {"bs": 16, "slow": 1.1}], created_at=3000.0,
                     goals={"latency_ms": "minimize"})
    store.engine.dispose()
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = CliRunner(env={"COLUMNS": str(columns)}).invoke(app, ["check", "e5", "slower"])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert not any(mark in out for mark in ("###", "**", "<details>", "|", "e+0", "🔴", "`")), out
    assert out.startswith("FAIL: 1 regression beyond threshold")
    (failing,) = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert "ips" in failing and re.search(r"\bbs=8\b", failing) and "slow=" not in out
    assert "996" in failing and "950" in failing and "−4.6%" in failing and "[−5.2%, −4.2%]" in failing  # the 90% CI
    assert len([line for line in out.splitlines() if line.startswith("unchanged ")]) == 3
    assert max(len(line) for line in out.splitlines()) <= columns
    # the Markdown went where CI reads it
    assert summary.read_text().startswith("### kubebench check: slower vs e5") and "| ❌ | `ips` | bs=8 |" in summary.read_text()
    markdown = CliRunner(env={"COLUMNS": str(columns)}).invoke(app, ["check", "e5", "slower", "-f", "markdown"])
    assert markdown.stdout.startswith("### kubebench check:") and "| 996 | 950 |" in markdown.stdout
    assert "| 9.95 ms | 10.0 ms |" in markdown.stdout  # the unit read from the metric's name (latency_ms)


@pytest.mark.parametrize("args, message", [
    (["check", "nope"], "no series or experiment 'nope'"),
    (["check", "a", "b", "c"], "check takes NAME or BASE CANDIDATE"),
    (["check", "e0"], "is the first of series 'bench'"),
    (["check", "bench", "--metric", "nope"], "nothing to check"),
])
def test_bad_input_exits_2(url: str, args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
