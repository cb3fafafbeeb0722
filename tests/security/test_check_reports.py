"""N13 (review of 2026-12-02): ``check``'s Markdown summary and JUnit XML took what users wrote as it
was. A parameter ``"a\\n\\n**PASS** <!--"`` ended its table row and hid the rest of
``$GITHUB_STEP_SUMMARY``; a series name with a newline started a heading; a control character made the
JUnit file not well-formed XML, so that CI reporters dropped it. ``present.text.markdown_text`` and
``xml_text`` now write such text for each format."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from kubebench.cli import app
from kubebench.present.text import markdown_text, xml_text
from kubebench.store.store import open_store
from kubebench.testing.series import store_experiment

TEXT = st.lists(st.one_of(st.characters(), st.sampled_from(
    ["\n", "\r\n", "<!--", "-->", "|", "**", "`", "# ", "[x](javascript:1)", "<img src=x>", "\x1b[31m", "\\"]))
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_markdown_text_stays_one_line_of_plain_text(text: str) -> None:
    shown = markdown_text(text)
    assert "\n" not in shown and "\r" not in shown
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]", shown)
    # every character Markdown reads as syntax is escaped: none follows an even run of backslashes
    assert not re.search(r"(?<!\\)(\\\\)*[`*_\[\]<>|~&$#!]", shown)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_xml_text_is_always_well_formed(text: str) -> None:
    root = ET.Element("testcase", name=xml_text(text))
    ET.SubElement(root, "system-out").text = xml_text(text)
    ET.fromstring(ET.tostring(root, encoding="utf-8"))  # expat refuses what XML 1.0 forbids


@pytest.fixture
def spoofing(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Series ``"ju\\n# HEADING"``: a parameter that leaves its row and opens a comment, another with
    control characters; its newest experiment regresses."""
    url = f"sqlite:///{home / 'kb.db'}"
    monkeypatch.setenv("KUBEBENCH_STORE", url)
    store = open_store(url)
    for i in range(6):
        level = 100.0 if i < 5 else 70.0
        store_experiment(store, f"j-{i}", "junit", {"x": [[level, level * 1.01, level * 0.99]] * 3},
                         [{"p": "a\n\n**PASS** <!--"}, {"p": "\x1b[31mred\x0c\x01"}, {"p": "ok | x"}],
                         created_at=1e9 + i * 100, series="ju\n# HEADING")
    store.engine.dispose()
    return home


def test_the_summary_keeps_its_structure_and_the_junit_file_is_well_formed(spoofing: Path, tmp_path: Path) -> None:
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    result = CliRunner().invoke(app, ["check", "j-5", "--metric", "x", "--junit", str(junit), "--summary", str(summary)])
    assert result.exit_code == 1, result.output
    lines = summary.read_text().splitlines()
    assert lines[0] == "### kubebench check: ju \\# HEADING · j-5"  # one heading, ours
    assert [line for line in lines if line.startswith("#")] == lines[:1]
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 2 * (2 + 3)  # failing tests, then all tests: a header, a rule and 3 rows each
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 10 for row in rows)  # 9 cells each: no pipe added
    assert "<!--" not in summary.read_text() and summary.read_text().rstrip().endswith("</details>")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("name") == "ju\n# HEADING · j-5" and suite.get("failures") == "3"
    names = sorted(case.get("name") for case in suite.iter("testcase"))
    assert "x[p=\\u001b[31mred\\u000c\\u0001]" in names
