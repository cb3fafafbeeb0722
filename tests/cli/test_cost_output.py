"""Cost in `kubebench results` and `compare`: the median cost per run and per item of runs priced by the
spec's ``prices:`` (issue #18), in tables that still fit the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.costs import priced_experiment
from typer.testing import CliRunner

from kubebench.cli import app


def invoke(*args: str, columns: int = 120):
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, list(args))


@pytest.fixture
def priced(home: Path) -> None:
    from kubebench.settings import settings
    from kubebench.store.store import open_store

    store = open_store(settings(None).store_url)
    priced_experiment(store, "priced-base")
    priced_experiment(store, "priced-cand", speed=2.0)
    priced_experiment(store, "unpriced", priced=False)


def rows(output: str) -> dict[str, list[str]]:
    """The cells of each trial row (batch → cells)."""
    return {line.split()[0]: line.split() for line in output.splitlines() if line.split()[:1] in (["8"], ["16"])}


@pytest.mark.parametrize("columns", (80, 120))
def test_results_show_the_median_cost_per_run_and_per_token(priced: None, columns: int) -> None:
    shown = invoke("results", "priced-base", columns=columns)
    assert shown.exit_code == 0, shown.output
    assert all(len(line) <= columns for line in shown.output.splitlines()), shown.output
    header = shown.output.split("───")[0]
    assert "$/run" in header and "$/M tokens" in header
    # batch 8: 0.36 $/h × 100, 110, 120 s; 1000 tokens/s → $0.1 per million; batch 16 twice as long, twice as fast
    assert rows(shown.output)["8"][-2:] == ["$0.0110", "$0.100"]
    assert rows(shown.output)["16"][-2:] == ["$0.0220", "$0.0500"]
    assert "cost_usd" not in shown.output and "usd_per_million_tokens" not in shown.output  # not "also measured"


def test_results_without_prices_have_no_cost_columns_and_an_asked_cost_is_not_shown_twice(priced: None) -> None:
    plain = invoke("results", "unpriced").output
    assert "$" not in plain
    asked = invoke("results", "priced-base", "-m", "cost_usd").output
    assert asked.count("cost_usd") == 1 and "$/run" not in asked and "$/M tokens" in asked


@pytest.mark.parametrize("columns", (80, 120))
def test_compare_prints_both_costs_and_the_price_ratio(priced: None, columns: int) -> None:
    compared = invoke("compare", "priced-base", "priced-cand", columns=columns)
    assert compared.exit_code == 0, compared.output
    assert all(len(line) <= columns for line in compared.output.splitlines()), compared.output
    # medians over the six runs: (0.012 + 0.02) / 2 per run for the base; the candidate runs twice as fast
    assert ("median cost per run: base $0.0160, candidate $0.00800 · $/M tokens candidate/base: 0.500"
            in " ".join(compared.output.split()))
    assert "median cost" not in invoke("compare", "priced-base", "unpriced").output
