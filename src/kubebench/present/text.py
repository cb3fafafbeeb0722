"""Text that reaches the terminal: made safe, and formatted to be read.

Names, parameters, failure reasons and metric names come from specs, workloads and shared stores,
so they may hold terminal escape sequences (ESC [ … m colours, ESC ] 0; … window titles, OSC 52
clipboard writes) or bidi overrides (U+202E) that would restyle, spoof or reorder what is shown.
:func:`safe` makes them visible instead, and :func:`cell` also keeps rich from reading ``[red]``
in such a string as markup. Every string of workload or user origin printed by the CLI goes
through one of the two.

:class:`SafeConsole` is the one console the CLI prints with (``cli.make_console``): it reads no
string as markup or emoji codes, and what it writes holds nothing a terminal acts on, whatever a
presenter forgot to pass through :func:`cell` — a rule of the output path, not of each command.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
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


def _code_point(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


#: What Markdown reads as syntax inside a line: emphasis, code, links, HTML (``<!--`` hides the rest of
#: a page), table pipes, strikethrough, entities, GitHub's math, headings, images.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>|~&$#!])")
_LINE_BREAKS = re.compile("[\r\n\t\u2028\u2029\x0b\x0c\x85]+")


def markdown_text(value: object) -> str:
    """Text of any origin inside one line of Markdown (a table cell, a heading): line breaks made spaces,
    Markdown's syntax characters backslash-escaped, and what a terminal acts on written as ``\\u001b``.
    It renders as the text it was, and the summary's structure stays ours (``check``'s summary goes to
    CI pages, where a parameter with a newline and ``<!--`` could otherwise hide every row after it)."""
    text = _LINE_BREAKS.sub(" ", "" if value is None else str(value))
    return _UNSAFE.sub(_code_point, _MARKDOWN.sub(r"\\\1", text))


#: Characters XML 1.0 does not allow (C0 but tab, newline and CR; lone surrogates; U+FFFE/U+FFFF), and
#: the rest of what a terminal acts on (a CI log or viewer may print the report's text).
_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def xml_text(value: object) -> str:
    """Text of any origin for an XML attribute or element (JUnit): what XML 1.0 forbids, and control
    characters, written as ``\\u001b``, so that the file stays well-formed."""
    return _XML.sub(_code_point, "" if value is None else str(value))


#: What makes a spreadsheet read a cell as a formula when it starts the cell (OWASP's list, and the
#: full-width forms some spreadsheets also take).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: A cell that is a number (``-3``, ``+1.5e-3``): a spreadsheet reads it as that number, never a formula.
_NUMBER = re.compile(r"[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")


def csv_cell(value: object) -> object:
    """A CSV cell of any origin, safe to open in a spreadsheet: numbers stay numbers (``-3`` is the
    number −3), text that would start a formula (``=HYPERLINK(…)``, ``@SUM(…)``, ``-2+3``) gets a leading
    ``'``, as spreadsheet exports do, and what a terminal acts on is shown escaped (:func:`safe`)."""
    if value is None:
        return ""
    if isinstance(value, int) or isinstance(value, float) and math.isfinite(value):  # bool too: True/False
        return value  # "-inf" is not a number to a spreadsheet: it is text below, and gets its "'"
    text = safe(value)
    if text.startswith(FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def cell(value: object, style: str = "") -> Text:
    """A table cell or console line of untrusted text: made :func:`safe`, never read as rich markup."""
    return Text(safe(value), style=style)


class SafeConsole(Console):
    """Rich's console for text of any origin. A string (printed, or a table's cell, title or caption)
    is made :func:`safe` and is never read as markup (``[red]``) or emoji codes (``:warning:``);
    styles are given as ``style=`` or as :class:`~rich.text.Text` spans. Every segment written is made
    safe too, so a ``Text`` built from raw text cannot carry ESC either."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**{**kwargs, "markup": False, "emoji": False})

    def render_str(self, text: str, **kwargs: Any) -> Text:
        """``text`` made safe, as plain text (the ``markup`` and ``emoji`` arguments are ignored)."""
        return super().render_str(safe(text), **{**kwargs, "markup": False, "emoji": False})

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        """Rich's segments, each one's text made safe (cursor and screen controls of rich's own
        live displays, which carry no text of ours, are kept)."""
        for segment in super().render(renderable, options):
            if segment.control is None and _UNSAFE.search(segment.text):
                yield Segment(safe(segment.text), segment.style)
            else:
                yield segment
