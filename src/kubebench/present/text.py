"""Text that reaches the terminal: made safe, and formatted to be read.

Names, parameters, failure reasons and metric names come from specs, workloads and shared stores,
so they may hold terminal escape sequences (ESC [ … m colours, ESC ] 0; … window titles, OSC 52
clipboard writes) or bidi overrides (U+202E) that would restyle, spoof or reorder what is shown.
:func:`safe` makes them visible instead, and :func:`cell` also keeps rich from reading ``[red]``
in such a string as markup. Every string of workload or user origin printed by the CLI goes
through one of the two.
"""

from __future__ import annotations

import re

from rich.text import Text

#: C0 and C1 control characters except tab and newline, DEL, and the bidi embeddings, overrides and
#: isolates (U+202A–U+202E, U+2066–U+2069): what a terminal acts on instead of showing.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(value: object) -> str:
    """``str(value)`` with control characters shown as ``\\x1b``-style escapes (tab and newline kept)."""
    return _UNSAFE.sub(_escape, "" if value is None else str(value))


def safe_line(value: object) -> str:
    """:func:`safe`, and newlines and tabs shown as ``\\n`` / ``\\t``: for text that must stay on one line."""
    return safe(value).replace("\n", "\\n").replace("\t", "\\t")


def cell(value: object, style: str = "") -> Text:
    """A table cell or console line of untrusted text: made :func:`safe`, never read as rich markup."""
    return Text(safe(value), style=style)
