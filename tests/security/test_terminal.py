"""Finding 6: names, parameters, reasons and result.json keys reached the terminal with ESC intact
(window titles, OSC 52 clipboard writes, clear-screen). The CLI prints every such string through
``present.text`` (end to end, with the review's payloads: tests/cli/test_output.py
::test_escape_sequences_are_shown_never_sent_to_the_terminal); here, the rule itself over any text."""

from __future__ import annotations

import re

from hypothesis import given, strategies as st

from kubebench.present.text import cell, safe, safe_line

# What a terminal acts on instead of showing: C0 (but tab and newline), DEL, C1, bidi controls.
ACTS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
TEXT = st.text(st.one_of(st.characters(max_codepoint=0x2100), st.sampled_from("\x1b\x07\x9b\u202e\u2066")))


@given(TEXT)
def test_nothing_a_terminal_acts_on_is_printed(text: str) -> None:
    shown = safe(text)
    assert not ACTS.search(shown)
    assert not ACTS.search(safe_line(text)) and "\n" not in safe_line(text)
    assert not ACTS.search(cell(text).plain) and cell(text).spans == []  # no markup read from it


@given(TEXT)
def test_text_a_terminal_only_shows_is_printed_unchanged(text: str) -> None:
    plain = ACTS.sub("", text)
    assert safe(plain) == plain


def test_the_reviewed_payloads_are_shown_escaped() -> None:
    assert safe("fail\x1b[31mRED\x1b[0m\x1b]0;TITLE\x07 \u202eevil") == (
        "fail\\x1b[31mRED\\x1b[0m\\x1b]0;TITLE\\x07 \\u202eevil")
    assert safe("\x1b]52;c;ZXZpbA==\x07\x9b2J") == "\\x1b]52;c;ZXZpbA==\\x07\\x9b2J"
